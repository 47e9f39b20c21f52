"""The worker starts and stops units concurrently, within a bound, in Kafka Connect's order.

The plugin processes are fakes that count the calls in flight: what is checked is how many calls
overlap and in which order they begin and end, never how long anything takes.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from headrace.core.model.plugins import PluginCatalog, PluginDescriptor
from headrace.core.model.structs import AssignedUnit, AssignmentUpdate, Revocation, State, WorkUnit
from headrace.core.settings import Settings
from headrace.core.storage.stores import StatusStore
from headrace.core.storage.topiclog import MemoryTopic, memory_logs
from headrace.isolation.supervisor import plugin_key
from headrace.worker import worker as worker_module
from headrace.worker.starting import MAX_CONCURRENT_UNIT_CALLS, for_each
from headrace.worker.worker import Worker, build_worker, stop_rounds

GEN = PluginDescriptor("gen.GenConnector", "1.0.0", "source", "gen", "GenConnector", Path("/gen"))
SINK = PluginDescriptor("out.OutConnector", "2.0.0", "sink", "out", "OutConnector", Path("/out"))
TASKS = 3


class InFlight:
    """Counts overlapping calls and records when each began and ended."""

    def __init__(self) -> None:
        self.now = 0
        self.peak = 0
        self.events: list[tuple[str, str, WorkUnit]] = []

    async def call(self, name: str, unit: WorkUnit) -> None:
        self.now += 1
        self.peak = max(self.peak, self.now)
        self.events.append(("begin", name, unit))
        for _ in range(3):  # hand the loop to the other calls, as an RPC would
            await asyncio.sleep(0)
        self.events.append(("end", name, unit))
        self.now -= 1

    def index(self, edge: str, name: str, unit: WorkUnit) -> int:
        return self.events.index((edge, name, unit))


class FakeHost:
    """A plugin process's client, answering at once."""

    def __init__(self, calls: InFlight) -> None:
        self.calls = calls

    async def start_connector(
        self, name: str, config: Mapping[str, str], **_: object
    ) -> list[dict[str, str]]:
        await self.calls.call("start", WorkUnit.of(name))
        return [{}] * TASKS

    async def start_task(self, unit: WorkUnit, *_: object, **__: object) -> None:
        await self.calls.call("start", unit)

    async def stop(self, unit: WorkUnit, **_: object) -> bool:
        await self.calls.call("stop", unit)
        return True


class FakeTaskConfigs:
    """Takes task configs as the config service would, having them already."""

    def start(self) -> None:
        pass

    async def put(
        self, name: str, tasks: Sequence[Mapping[str, str]], incarnation: str, version: int
    ) -> None:
        pass

    async def close(self) -> None:
        pass


def fake_processes(calls: InFlight, spawned: Counter[str]) -> Callable[..., Any]:
    """A stand-in for ``PluginProcess`` that counts how often each plugin's process starts."""

    class FakeProcess:
        def __init__(self, plugin: PluginDescriptor, *_: object) -> None:
            self.key = plugin_key(plugin)
            self.plugin = plugin
            self.client: FakeHost | None = None

        async def start(self, **__: object) -> None:
            spawned[self.key] += 1
            for _ in range(3):  # a start that yields, so that racing starts would both spawn
                await asyncio.sleep(0)
            self.client = FakeHost(calls)

        async def stop(self) -> None:
            self.client = None

    return FakeProcess


@pytest.fixture
def calls() -> InFlight:
    return InFlight()


@pytest.fixture
def spawned() -> Counter[str]:
    return Counter()


@pytest.fixture
def status_topic() -> MemoryTopic:
    return MemoryTopic("status")


async def opened(
    settings: Settings, calls: InFlight, spawned: Counter[str], status: MemoryTopic, folder: Path
) -> Worker:
    """A worker of fake plugin processes, whose status goes to ``status``."""
    topics = {"status": status, "configs": MemoryTopic("configs")}
    topics["assignments"] = MemoryTopic("assignments")
    worker = build_worker(
        settings,
        "w1",
        PluginCatalog((GEN, SINK)),
        folder,
        folder,
        logs=lambda role: memory_logs(topics[role]),
        launch=fake_processes(calls, spawned),
        task_configs=FakeTaskConfigs(),
    )
    await worker.open()
    return worker


@pytest.fixture
async def worker(
    calls: InFlight, spawned: Counter[str], status_topic: MemoryTopic, tmp_path: Path
) -> Worker:
    settings = Settings(
        config_addr="127.0.0.1:1", coordinator_addr="127.0.0.1:1", plugin_spare="off"
    )  # no plugin process: none kept spare
    return await opened(settings, calls, spawned, status_topic, tmp_path)


def units_of(name: str) -> Iterator[WorkUnit]:
    yield WorkUnit.of(name)
    yield from (WorkUnit(name, t) for t in range(TASKS))


def assignment(generation: int, connectors: dict[str, str]) -> AssignmentUpdate:
    """Every unit of each connector (name: connector.class) on this worker."""
    return AssignmentUpdate(
        generation,
        tuple(
            AssignedUnit(unit, {"connector.class": cls}, {} if unit.is_connector else {"t": "x"})
            for name, cls in connectors.items()
            for unit in units_of(name)
        ),
    )


async def statuses(topic: MemoryTopic) -> dict[WorkUnit, State]:
    reader = StatusStore(memory_logs(topic))
    await reader.start(writer=False)
    return {unit: status.state for unit, status in (await reader.current()).items()}


async def test_for_each_overlaps_calls_up_to_its_limit(calls: InFlight) -> None:
    units = [WorkUnit("c", t) for t in range(20)]
    await for_each(lambda unit: calls.call("start", unit), units, limit=5)
    assert 1 < calls.peak <= 5
    assert sorted(u for edge, _, u in calls.events if edge == "end") == units


async def test_for_each_finishes_every_call_before_raising_the_failures(calls: InFlight) -> None:
    async def start(unit: WorkUnit) -> None:
        await calls.call("start", unit)
        if unit.task % 2:
            raise RuntimeError(f"unit {unit} broke")

    units = [WorkUnit("c", t) for t in range(6)]
    with pytest.raises(ExceptionGroup) as raised:
        await for_each(start, units, limit=2)
    assert len(raised.value.exceptions) == 3
    assert calls.now == 0 and len(calls.events) == 2 * len(units)


def test_stops_run_as_every_task_then_every_connector() -> None:
    stops = [Revocation(u) for u in (WorkUnit("a", 1), WorkUnit.of("b"), WorkUnit("b", 0))]
    stops.append(Revocation(WorkUnit.of("a"), deleted=True))
    tasks, connectors = stop_rounds(stops)
    assert tasks == [Revocation(WorkUnit("a", 1)), Revocation(WorkUnit("b", 0))]
    assert connectors == [Revocation(WorkUnit.of("b")), Revocation(WorkUnit.of("a"), True)]


async def test_units_start_concurrently_with_one_process_per_plugin_version(
    worker: Worker, calls: InFlight, spawned: Counter[str], status_topic: MemoryTopic
) -> None:
    gens = {f"g{i}": "GenConnector" for i in range(12)}
    sinks = {f"s{i}": "out.OutConnector" for i in range(12)}
    await worker._apply(assignment(1, {**gens, **sinks, "lost": "NoSuchConnector"}))

    assert spawned == {"gen.GenConnector-1.0.0": 1, "out.OutConnector-2.0.0": 1}
    assert 1 < calls.peak <= MAX_CONCURRENT_UNIT_CALLS
    started = {u for edge, _, u in calls.events if edge == "end"}
    assert started == {u for name in {**gens, **sinks} for u in units_of(name)}
    states = await statuses(status_topic)
    assert {u for u, s in states.items() if s is State.FAILED} == set(units_of("lost"))
    assert Counter(states.values())[State.RUNNING] == len(started)
    assert set(worker.running) == set(states)


async def test_tasks_stop_concurrently_and_before_their_connector(
    worker: Worker, calls: InFlight, status_topic: MemoryTopic
) -> None:
    names = [f"c{i}" for i in range(15)]
    await worker._apply(assignment(1, dict.fromkeys(names, "GenConnector")))
    calls.events.clear()
    calls.peak = 0

    await worker._apply(assignment(2, {}))

    assert 1 < calls.peak <= MAX_CONCURRENT_UNIT_CALLS
    for name in names:
        connector = WorkUnit.of(name)
        began = calls.index("begin", "stop", connector)
        assert all(calls.index("end", "stop", u) < began for u in units_of(name) if u != connector)
    assert worker.running == {}
    assert set((await statuses(status_topic)).values()) == {State.UNASSIGNED}


async def test_a_plugin_process_left_without_units_is_stopped_once_idle_and_others_stay(
    calls: InFlight, spawned: Counter[str], status_topic: MemoryTopic, tmp_path: Path
) -> None:
    settings = Settings(
        config_addr="127.0.0.1:1",
        coordinator_addr="127.0.0.1:1",
        plugin_spare="off",
        plugin_idle_stop_s=0.0,
    )
    worker = await opened(settings, calls, spawned, status_topic, tmp_path)
    await worker._handle(
        worker_module.Assigned(assignment(1, {"g": "GenConnector", "s": "out.OutConnector"}), 0)
    )
    gen = worker.processes.get("gen.GenConnector-1.0.0")
    sink = worker.processes.get("out.OutConnector-2.0.0")
    assert gen is not None and sink is not None
    # The sink connector moves away: its process runs nothing here now.
    revoked = AssignmentUpdate(
        2,
        assignment(2, {"g": "GenConnector"}).units,
        revoked=tuple(Revocation(u) for u in units_of("s")),
    )
    await worker._handle(worker_module.Assigned(revoked, 0))
    check = await asyncio.wait_for(worker._queue.get(), timeout=5)
    assert check == worker_module.IdleCheck(sink)
    await worker._handle(check)
    assert len(worker.processes) == 1 and worker.processes.get(gen.key) is gen
    assert sink.client is None and gen.client is not None
    # It comes back when a unit needs it again.
    await worker._handle(
        worker_module.Assigned(assignment(3, {"g": "GenConnector", "s": "out.OutConnector"}), 0)
    )
    assert spawned == {"gen.GenConnector-1.0.0": 1, "out.OutConnector-2.0.0": 2}
    assert worker._queue.empty()
