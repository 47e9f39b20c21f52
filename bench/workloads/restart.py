"""Restart: how long a worker holding N units takes to have them all RUNNING again.

headrace's two workers beside Kafka Connect distributed with two workers, on the same broker,
running the same connectors: file sinks (FileStreamSink on both) with ``TASKS`` tasks each over
one idle topic, so what is measured is the runtime's work, not the records'. A unit is a
connector or one of its tasks: a full run holds 250 connectors, N = 1,000 units; the smoke run
10 connectors, N = 40. Each run, for each system:

1. stops the second worker cleanly, so that the first will hold every unit;
2. creates the connectors one after another through the system's API, and waits until the
   status topic says every unit is RUNNING on the first worker (``create``, timed from the first
   create call: set-up, reported because it is there to see, not the subject);
3. notes the status topic's end offsets, stops the first worker with SIGTERM and waits for it to
   exit on its own (``clean stop``), then starts its process again;
4. deletes the connectors and waits for every unit's tombstone on the status topic, so that no
   deletion is still under way when the next run starts; then starts the second worker again.
   Both systems' clusters are started before the warm-up and kept through the runs, which take
   turns as to who goes first (A-B-B-A).

The restart's clock starts just before the new process is spawned, on both systems: interpreter
or JVM start, joining, and starting every unit count; the stop before it does not (it is
reported on its own). It ends at the CreateTime of the status record that made the last unit
RUNNING on the restarted worker: both systems' producers stamp their records with this machine's
clock, so the figure is exact to the millisecond, not to a polling interval. Only records after
the noted offsets and stamped after the old process had exited count, so none is the old
process's. A unit counts from the record that put it RUNNING for good (RUNNING, then anything
else, then RUNNING again counts from the last); such a unit is also counted under ``stopped
after RUNNING``, where zero is the aim: a restarted worker should start each unit once.

The clock leaves the stop out because a Connect worker's clean stop with 1,000 units in its
512 MiB heap on this two-core machine ranged from 13 s to over 5 minutes (once with an
OutOfMemoryError on the way), which would make the restart figure a measure of the peer's
shutdown. A stop is given ``STOP_DEADLINE_S`` (not the 30 s after which ``ConnectWorker.stop``
kills a worker), then the process is killed and the ``killed`` figure counts it: the restart
that follows is then not a clean one (Connect's group may wait out the killed member's session,
10 s).

Both workers restart alone: no other member holds or takes the units, so what is measured is
one worker's start, not a rebalance between two. Connect's ``scheduled.rebalance.max.delay.ms``
is headrace's grace period for a lost worker, zero, as in the rebalance workload; neither delay
applies to a clean leave of the only member.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Protocol

from aiokafka import AIOKafkaConsumer, TopicPartition

from bench import raw
from bench.connect import STRING_CONVERTER
from bench.env import BenchEnv
from bench.harness import Measure
from bench.workloads import rebalance
from headrace.clients.config import ConfigClient
from headrace.clients.connect import REBALANCE_RETRY_S, RestError
from headrace.core.storage.topics import ensure_topic

CONNECTORS = 250
SMOKE_CONNECTORS = 10
TASKS = 3
UNITS_PER_CONNECTOR = 1 + TASKS
CREATE_DEADLINE_S = 600.0
RESTART_DEADLINE_S = 300.0
STOP_DEADLINE_S = 120.0  # for a clean stop; then SIGKILL
STOP_POLL_S = 0.05  # as often as Stack.stop looks
DELETE_DEADLINE_S = 300.0
SYSTEMS = ("headrace", "Kafka Connect distributed")
FORWARD_REFUSED = "trying to forward REST request: java.net.ConnectException: Connection refused"
REST_RETRY_S = 0.2
RUNNING = "RUNNING"

Report = tuple[str, str, int]  # (state, worker id, the record's timestamp in ms)
History = Mapping[str, Sequence[Report | None]]  # status key -> its reports in order; None: gone
StatusDecoder = Callable[[str, bytes | None], tuple[str, str] | None]


def restart_figure(system: str) -> str:
    return f"{system} restart of a worker holding N units to all RUNNING"


def stop_figure(system: str) -> str:
    return f"{system} clean stop of that worker, before the restart"


def killed_figure(system: str) -> str:
    return f"{system} stops not over in {STOP_DEADLINE_S:.0f} s, so killed"


def create_figure(system: str) -> str:
    return f"{system} create N units to all RUNNING on one worker"


def stopped_figure(system: str) -> str:
    return f"{system} units stopped after RUNNING on the restarted worker"


class System(Protocol):
    """What the workload needs of a runtime whose second worker is already stopped."""

    @property
    def name(self) -> str: ...
    @property
    def status_topic(self) -> str: ...
    @property
    def file_sink(self) -> str:
        """The connector.class of its file sink (``rebalance.System.file_sink``)."""
        ...

    @property
    def worker_id(self) -> str:
        """The id the first worker writes in its status records."""
        ...

    def create(self, name: str, config: Mapping[str, str]) -> None: ...
    def delete(self, name: str) -> None: ...
    def stop_worker(self) -> None:
        """Stops the first worker with SIGTERM, and with SIGKILL if it is still there after
        ``STOP_DEADLINE_S``; returns once its process has exited."""
        ...

    def start_worker(self) -> None:
        """Starts the first worker unless it runs; returns once it is ready."""
        ...

    def decode(self, key: str, value: bytes | None) -> tuple[str, str] | None:
        """(state, worker id) of a status record; None for a tombstone."""
        ...


@dataclass
class Headrace(rebalance.Headrace):
    """rebalance's headrace (status topic, create, delete, decode), restarting its first worker."""

    worker_id: str = "worker-1"

    def stop_worker(self) -> None:
        self.env.stack.stop(self.worker_id, timeout=STOP_DEADLINE_S)

    def start_worker(self) -> None:
        self.env.stack.start(self.worker_id)


@dataclass
class Connect(rebalance.Connect):
    """rebalance's Connect (status topic, delete, decode), restarting its first worker."""

    @property
    def worker_id(self) -> str:
        return f"127.0.0.1:{self.cluster.members[0].port}"

    def create(self, name: str, config: Mapping[str, str]) -> None:
        # Until its group has rebalanced after the second worker left, the first may forward a
        # create to the second as the leader it was, and answer 500 on a refused connection:
        # nothing was created, so the call is retried, as ConnectWorker.call retries a 409.
        deadline = time.monotonic() + REBALANCE_RETRY_S
        while True:
            try:
                self.cluster.create(name, config)
            except RestError as exc:
                if FORWARD_REFUSED not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(REST_RETRY_S)
            else:
                return

    def stop_worker(self) -> None:
        # Not ConnectWorker.stop: it kills a worker still stopping after 30 s, and a worker
        # holding 1,000 units on two cores can take longer than that to stop cleanly.
        first = self.cluster.members[0]
        assert first.pid is not None, "the first worker is not running"
        os.kill(first.pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_DEADLINE_S
        while first.failed() is None and time.monotonic() < deadline:
            time.sleep(STOP_POLL_S)
        first.kill()  # a no-op once it has exited; reaps it either way

    def start_worker(self) -> None:
        first = self.cluster.members[0]
        if first.pid is None or first.failed() is not None:  # not while it runs: a second JVM
            first.start()


def unit_keys(names: Sequence[str]) -> list[str]:
    """The status keys of the connectors' units, the same on both systems."""
    return [
        key
        for name in names
        for key in (
            f"status-connector-{name}",
            *(f"status-task-{name}-{t}" for t in range(TASKS)),
        )
    ]


def running_on(report: Report | None, worker: str) -> bool:
    return report is not None and report[0] == RUNNING and report[1] == worker


def all_running(history: History, worker: str) -> bool:
    return all(reports and running_on(reports[-1], worker) for reports in history.values())


def all_gone(history: History) -> bool:
    return all(reports and reports[-1] is None for reports in history.values())


def running_since(reports: Sequence[Report | None], worker: str) -> int:
    """When the unit was last put RUNNING on ``worker`` (ms): the first of its trailing reports
    that are all RUNNING there. Its last report must be one."""
    since = -1
    for report in reversed(reports):
        if report is None or not running_on(report, worker):
            break
        since = report[2]
    assert since >= 0, "the unit's last report is not RUNNING on the worker"
    return since


def all_running_at(history: History, worker: str) -> int:
    """When the last unit was put RUNNING on ``worker`` for good (ms)."""
    return max(running_since(reports, worker) for reports in history.values())


def stopped_after_running(history: History, worker: str) -> int:
    """Units that were RUNNING on ``worker`` and were then reported otherwise."""
    return sum(
        any(
            running_on(report, worker) and not running_on(later, worker)
            for i, report in enumerate(reports)
            for later in reports[i + 1 :]
        )
        for reports in history.values()
    )


async def follow(
    bootstrap: str,
    since: Mapping[TopicPartition, int],
    decode: StatusDecoder,
    keys: Sequence[str],
    done: Callable[[History], bool],
    *,
    from_ms: int = 0,
    deadline_s: float,
    what: str,
) -> History:
    """Reads the status records of ``keys`` written after the offsets ``since`` and stamped at
    or after ``from_ms``, until ``done`` says so of what has been read; their reports by key."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False
    )
    await consumer.start()
    history: dict[str, list[Report | None]] = {key: [] for key in keys}
    try:
        consumer.assign(list(since))
        for partition, offset in since.items():
            consumer.seek(partition, offset)
        deadline = time.monotonic() + deadline_s
        while not done(history):
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what}: not done in {deadline_s}s: {history_tail(history)}")
            batch = await consumer.getmany(timeout_ms=200)
            for record in (r for records in batch.values() for r in records):
                key = record.key.decode() if record.key else ""
                if key in history and record.timestamp >= from_ms:
                    found = decode(key, record.value)
                    history[key].append(None if found is None else (*found, record.timestamp))
    finally:
        await consumer.stop()
    return history


def history_tail(history: History) -> str:
    """How many units each last report stands for, for an error message."""
    counts: dict[str, int] = {}
    for reports in history.values():
        last = (
            "no report" if not reports else "gone" if reports[-1] is None else str(reports[-1][:2])
        )
        counts[last] = counts.get(last, 0) + 1
    return ", ".join(f"{n} {last}" for last, n in sorted(counts.items()))


def sink_config(system: System, topic: str, file: Path) -> dict[str, str]:
    return {
        "connector.class": system.file_sink,
        "tasks.max": str(TASKS),
        "topics": topic,
        "file": str(file),
        "key.converter": STRING_CONVERTER,
        "value.converter": STRING_CONVERTER,
    }


def delete_all(bootstrap: str, system: System, names: Sequence[str]) -> None:
    """Deletes the connectors and waits for each of their units' tombstones."""
    if not names:
        return
    since = asyncio.run(raw.end_offsets(bootstrap, system.status_topic))
    for name in names:
        system.delete(name)
    asyncio.run(
        follow(
            bootstrap,
            since,
            system.decode,
            unit_keys(names),
            all_gone,
            deadline_s=DELETE_DEADLINE_S,
            what=f"{system.name}: deleting {len(names)} connectors",
        )
    )


def until_running(
    bootstrap: str,
    system: System,
    since: Mapping[TopicPartition, int],
    keys: Sequence[str],
    *,
    from_ms: int = 0,
    deadline_s: float,
    what: str,
) -> History:
    """The units' reports after ``since`` (stamped from ``from_ms``), read until every unit is
    RUNNING on the system's first worker."""
    worker = system.worker_id
    return asyncio.run(
        follow(
            bootstrap,
            since,
            system.decode,
            keys,
            lambda history: all_running(history, worker),
            from_ms=from_ms,
            deadline_s=deadline_s,
            what=f"{system.name}: {what}",
        )
    )


def create_all(
    env: BenchEnv, system: System, names: Sequence[str], folder: Path, created: list[str]
) -> float:
    """Creates the connectors, one after another, each a file sink over one idle topic, and
    appends each to ``created``; seconds from the first create call to every unit RUNNING."""
    topic = env.fresh("idle")
    asyncio.run(ensure_topic(env.bootstrap, topic, TASKS))
    since = asyncio.run(raw.end_offsets(env.bootstrap, system.status_topic))
    started = time.time()
    for name in names:
        system.create(name, sink_config(system, topic, folder / f"{name}.out"))
        created.append(name)
    keys = unit_keys(names)
    history = until_running(
        env.bootstrap, system, since, keys, deadline_s=CREATE_DEADLINE_S, what="creating"
    )
    return all_running_at(history, system.worker_id) / 1000 - started


def restart(env: BenchEnv, system: System, keys: Sequence[str]) -> dict[str, float]:
    """Stops the first worker, which holds every unit, and starts it again; the figures."""
    since = asyncio.run(raw.end_offsets(env.bootstrap, system.status_topic))
    stopping = time.time()
    system.stop_worker()
    started = time.time()
    system.start_worker()
    history = until_running(
        env.bootstrap,
        system,
        since,
        keys,
        from_ms=int(started * 1000),  # none of the old process's records: it had exited
        deadline_s=RESTART_DEADLINE_S,
        what=f"restarting {system.worker_id}",
    )
    return {
        restart_figure(system.name): all_running_at(history, system.worker_id) / 1000 - started,
        stop_figure(system.name): started - stopping,
        killed_figure(system.name): float(started - stopping >= STOP_DEADLINE_S),
        stopped_figure(system.name): stopped_after_running(history, system.worker_id),
    }


def measure(env: BenchEnv, system: System, connectors: int, folder: Path) -> dict[str, float]:
    """One system's figures for its first worker holding ``connectors`` connectors' units. The
    connectors are deleted on the way out, failure or not."""
    prefix = env.fresh("restart")
    names = [f"{prefix}-{i:03d}" for i in range(connectors)]
    created: list[str] = []
    with ExitStack() as cleanup:
        cleanup.callback(delete_all, env.bootstrap, system, created)
        cleanup.callback(system.start_worker)  # first: a failed restart leaves no one to delete
        figures = {create_figure(system.name): create_all(env, system, names, folder, created)}
        return figures | restart(env, system, unit_keys(names))


class Restart:
    name = "restart"
    description = "a worker holding N units restarted: process start to all RUNNING again"
    measures: Mapping[str, Measure] = {
        **{restart_figure(s): Measure("s", higher_is_better=False) for s in SYSTEMS},
        **{stop_figure(s): Measure("s", False) for s in SYSTEMS},
        **{killed_figure(s): Measure("stops", False) for s in SYSTEMS},
        **{stopped_figure(s): Measure("units", False) for s in SYSTEMS},
        **{create_figure(s): Measure("s", False) for s in SYSTEMS},
    }
    ratios: tuple[tuple[str, str], ...] = (
        (restart_figure(SYSTEMS[0]), restart_figure(SYSTEMS[1])),
    )
    max_repeats = 3

    def parameters(self, smoke: bool) -> dict[str, object]:
        connectors = SMOKE_CONNECTORS if smoke else CONNECTORS
        return {
            "N": connectors * UNITS_PER_CONNECTOR,
            "connectors": connectors,
            "tasks": TASKS,
            "workers": 2,
        }

    def run_once(self, env: BenchEnv, parameters: Mapping[str, object]) -> dict[str, float]:
        connectors = int(str(parameters["connectors"]))
        files = env.stack.settings.file_roots[0]
        files.mkdir(parents=True, exist_ok=True)
        return env.each_system(
            partial(self._headrace, env, connectors, files),
            partial(self._connect, env, connectors, files),
        )

    def _headrace(self, env: BenchEnv, connectors: int, files: Path) -> dict[str, float]:
        env.stack.stop("worker-2")
        try:
            with ConfigClient(env.stack.settings.config_addr, env.stack.settings) as client:
                return measure(env, Headrace(env, client), connectors, files)
        finally:
            env.stack.start("worker-1")  # a no-op unless its restart failed
            env.stack.start("worker-2")

    def _connect(self, env: BenchEnv, connectors: int, files: Path) -> dict[str, float]:
        cluster = rebalance.kept_cluster(env, "restart")
        second = cluster.members[1]
        second.stop()
        try:
            return measure(env, Connect(cluster), connectors, files)
        finally:
            cluster.members[0].restart()  # a no-op unless its restart failed
            second.restart()
