"""Cold start by replay (workload 4): how long the config service and the coordinator take from
process start to serving, with 1,000, 10,000 and 100,000 connectors in their topics.

Both services keep no state of their own: they rebuild it by replaying Kafka topics at start
(the config service the configs and status topics, the coordinator the assignments and configs
topics), so every restart, planned or after a kill -9, is unavailable for as long as the replay
takes, and that time grows with the cluster.

For each size, a cluster of its own (fresh topics) is seeded before the clock, with the project's
own encoders (``configlog``, ``status``) through aiokafka's batch path, so that even 100,000
connectors take seconds to write. Each connector has its config, ``tasks`` task configs and their
commit on the configs topic, and a RUNNING status for itself and each task on the status topic,
keyed and partitioned as a worker's producer writes them. The assignments topic is left empty:
the last generation is one record, whose replay costs nothing next to the others.

The clock runs from just before the process is spawned until its ready event is in its log
(:meth:`Stack.start`, which polls every 0.1 s): interpreter start and imports count, since a
restart pays for them too. The config service is started and timed first, then the coordinator,
each on its own, so neither competes with the other for this machine's cores. Each service logs
its ready event only once its logs have read up to the end offsets taken at start
(``TopicLog.start`` awaits ``catch_up``): ready means replayed. The config service's ready event
counts the connectors it holds, and the run fails unless that is every one seeded; after both are
ready, outside the clock, it fails unless the config service lists every connector and reports
the last one's tasks and statuses.

How the time grows: the ``growth`` figures are the exponent k of t = a + b·N^k fitted through
the three sizes (1 is linear, 2 quadratic): the fixed cost of a start (interpreter, imports,
connecting to Kafka: about a second) is ``a``, so it cannot pull k below what the replay does, as
a ratio of totals would. Beside it, the ``per connector`` figures are the replay's cost of each
further connector between two sizes, (t(N2) - t(N1)) / (N2 - N1), in µs: flat when it is
linear. No peer runs this workload: it measures headrace against its own growth, and there are
no ratios.

A start that is not ready within ``deadline_s``, or that grows past ``MEMORY_CAP_BYTES`` on the
way, fails the run loudly rather than being left out: a service that takes minutes, or the
machine's memory, to replay is the finding, not noise.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import signal
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil
from aiokafka.partitioner import DefaultPartitioner

from bench import raw
from bench.env import BenchEnv
from bench.harness import Measure
from headrace.clients.config import ConfigClient
from headrace.core.model import configlog, status
from headrace.core.model.status import StatusReported, UnitStatus
from headrace.core.model.structs import CONNECTOR_TASK, State, WorkUnit
from headrace.core.settings import Settings
from headrace.core.storage.topics import TOPICS, ensure_cluster_topic
from headrace.local.kafka import free_port
from headrace.local.stack import CONFIG, COORDINATOR, Stack

SIZES = (1_000, 10_000, 100_000)
SMOKE_SIZE = 100
SERVICES = {"config": "config service", "coordinator": "coordinator"}
PLANE = "control plane"
"""Both services started at once, as a restart of the whole control plane starts them: the time
until both are ready, each replaying beside the other."""
LABELS = {**SERVICES, PLANE: "config service and coordinator at once"}
READY_EVENT = {"config": "config_service_ready", "coordinator": "coordinator_ready"}
READY_SERVICE = {"config": CONFIG, "coordinator": COORDINATOR}  # their health names
WORKERS = ("worker-1", "worker-2")
DEADLINE_S = 180.0
# Far above what the state of 100,000 connectors needs. A service that grows past it while it
# replays is killed and the run fails: better than the kernel's OOM killer picking the broker.
MEMORY_CAP_BYTES = 4 * 2**30
POLL_S = 0.2
PLUGIN_VERSION = "1.0.0"


def time_figure(service: str, n: int) -> str:
    return f"{LABELS[service]} {n:,} connectors"


def growth_figure(service: str) -> str:
    return f"{SERVICES[service]} growth exponent, {SIZES[0]:,} to {SIZES[-1]:,}"


def marginal_figure(service: str, small: int, large: int) -> str:
    return f"{SERVICES[service]} per connector, {small:,} to {large:,}"


def fitted_exponent(points: Sequence[tuple[int, float]]) -> float:
    """The k of t = a + b·N^k through three (N, t) points, the three largest given: the k at
    which (t3 - t2) / (t2 - t1) = (N3^k - N2^k) / (N2^k - N1^k), found by bisection (the right
    side grows with k). ValueError when the times do not grow with N, which no such curve
    fits."""
    (n1, t1), (n2, t2), (n3, t3) = sorted(points)[-3:]
    if not t1 < t2 < t3:
        raise ValueError(f"the times do not grow with the sizes: {sorted(points)[-3:]}")
    wanted = (t3 - t2) / (t2 - t1)

    def steps(k: float) -> float:
        return (n3**k - n2**k) / (n2**k - n1**k)

    low, high = 1e-3, 8.0
    if not steps(low) <= wanted <= steps(high):
        raise ValueError(f"no exponent in [{low}, {high}] fits {sorted(points)[-3:]}")
    for _ in range(100):
        middle = (low + high) / 2
        low, high = (middle, high) if steps(middle) < wanted else (low, middle)
    return (low + high) / 2


def connector_name(i: int) -> str:
    # Short names: the list call's answer for 100,000 connectors must stay under gRPC's default
    # 4 MiB, which ConfigClient's channel keeps.
    return f"c{i:06d}"


def connector_config(name: str, tasks: int) -> dict[str, str]:
    """A config of the size a real one has; nothing validates it on replay."""
    return {
        "name": name,
        "connector.class": "DatagenSource",
        "tasks.max": str(tasks),
        "topic": f"coldstart-{name}",
        "records": "1000000",
        "batch.size": "2000",
        "key.converter": "StringConverter",
        "value.converter": "JsonConverter",
    }


Raw = raw.Record


def config_records(n: int, tasks: int) -> list[Raw]:
    """The configs topic of ``n`` connectors, in the order the config service writes it: each
    connector's config, then its task configs and their commit."""
    out: list[Raw] = []
    for i in range(n):
        name = connector_name(i)
        config = connector_config(name, tasks)
        records = [configlog.connector_configured(name, config, f"incarnation-{i}")]
        records += configlog.task_set(name, [{**config, "task.id": str(t)} for t in range(tasks)])
        out += [(key.encode(), value) for key, value in records if value is not None]
    return out


def status_records(n: int, tasks: int, partitions: int) -> dict[int, list[Raw]]:
    """The status topic of ``n`` connectors, every unit RUNNING, by partition: the default
    partitioner's choice for the key, as a worker's producer makes it."""
    partitioner = DefaultPartitioner()
    every = list(range(partitions))
    out: dict[int, list[Raw]] = {p: [] for p in every}
    for i in range(n):
        name = connector_name(i)
        for task in (CONNECTOR_TASK, *range(tasks)):
            unit_status = UnitStatus(
                WorkUnit(name, task),
                State.RUNNING,
                worker_id=WORKERS[i % len(WORKERS)],
                generation=1,
                plugin_version=PLUGIN_VERSION,
            )
            key, value = status.encode(StatusReported(unit_status))
            key_bytes = key.encode()
            if value is not None:
                out[partitioner(key_bytes, every, every)].append((key_bytes, value))
    return out


def own_cluster(env: BenchEnv, label: str) -> Settings:
    """Settings of a cluster of its own (fresh topics) on the run's broker, on free ports."""
    return Settings(
        bootstrap_servers=env.bootstrap,
        cluster=env.fresh(label),
        config_addr=f"127.0.0.1:{free_port()}",
        rest_addr=f"127.0.0.1:{free_port()}",
        coordinator_addr=f"127.0.0.1:{free_port()}",
        executor_addr=f"127.0.0.1:{free_port()}",
        var_dir=env.folder(label),
    )


async def seed(settings: Settings, n: int, tasks: int) -> None:
    """Creates the cluster's topics as the services would, and fills configs and status."""
    partitions = {role: await ensure_cluster_topic(settings, role) for role in TOPICS}
    await raw.produce_to(
        settings.bootstrap_servers, settings.topic("configs"), {0: config_records(n, tasks)}
    )
    await raw.produce_to(
        settings.bootstrap_servers,
        settings.topic("status"),
        status_records(n, tasks, partitions["status"]),
    )


def ready_event(log_file: Path, event: str) -> dict[str, object]:
    """The fields of the service's ready event, from its JSON log."""
    with log_file.open() as f:
        for line in f:
            if f'"{event}"' in line:
                fields: dict[str, object] = json.loads(line)
                if fields.get("event") == event:
                    return fields
    raise RuntimeError(f"no {event} in {log_file}")


def check_served(settings: Settings, n: int, tasks: int) -> None:
    """Fails unless the config service lists every connector and has the last one's tasks and
    statuses (the last written: the end of both replays)."""
    last = connector_name(n - 1)
    with ConfigClient(settings.config_addr, settings) as client:
        names = client.names()
        if sorted(names) != [connector_name(i) for i in range(n)]:
            raise RuntimeError(f"the config service lists {len(names)} connectors of {n}")
        info = client.get(last)
        if len(info.tasks) != tasks:
            raise RuntimeError(f"{last} has {len(info.tasks)} tasks of {tasks}")
        report = client.status(last)
        states = [report.connector.state, *(t.state for t in report.tasks)]
        if states != [State.RUNNING.value] * (tasks + 1):
            raise RuntimeError(f"{last} reports {states}, not all {State.RUNNING.value}")


class ColdStart:
    name = "coldstart"
    description = "config service and coordinator: process start to serving, by replay"
    measures: Mapping[str, Measure] = {
        **{time_figure(s, n): Measure("s", higher_is_better=False) for n in SIZES for s in LABELS},
        **{growth_figure(s): Measure("exponent (1 = linear)", False) for s in SERVICES},
        **{
            marginal_figure(s, small, large): Measure("µs", higher_is_better=False)
            for s in SERVICES
            for small, large in itertools.pairwise(SIZES)
        },
    }
    ratios: tuple[tuple[str, str], ...] = ()
    # Three runs, as everywhere: a spread needs three.
    max_repeats = 3

    def parameters(self, smoke: bool) -> dict[str, object]:
        return {
            "connectors": (SMOKE_SIZE,) if smoke else SIZES,
            "tasks": 2,
            "deadline_s": DEADLINE_S,
        }

    def run_once(self, env: BenchEnv, parameters: Mapping[str, object]) -> dict[str, float]:
        given = parameters["connectors"]
        assert isinstance(given, tuple), "connectors: a tuple of sizes"
        sizes = tuple(int(n) for n in given)
        tasks, deadline_s = int(str(parameters["tasks"])), float(str(parameters["deadline_s"]))
        times = {n: self._start_both(env, n, tasks, deadline_s) for n in sizes}
        return figures(times)

    def _start_both(self, env: BenchEnv, n: int, tasks: int, deadline_s: float) -> dict[str, float]:
        """Seeds a cluster of ``n`` connectors, then times each service's start on it."""
        settings = own_cluster(env, f"coldstart{n}")
        asyncio.run(seed(settings, n, tasks))
        stack = Stack(settings)
        seconds: dict[str, float] = {}
        try:
            for service in SERVICES:
                seconds[service] = start_guarded(stack, service, deadline_s)
            held = ready_event(stack.log_file("config"), READY_EVENT["config"]).get("connectors")
            if held != n:
                raise RuntimeError(f"the config service was ready holding {held} connectors of {n}")
            check_served(settings, n, tasks)
        finally:
            for service in reversed(SERVICES):
                stack.stop(service)
        seconds[PLANE] = start_together(stack, deadline_s)
        return seconds


def rss_bytes(pid: int) -> int:
    try:
        return int(psutil.Process(pid).memory_info().rss)
    except psutil.Error:
        return 0  # gone, or not yet there: Stack.start says which


def start_guarded(stack: Stack, service: str, deadline_s: float) -> float:
    """Starts one service through :meth:`Stack.start` and returns its seconds to ready. Its
    memory is watched meanwhile, from this thread while another waits for the ready event: past
    ``MEMORY_CAP_BYTES`` it is killed and the run fails."""
    outcome: list[float | Exception] = []

    def start() -> None:
        started = time.perf_counter()
        try:
            # Ready means replayed: for the coordinator that is leading, not merely serving.
            stack.start(service, timeout=deadline_s, ready=READY_SERVICE[service])
            outcome.append(time.perf_counter() - started)
        except Exception as exc:  # noqa: BLE001 - raised again below, in the caller's thread
            outcome.append(exc)

    waiter = threading.Thread(target=start, name=f"start-{service}")
    waiter.start()
    peak = 0
    while waiter.is_alive():
        pid = stack.pid(service)
        if pid is not None and peak <= MEMORY_CAP_BYTES:
            peak = max(peak, rss_bytes(pid))
            if peak > MEMORY_CAP_BYTES:
                os.kill(pid, signal.SIGKILL)  # Stack.start then sees it exit, and returns
        waiter.join(POLL_S)
    if peak > MEMORY_CAP_BYTES:
        raise RuntimeError(
            f"{service} grew past {MEMORY_CAP_BYTES / 2**20:,.0f} MiB before it was ready; killed"
        )
    result = outcome[0]
    if isinstance(result, Exception):
        raise result
    return result


def start_together(stack: Stack, deadline_s: float) -> float:
    """Starts both services at once, each watched as :func:`start_guarded` watches it, and
    returns the seconds until both are ready; then stops them."""
    try:
        with ThreadPoolExecutor(len(SERVICES)) as pool:
            started = time.perf_counter()
            waits = [pool.submit(start_guarded, stack, s, deadline_s) for s in SERVICES]
            for wait in waits:
                wait.result()
            return time.perf_counter() - started
    finally:
        for service in reversed(SERVICES):
            stack.stop(service)


def figures(times: Mapping[int, Mapping[str, float]]) -> dict[str, float]:
    """Every figure in ``measures`` from the times by size. A smoke run measures one small size
    and reports it under every size (its figures mean nothing, as for every smoke run); its
    growth exponent and costs per connector are then 0."""
    measured = sorted(times)
    out: dict[str, float] = {}
    for each in LABELS:
        for n in SIZES:
            out[time_figure(each, n)] = times[n if n in times else measured[-1]][each]
    for service in SERVICES:
        for small, large in itertools.pairwise(SIZES):
            out[marginal_figure(service, small, large)] = (
                (times[large][service] - times[small][service]) / (large - small) * 1e6
                if small in times and large in times
                else 0.0
            )
        out[growth_figure(service)] = 0.0
        if len(measured) >= 3:
            out[growth_figure(service)] = fitted_exponent(
                [(n, times[n][service]) for n in measured]
            )
    return out
