"""Rebalance: how fast work lands on workers, and how much a lost worker disturbs the others.

headrace's two workers beside Kafka Connect distributed with two workers, on the same broker,
running the same connectors: file sinks (FileStreamSink on both) with N = 1, 8 and 32 tasks over
one idle topic, so what is measured is the runtime's work, not the records'. Each run:

1. creates the three connectors one after another, timing each from the create call to
   all of its N tasks RUNNING (the earlier connectors keep running meanwhile, as they would);
2. kills the second worker's process with SIGKILL (with its process group: a worker's plugin
   processes die with it), and times how long until every task is RUNNING on the surviving
   worker. This is a process crash: its connections close at once, and headrace's coordinator
   sees its stream end. Connect's group waits for its session timeout either way. A machine lost
   without closing its connections would leave headrace waiting out its own session timeout
   too (10 s by default, as Connect's).
3. counts the tasks the surviving worker stopped in that time, from each system's status topic:
   both write UNASSIGNED for a task a worker stops. Zero is the aim: the survivor's work should
   not move.

Time is read by polling each system's status API every ``POLL_S``, so figures are good to that.
Connect detects a lost worker by its group session timeout (10 s by default) and headrace by its
stream to the coordinator ending; ``scheduled.rebalance.max.delay.ms`` is set to headrace's grace
period for a lost worker, which is zero: headrace moves a lost worker's work at once.

Both clusters are started before the warm-up and kept through the runs; after each, the killed
worker is started again (untimed) and the next run finds two members, on both systems. The
systems take turns as to who goes first (A-B-B-A).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from collections.abc import Callable, Mapping
from contextlib import ExitStack
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Protocol

from aiokafka import AIOKafkaConsumer, TopicPartition

from bench import raw
from bench.connect import STRING_CONVERTER, ConnectDistributed
from bench.env import BenchEnv
from bench.harness import Measure
from bench.workloads.files import PYTHON_FILE
from headrace.clients.config import ConfigClient
from headrace.clients.connect import RestError
from headrace.core.model import status as headrace_status
from headrace.core.storage.topics import ensure_topic

SIZES = (1, 8, 32)
POLL_S = 0.05
DEADLINE_S = 180.0
GRACE_MS = 0  # headrace's grace period for a lost worker (none): Connect gets the same
SYSTEMS = ("headrace", "Kafka Connect distributed")

Task = tuple[int, str, str]  # (task id, state, worker id)
StatusDecoder = Callable[[str, bytes | None], tuple[str, str] | None]


class System(Protocol):
    """What the workload needs of a runtime with two workers."""

    @property
    def name(self) -> str: ...
    @property
    def status_topic(self) -> str: ...
    @property
    def file_sink(self) -> str:
        """The connector.class of its file sink: Kafka's on Connect, headrace's own here."""
        ...

    def create(self, name: str, config: Mapping[str, str]) -> None: ...
    def delete(self, name: str) -> None: ...
    def tasks(self, name: str) -> list[Task]:
        """The connector's tasks as its status API reports them; empty until it knows them."""
        ...

    def worker_ids(self) -> tuple[str, str]:
        """(the worker that stays, the worker that will be killed)."""
        ...

    def kill_second_worker(self) -> None: ...
    def decode(self, key: str, value: bytes | None) -> tuple[str, str] | None:
        """(state, worker id) of a status record; None for one that is not a report."""
        ...


@dataclass
class Headrace:
    env: BenchEnv
    client: ConfigClient
    name: str = "headrace"
    # Its own, by full name: Kafka's, installed for the jvm-file workload, shares the alias.
    file_sink: str = PYTHON_FILE[1]

    @property
    def status_topic(self) -> str:
        return self.env.stack.settings.topic("status")

    def create(self, name: str, config: Mapping[str, str]) -> None:
        self.client.create(name, config)

    def delete(self, name: str) -> None:
        self.client.delete(name)

    def tasks(self, name: str) -> list[Task]:
        return [(t.task, t.state, t.worker_id) for t in self.client.status(name).tasks]

    def worker_ids(self) -> tuple[str, str]:
        return "worker-1", "worker-2"

    def kill_second_worker(self) -> None:
        pid = self.env.stack.pid("worker-2")
        assert pid is not None, "worker-2 is not running"
        os.killpg(pid, signal.SIGKILL)  # its own session: the worker and its plugin processes

    def restore(self) -> None:
        self.env.stack.stop("worker-2")  # reaps it and clears its pid file
        self.env.stack.start("worker-2")

    def decode(self, key: str, value: bytes | None) -> tuple[str, str] | None:
        event = headrace_status.decode(key, value)
        if not isinstance(event, headrace_status.StatusReported):
            return None
        return event.status.state.value, event.status.worker_id


@dataclass
class Connect:
    cluster: ConnectDistributed
    name: str = "Kafka Connect distributed"
    file_sink: str = "FileStreamSink"

    @property
    def status_topic(self) -> str:
        return self.cluster.topic("status")

    def create(self, name: str, config: Mapping[str, str]) -> None:
        self.cluster.create(name, config)

    def delete(self, name: str) -> None:
        self.cluster.delete(name)

    def tasks(self, name: str) -> list[Task]:
        try:
            found = self.cluster.status(name)
        except RestError:  # 404 until the connector's status is written
            return []
        listed = found.get("tasks", [])
        assert isinstance(listed, list)
        return [(t["id"], t["state"], t["worker_id"]) for t in listed]

    def worker_ids(self) -> tuple[str, str]:
        first, second = self.cluster.members
        return f"127.0.0.1:{first.port}", f"127.0.0.1:{second.port}"

    def kill_second_worker(self) -> None:
        self.cluster.members[1].kill()

    def restore(self) -> None:
        self.cluster.members[1].restart()

    def decode(self, key: str, value: bytes | None) -> tuple[str, str] | None:
        if value is None:
            return None
        found = json.loads(value)
        return found.get("state", ""), found.get("worker_id", "")


def wait_tasks(
    system: System, name: str, n: int, ok: Callable[[Task], bool], started: float
) -> float:
    """Seconds from ``started`` until the connector has ``n`` tasks, each ``ok``."""
    tasks: list[Task] = []
    while time.perf_counter() - started < DEADLINE_S:
        tasks = system.tasks(name)
        if len(tasks) == n and all(ok(t) for t in tasks):
            return time.perf_counter() - started
        time.sleep(POLL_S)
    raise RuntimeError(f"{system.name}: {name} not as expected in {DEADLINE_S}s: {tasks}")


async def stopped_since(
    bootstrap: str, since: dict[TopicPartition, int], decode: StatusDecoder, worker: str
) -> int:
    """Tasks that ``worker`` reported UNASSIGNED (stopped) in the status records written after
    the offsets ``since``."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False
    )
    await consumer.start()
    stopped: set[str] = set()
    try:
        partitions = list(since)
        consumer.assign(partitions)
        for partition, offset in since.items():
            consumer.seek(partition, offset)
        ends = await consumer.end_offsets(partitions)
        while [p for p in partitions if await consumer.position(p) < ends[p]]:
            batch = await consumer.getmany(timeout_ms=500)
            for record in (r for records in batch.values() for r in records):
                key = record.key.decode() if record.key else ""
                if key.startswith("status-task-") and decode(key, record.value) == (
                    "UNASSIGNED",
                    worker,
                ):
                    stopped.add(key)
    finally:
        await consumer.stop()
    return len(stopped)


def measure(env: BenchEnv, system: System, folder: Path) -> dict[str, float]:
    """One system's figures: create to RUNNING per size, kill to RUNNING elsewhere, and the
    survivor's stopped tasks. Its connectors are deleted on the way out, failure or not."""
    topic = env.fresh("idle")
    asyncio.run(ensure_topic(env.bootstrap, topic, 8))
    figures: dict[str, float] = {}
    names = {n: env.fresh(f"sink{n}") for n in SIZES}
    with ExitStack() as created:
        for n, name in names.items():
            started = time.perf_counter()
            system.create(
                name,
                {
                    "connector.class": system.file_sink,
                    "tasks.max": str(n),
                    "topics": topic,
                    "file": str(folder / f"{name}.out"),
                    "key.converter": STRING_CONVERTER,
                    "value.converter": STRING_CONVERTER,
                },
            )
            created.callback(system.delete, name)
            figures[f"{system.name} create to {n} tasks RUNNING"] = wait_tasks(
                system, name, n, lambda t: t[1] == "RUNNING", started
            )
        survivor, victim = system.worker_ids()
        status_before = asyncio.run(raw.end_offsets(env.bootstrap, system.status_topic))
        started = time.perf_counter()
        system.kill_second_worker()
        moved = 0.0
        for n, name in names.items():
            moved = wait_tasks(
                system, name, n, lambda t: t[1] == "RUNNING" and t[2] != victim, started
            )
        figures[f"{system.name} SIGKILL to tasks RUNNING elsewhere"] = moved
        figures[f"{system.name} tasks stopped on the untouched worker"] = asyncio.run(
            stopped_since(env.bootstrap, status_before, system.decode, survivor)
        )
    return figures


class Rebalance:
    name = "rebalance"
    description = "create to N tasks RUNNING, and a worker's SIGKILL, on two workers"
    measures: Mapping[str, Measure] = {
        **{
            f"{s} create to {n} tasks RUNNING": Measure("s", higher_is_better=False)
            for s in SYSTEMS
            for n in SIZES
        },
        **{f"{s} SIGKILL to tasks RUNNING elsewhere": Measure("s", False) for s in SYSTEMS},
        **{f"{s} tasks stopped on the untouched worker": Measure("tasks", False) for s in SYSTEMS},
    }
    max_repeats = 5
    ratios: tuple[tuple[str, str], ...] = (
        *(
            (f"headrace create to {n} tasks RUNNING", f"{SYSTEMS[1]} create to {n} tasks RUNNING")
            for n in SIZES
        ),
        (
            "headrace SIGKILL to tasks RUNNING elsewhere",
            f"{SYSTEMS[1]} SIGKILL to tasks RUNNING elsewhere",
        ),
    )

    def parameters(self, smoke: bool) -> dict[str, object]:
        # The same sizes in the smoke run: 41 tasks is seconds of work, and the figures' names
        # carry the sizes.
        return {"tasks": ", ".join(map(str, SIZES)), "workers": 2}

    def run_once(self, env: BenchEnv, parameters: Mapping[str, object]) -> dict[str, float]:
        files = env.stack.settings.file_roots[0]
        files.mkdir(parents=True, exist_ok=True)
        return env.each_system(
            partial(self._headrace, env, files), partial(self._connect, env, files)
        )

    def _headrace(self, env: BenchEnv, files: Path) -> dict[str, float]:
        with ConfigClient(env.stack.settings.config_addr, env.stack.settings) as client:
            ours = Headrace(env, client)
            try:
                return measure(env, ours, files)
            finally:
                ours.restore()

    def _connect(self, env: BenchEnv, files: Path) -> dict[str, float]:
        theirs = Connect(kept_cluster(env, "rebalance"))
        try:
            return measure(env, theirs, files)
        finally:
            theirs.restore()


def kept_cluster(env: BenchEnv, workload: str) -> ConnectDistributed:
    """The workload's Connect cluster of two workers, started in its warm-up and kept through
    its runs, as headrace's stack is: each run puts back the worker it stopped or killed, on
    both systems, before the next."""

    def start() -> ConnectDistributed:
        cluster = ConnectDistributed(
            env.bootstrap,
            env.folder(f"connect-{workload}"),
            worker_overrides={"scheduled.rebalance.max.delay.ms": str(GRACE_MS)},
        )
        cluster.start()
        return cluster

    return env.kept(f"Kafka Connect distributed ({workload})", start, ConnectDistributed.stop)
