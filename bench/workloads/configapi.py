"""Config API: how long a get, a create and a delete take with N connectors in the cluster, and
how many creates a second one client, and the command topic, get through.

headrace as a user runs it, on a cluster of its own (its config service, its coordinator and one
worker, which follow every change as they would: the coordinator reads each create and assigns
its connector, the worker holds it), beside Kafka Connect distributed with one worker (its API
is the worker, whose herder does the same), on the same broker, one after the other so that
neither's JVM or interpreter competes with the other's calls, in A-B-B-A turns. Both are
started anew for each run, so both meet the clock equally cold. Every connector is created
STOPPED (``initial_state``, on both), so neither system starts it or moves data for it: what
is measured is the API and the config topic under it. The connectors are headrace's datagen
source and Connect's FileStreamSource, each validated by its plugin on every create, as a
user's would be.

Each run, for each system:

1. fills the cluster with N connectors, one create after another (``filling``: creates a second
   from 0 to N, reported because it is there to see);
2. times ``CALLS`` gets of connectors picked at random among the N, then ``CALLS`` creates of new
   ones, then the deletes of those, each call on its own: the median and p99 of each, in ms, and
   the creates a second (``CALLS`` over the wall time of the creates, one client, sequential).

headrace is measured twice, through its gRPC API (one channel, as its client keeps) and through
its REST API, which the same process serves in Connect's shape; both REST APIs are called by the
same client code (urllib, a connection a call), so headrace REST against Connect is the
apples-to-apples figure. A Connect worker answers 409 while its group rebalances, which a new
or deleted connector can set off: the client retries every ``RETRY_PAUSE_S``, as Connect's
clients are told to, and the wait counts in the call's time, since a user waits for it too; the
retries of the timed calls are counted (``answered 409``).

3. lists every connector with its status (``GET /connectors?expand=status``, as a console or
   Kafka UI asks for its page of connectors) ``LISTS`` times, on both REST APIs: the median, in
   ms, with the N connectors in the cluster.

4. (headrace only) writes N ``CreateConnector`` commands to ``<cluster>-requests`` in one burst
   and reads ``<cluster>-responses`` until every one is answered OK: the creates a second from
   the first write to the last answer read. The agent is warmed first (a ``ListConnectors``
   answered), so its group join is not in the figure. Connect has no command topic: its figure
   is set beside Connect's REST creates, what automation of Connect goes through.

N is 2,000, the issue's measure, and ``CALLS`` 200 of each kind; the smoke run 20 and 10. N is
not cut for Connect's sake: it fills 2,000 connectors at about 25 creates a second on two cores
(each a config-topic round trip and a rebalance of its one-member group), some 80 s, and a whole
run takes about five minutes.
"""

from __future__ import annotations

import asyncio
import json
import random
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Protocol

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from bench.connect import ConnectDistributed, rest_client
from bench.env import BenchEnv
from bench.harness import Measure
from headrace.clients.config import ConfigClient
from headrace.clients.connect import BlockingConnect
from headrace.config.automation import PARTITIONS
from headrace.core.settings import Settings
from headrace.core.storage.topics import ensure_topic
from headrace.local.kafka import free_port
from headrace.local.stack import Stack

CONNECTORS = 2_000
SMOKE_CONNECTORS = 20
CALLS = 200  # of each kind, per API: enough for a p99 that is not the single worst call
SMOKE_CALLS = 10
LISTS = 5
INITIAL_STATE = "STOPPED"
RETRY_PAUSE_S = 0.01  # between a 409 and the retry: short, so the client adds little
SEED = 20
COMMANDS_DEADLINE_S = 600.0
AGENT_READY_S = 120.0

HEADRACE_GRPC = "headrace gRPC"
HEADRACE_REST = "headrace REST"
CONNECT = "Kafka Connect distributed REST"
COMMAND_TOPIC = "headrace command topic"
APIS = (HEADRACE_GRPC, HEADRACE_REST, CONNECT)
CALL_KINDS = ("get", "create", "delete")
STATS = ("median", "p99")


def latency_figure(api: str, kind: str, stat: str) -> str:
    return f"{api} {kind} {stat}"


def rate_figure(api: str) -> str:
    return f"{api} creates, one client"


def fill_figure(api: str) -> str:
    return f"{api} creates filling 0 to N"


def retries_figure(api: str) -> str:
    return f"{api} calls answered 409 and retried, of 3 x calls"


def list_figure(api: str) -> str:
    return f"{api} list of N with status, median"


def commands_figure() -> str:
    return f"{COMMAND_TOPIC} creates, N in one burst"


class Api(Protocol):
    """The three calls measured, on one system's connectors."""

    def create(self, name: str) -> None: ...
    def get(self, name: str) -> None: ...
    def delete(self, name: str) -> None: ...


@dataclass
class Grpc:
    """headrace's gRPC API, through the client the CLI uses."""

    client: ConfigClient
    config: Callable[[str], dict[str, str]]

    def create(self, name: str) -> None:
        self.client.create(name, self.config(name), initial_state=INITIAL_STATE)

    def get(self, name: str) -> None:
        self.client.get(name)

    def delete(self, name: str) -> None:
        self.client.delete(name)


@dataclass
class Rest:
    """A REST API in Connect's shape on a loopback port: Connect's, or headrace's."""

    port: int
    config: Callable[[str], dict[str, str]]
    retries: int = 0  # calls answered 409 (a rebalance under way) and made again
    _client: BlockingConnect | None = None

    def call(self, method: str, path: str, body: object = None) -> object:
        if self._client is None:
            self._client = rest_client(
                self.port, retry_pause_s=RETRY_PAUSE_S, on_retry=self._retrying
            )
        return self._client.call(method, path, body)

    def _retrying(self) -> None:
        self.retries += 1

    def create(self, name: str) -> None:
        body = {"name": name, "config": self.config(name), "initial_state": INITIAL_STATE}
        self.call("POST", "/connectors", body)

    def get(self, name: str) -> None:
        self.call("GET", f"/connectors/{name}")

    def delete(self, name: str) -> None:
        self.call("DELETE", f"/connectors/{name}")

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


def datagen_config(name: str) -> dict[str, str]:
    return {"connector.class": "DatagenSource", "tasks.max": "1", "topic": f"configapi-{name}"}


def file_source_config(folder: Path) -> Callable[[str], dict[str, str]]:
    def config(name: str) -> dict[str, str]:
        return {
            "connector.class": "FileStreamSource",
            "tasks.max": "1",
            "file": str(folder / f"{name}.txt"),
            "topic": f"configapi-{name}",
        }

    return config


def names(prefix: str, n: int) -> list[str]:
    return [f"{prefix}-{i:05d}" for i in range(n)]


def p99(samples: Sequence[float]) -> float:
    """The 99th percentile, interpolated between the samples (never beyond the largest)."""
    if len(samples) < 2:
        return samples[0]
    return statistics.quantiles(samples, n=100, method="inclusive")[98]


def timed(call: Callable[[str], None], names: Sequence[str]) -> tuple[list[float], float]:
    """Each call's seconds, and the seconds of them all, one after another."""
    seconds = []
    started = time.perf_counter()
    for name in names:
        before = time.perf_counter()
        call(name)
        seconds.append(time.perf_counter() - before)
    return seconds, time.perf_counter() - started


def fill(api: Api, n: int) -> tuple[list[str], float]:
    """Creates ``n`` connectors; their names and the creates a second."""
    filled = names("fill", n)
    _, seconds = timed(api.create, filled)
    return filled, n / seconds


def measure(
    api: Api, label: str, prefix: str, filled: Sequence[str], calls: int
) -> dict[str, float]:
    """Times ``calls`` gets among ``filled``, creates of new connectors named from ``prefix``
    and their deletes, so that the cluster holds ``filled`` again after; the figures of
    ``label``."""
    api.get(filled[0])  # untimed: a first connection, a first handler
    picked = random.Random(SEED).choices(filled, k=calls)
    created = names(prefix, calls)
    gets, _ = timed(api.get, picked)
    creates, creating = timed(api.create, created)
    deletes, _ = timed(api.delete, created)
    out = {rate_figure(label): calls / creating}
    for kind, seconds in zip(CALL_KINDS, (gets, creates, deletes), strict=True):
        out[latency_figure(label, kind, "median")] = statistics.median(seconds) * 1000
        out[latency_figure(label, kind, "p99")] = p99(seconds) * 1000
    return out


def list_with_status(api: Rest, label: str, n: int) -> dict[str, float]:
    """The median ms of ``LISTS`` lists of every connector with its status; fails unless each
    answers all ``n``, every one with a connector state."""
    seconds = []
    for _ in range(LISTS):
        before = time.perf_counter()
        answer = api.call("GET", "/connectors?expand=status")
        seconds.append(time.perf_counter() - before)
        if not isinstance(answer, dict) or len(answer) != n:
            got = len(answer) if isinstance(answer, dict) else answer
            raise RuntimeError(f"{label} listed {got} connectors with status, not {n}")
        if not all(entry["status"]["connector"]["state"] for entry in answer.values()):
            raise RuntimeError(f"{label} listed a connector without a state")
    return {list_figure(label): statistics.median(seconds) * 1000}


def command(request_id: str, method: str, request: Mapping[str, object]) -> bytes:
    return json.dumps({"id": request_id, "method": method, "request": request}).encode()


@dataclass
class Commands:
    """A producer of commands and a reader of their answers, as an operator's script is."""

    settings: Settings
    producer: AIOKafkaProducer
    consumer: AIOKafkaConsumer

    @property
    def requests(self) -> str:
        return self.settings.topic("requests")

    async def answers(self, ids: set[str], deadline_s: float) -> None:
        """Reads answers until each of ``ids`` has one, every one OK."""
        deadline = time.monotonic() + deadline_s
        while ids:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{len(ids)} commands unanswered after {deadline_s}s")
            for batch in (await self.consumer.getmany(timeout_ms=100)).values():
                for record in batch:
                    answer = json.loads(record.value or b"{}")
                    if answer.get("id") in ids:
                        if answer.get("code") != "OK":
                            raise RuntimeError(f"command refused: {answer}")
                        ids.discard(answer["id"])

    async def warm(self) -> None:
        """Waits until the agent answers: it joins its group after the service is ready."""
        await self.producer.send_and_wait(self.requests, command("warm", "ListConnectors", {}))
        await self.answers({"warm"}, AGENT_READY_S)

    async def burst(self, n: int) -> float:
        """Writes ``n`` creates at once; creates a second, first write to last answer read."""
        created = names("cmd", n)
        started = time.perf_counter()
        for name in created:
            request = {
                "name": name,
                "config": datagen_config(name),
                "initial_state": INITIAL_STATE,
            }
            await self.producer.send(self.requests, command(name, "CreateConnector", request))
        await self.producer.flush()
        await self.answers(set(created), COMMANDS_DEADLINE_S)
        return n / (time.perf_counter() - started)


async def command_rate(settings: Settings, n: int) -> float:
    """The command topic's creates a second, for ``n`` creates in one burst."""
    servers = settings.bootstrap_servers
    responses = settings.topic("responses")
    for topic in (settings.topic("requests"), responses):
        await ensure_topic(servers, topic, PARTITIONS)
    producer = AIOKafkaProducer(bootstrap_servers=servers, linger_ms=5)
    consumer = AIOKafkaConsumer(bootstrap_servers=servers, group_id=None)
    await producer.start()
    await consumer.start()
    try:
        partitions = [TopicPartition(responses, p) for p in range(PARTITIONS)]
        consumer.assign(partitions)
        await consumer.seek_to_beginning(*partitions)
        commands = Commands(settings, producer, consumer)
        await commands.warm()
        return await commands.burst(n)
    finally:
        await producer.stop()
        await consumer.stop()


def headrace_settings(env: BenchEnv) -> Settings:
    """A cluster of the run's own on the run's broker: fresh topics, free ports."""
    return Settings(
        bootstrap_servers=env.bootstrap,
        cluster=env.fresh("configapi"),
        config_addr=f"127.0.0.1:{free_port()}",
        rest_addr=f"127.0.0.1:{free_port()}",
        coordinator_addr=f"127.0.0.1:{free_port()}",
        executor_addr=f"127.0.0.1:{free_port()}",
        var_dir=env.folder("configapi"),
    )


HEADRACE_SERVICES = ("config", "coordinator", "worker-1")
"""A cluster as a user runs one: no executor, since no connector runs."""


def measure_headrace(env: BenchEnv, n: int, calls: int) -> dict[str, float]:
    """headrace's figures: gRPC, REST, then the command topic, on its config service, with
    the coordinator and a worker following."""
    settings = headrace_settings(env)
    stack = Stack(settings, workers=1)
    try:
        for service in HEADRACE_SERVICES:
            stack.start(service)
        rest_port = int(settings.rest_addr.rsplit(":", 1)[1])
        with ConfigClient(settings.config_addr, settings) as client:
            grpc_api = Grpc(client, datagen_config)
            filled, filling = fill(grpc_api, n)
            figures = {fill_figure(HEADRACE_GRPC): filling}
            figures |= measure(grpc_api, HEADRACE_GRPC, "grpc", filled, calls)
        rest_api = Rest(rest_port, datagen_config)
        try:
            figures |= measure(rest_api, HEADRACE_REST, "rest", filled, calls)
            figures[retries_figure(HEADRACE_REST)] = rest_api.retries
            figures |= list_with_status(rest_api, HEADRACE_REST, n)
        finally:
            rest_api.close()
        figures[commands_figure()] = asyncio.run(command_rate(settings, n))
        return figures
    finally:
        for service in reversed(HEADRACE_SERVICES):
            stack.stop(service)


def measure_connect(env: BenchEnv, n: int, calls: int) -> dict[str, float]:
    """Connect's figures, on a one-worker cluster of its own."""
    folder = env.folder("connect-configapi")
    cluster = ConnectDistributed(env.bootstrap, folder, workers=1)
    api: Rest | None = None
    try:
        cluster.start()
        api = Rest(cluster.members[0].port, file_source_config(folder))
        filled, filling = fill(api, n)
        api.retries = 0  # those of the timed calls only
        figures = {fill_figure(CONNECT): filling} | measure(api, CONNECT, "rest", filled, calls)
        figures[retries_figure(CONNECT)] = api.retries
        return figures | list_with_status(api, CONNECT, n)
    finally:
        if api is not None:
            api.close()
        cluster.stop()


def ratios() -> tuple[tuple[str, str], ...]:
    """Each headrace API's figures over Connect's. The command topic's burst has no ratio: one
    batched write of every command against one client's calls one at a time measures the
    batching, not the API."""
    pairs = [
        (latency_figure(api, kind, stat), latency_figure(CONNECT, kind, stat))
        for api in (HEADRACE_GRPC, HEADRACE_REST)
        for kind in CALL_KINDS
        for stat in STATS
    ]
    pairs += [(rate_figure(api), rate_figure(CONNECT)) for api in (HEADRACE_GRPC, HEADRACE_REST)]
    pairs.append((list_figure(HEADRACE_REST), list_figure(CONNECT)))
    return tuple(pairs)


class ConfigApi:
    name = "configapi"
    description = "get, create and delete with N connectors; creates a second, API and topic"
    measures: Mapping[str, Measure] = {
        **{
            latency_figure(api, kind, stat): Measure("ms", higher_is_better=False)
            for api in APIS
            for kind in CALL_KINDS
            for stat in STATS
        },
        **{rate_figure(api): Measure("creates/s") for api in APIS},
        commands_figure(): Measure("creates/s"),
        **{fill_figure(api): Measure("creates/s") for api in (HEADRACE_GRPC, CONNECT)},
        **{retries_figure(api): Measure("calls", False) for api in (HEADRACE_REST, CONNECT)},
        **{
            list_figure(api): Measure("ms", higher_is_better=False)
            for api in (HEADRACE_REST, CONNECT)
        },
    }
    ratios: tuple[tuple[str, str], ...] = ratios()
    max_repeats = 3

    def parameters(self, smoke: bool) -> dict[str, object]:
        return {
            "N": SMOKE_CONNECTORS if smoke else CONNECTORS,
            "calls": SMOKE_CALLS if smoke else CALLS,
            "initial_state": INITIAL_STATE,
            "connect_workers": 1,
        }

    def run_once(self, env: BenchEnv, parameters: Mapping[str, object]) -> dict[str, float]:
        n, calls = int(str(parameters["N"])), int(str(parameters["calls"]))
        return env.each_system(
            partial(measure_headrace, env, n, calls), partial(measure_connect, env, n, calls)
        )
