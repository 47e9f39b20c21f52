"""Unit lifecycles in the plugin process, with fake runners and connectors (no I/O)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest

from headrace.core.model.plugins import PluginDescriptor
from headrace.core.model.structs import (
    DeletionHeard,
    HostEvent,
    ReconfigurationRequested,
    State,
    TopicUsed,
    UnitStateChanged,
    WorkUnit,
)
from headrace.core.settings import Settings
from headrace.runtime.host.events import EventBus
from headrace.runtime.host.hosted import HostClosing, HostedPlugin, UnitConflict, no_stored_offsets
from headrace.runtime.host.units import ConnectorUnit, TaskUnit
from headrace.sdk import (
    ConfigDef,
    ConfigException,
    ConfigType,
    ConnectError,
    ExactlyOnceSupport,
    SourceConnector,
    SourceRecord,
    SourceTask,
)
from tests.support import eventually


class Bus(EventBus):
    def __init__(self) -> None:
        super().__init__()
        self.seen: list[HostEvent] = []

    def publish(self, event: HostEvent) -> None:
        self.seen.append(event)
        super().publish(event)

    def states(self) -> list[State | ReconfigurationRequested | TopicUsed | DeletionHeard]:
        """The state of every change, and reconfiguration requests as they are."""
        return [e.state if isinstance(e, UnitStateChanged) else e for e in self.seen]


class Task(SourceTask):
    def __init__(self, calls: list[str], hang_stop: bool = False) -> None:
        self.calls, self.hang_stop = calls, hang_stop

    async def start(self, config: Mapping[str, str]) -> None:
        self.calls.append("task.start")

    async def poll(self) -> list[SourceRecord]:
        return []

    async def stop(self, deleted: bool = False) -> None:
        self.calls.append(f"task.stop(deleted={deleted})")
        if self.hang_stop:
            await asyncio.Event().wait()


class Runner:
    """Stands in for SourceRunner/SinkRunner."""

    def __init__(
        self,
        fail_start: bool = False,
        fail_run: bool = False,
        ignore_stop: bool = False,
        hang_stop: bool = False,
        hang_start: bool = False,
    ) -> None:
        self.hang_start = hang_start
        self.hanging = False  # its start is under way and will not return
        self.calls: list[str] = []
        self.task = Task(self.calls, hang_stop)
        self.fail_start, self.fail_run, self.ignore_stop = fail_start, fail_run, ignore_stop
        self.stopping = asyncio.Event()
        self.closed = asyncio.Event()
        self.close_waits = False  # its close waits for ``closed`` (a consumer leaving its group)

    async def start(self, loop: bool = True) -> None:
        if self.fail_start:
            raise RuntimeError("cannot start")
        if self.hang_start:
            self.hanging = True
            await asyncio.Event().wait()
        await self.task.start({})

    async def run(self) -> None:
        if self.fail_run:
            raise RuntimeError("loop broke")
        await (asyncio.Event() if self.ignore_stop else self.stopping).wait()

    def request_stop(self) -> None:
        self.calls.append("request_stop")
        self.stopping.set()

    async def finish(self) -> None:
        self.calls.append("finish")

    async def close(self) -> None:
        self.calls.append("close")
        if self.close_waits:
            await self.closed.wait()

    def forget_topics(self) -> None:
        self.calls.append("forget_topics")


def unit(runner: Runner, bus: Bus, stop_timeout: float = 5.0) -> TaskUnit:
    return TaskUnit(WorkUnit("c", 0), runner, bus, stop_timeout, {})


async def test_a_graceful_stop_finishes_then_stops_the_task_once_then_closes() -> None:
    runner, bus = Runner(), Bus()
    task = unit(runner, bus)
    await task.start()
    await task.stop(deleted=True)
    assert runner.calls == [
        "task.start",
        "request_stop",
        "finish",
        "task.stop(deleted=True)",
        "close",
    ]
    assert bus.states() == [State.RUNNING, DeletionHeard(WorkUnit("c", 0)), State.STOPPED]


async def test_a_deletion_heard_is_said_before_the_task_s_clients_are_closed() -> None:
    """Found by the nemesis (seed 20261128): a task's plugin returned from stop(deleted=True),
    its consumer then took seconds to leave its group, and its worker, killed meanwhile, had
    not heard that the deletion was told: the plugin was told again, in another process."""
    runner, bus = Runner(), Bus()
    runner.close_waits = True
    task = unit(runner, bus)
    await task.start()
    stopping = asyncio.create_task(task.stop(deleted=True))
    await eventually("the deletion heard", lambda: DeletionHeard(task.unit) in bus.seen)
    assert runner.calls[-2:] == ["task.stop(deleted=True)", "close"] and not stopping.done()
    runner.closed.set()
    await stopping
    assert bus.states()[-1] is State.STOPPED


async def test_a_stop_without_the_deletion_says_nothing_of_one() -> None:
    runner, bus = Runner(), Bus()
    task = unit(runner, bus)
    await task.start()
    await task.stop(deleted=False)
    assert bus.states() == [State.RUNNING, State.STOPPED]


@pytest.mark.parametrize("failure", ["fail_start", "fail_run"])
async def test_a_failed_task_reports_its_trace_and_is_still_stopped_once(failure: str) -> None:
    runner, bus = Runner(**{failure: True}), Bus()
    task = unit(runner, bus)
    await task.start()
    await asyncio.sleep(0)  # let the loop run into its error
    failed = [e for e in bus.seen if isinstance(e, UnitStateChanged) and e.state is State.FAILED]
    assert len(failed) == 1 and "RuntimeError" in failed[0].trace
    await task.stop(deleted=False)
    assert "finish" not in runner.calls  # nothing of a failed task is committed
    assert runner.calls.count("task.stop(deleted=False)") == 1 and runner.calls[-1] == "close"


async def test_hung_plugin_calls_are_abandoned_after_the_stop_timeout() -> None:
    runner, bus = Runner(ignore_stop=True, hang_stop=True), Bus()
    task = unit(runner, bus, stop_timeout=0.05)
    await task.start()
    await task.stop(deleted=True)
    assert "finish" not in runner.calls  # the loop never ended: its batch may be half done
    assert runner.calls[-2:] == ["task.stop(deleted=True)", "close"]
    assert bus.states()[-1] is State.STOPPED


class Connector(SourceConnector):
    stop_calls: list[bool]

    async def start(self, config: Mapping[str, str]) -> None:
        self.stop_calls = []
        if config.get("reconfigure"):
            self.context.request_task_reconfiguration()
        self.count = int(config.get("count", "1"))

    def task_class(self) -> type[SourceTask]:
        return Task

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{"k": str(k)} for k in range(self.count)]

    async def stop(self, deleted: bool = False) -> None:
        self.stop_calls.append(deleted)

    def config(self) -> ConfigDef:
        return ConfigDef().define("count", ConfigType.INT, 1)


async def test_connector_start_returns_task_configs_and_stop_passes_the_flag() -> None:
    bus, connector = Bus(), Connector()
    unit = ConnectorUnit("c", connector, {"tasks.max": "3", "count": "2"}, bus, 1.0)
    assert await unit.start() == [{"k": "0"}, {"k": "1"}]
    await unit.stop(deleted=True)
    assert connector.stop_calls == [True]
    assert bus.states() == [State.RUNNING, DeletionHeard(WorkUnit.of("c")), State.STOPPED]


class Stored:
    """Stored offsets: task 0 of two finished (a file read to its end, say)."""

    def offset(self, partition: Mapping[str, Any]) -> dict[str, Any] | None:
        return {"done": True} if partition == {"task": 0} else None

    def offsets(
        self, partitions: Sequence[Mapping[str, Any]]
    ) -> list[tuple[Mapping[str, Any], dict[str, Any] | None]]:
        return [(p, self.offset(p)) for p in partitions]


class Resuming(Connector):
    """Leaves out the work its stored offsets say is done (KIP-131's connector reader)."""

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        reader = self.context.offset_reader
        return [{"k": str(k)} for k in range(self.count) if reader.offset({"task": k}) is None]


async def test_a_source_connector_reads_its_stored_offsets_as_it_starts() -> None:
    async def stored() -> Stored:
        return Stored()

    config = {"tasks.max": "2", "count": "2"}
    assert await ConnectorUnit("c", Resuming(), config, Bus(), 1.0).start() == [
        {"k": "0"},
        {"k": "1"},
    ]  # without a reader: none stored
    unit = ConnectorUnit("c", Resuming(), config, Bus(), 1.0, stored_offsets=stored)
    assert await unit.start() == [{"k": "1"}]


async def test_a_connector_whose_offsets_cannot_be_read_fails() -> None:
    async def unreadable() -> Stored:
        raise ConnectError("the offsets topic was not read whole")

    bus = Bus()
    unit = ConnectorUnit("c", Resuming(), {"count": "1"}, bus, 1.0, stored_offsets=unreadable)
    with pytest.raises(ConnectError):
        await unit.start()
    assert bus.states() == [State.FAILED]


@pytest.mark.parametrize("config", [{"count": "x"}, {"tasks.max": "0"}, {"tasks.max": "a"}])
async def test_connector_config_errors_are_config_exceptions(config: dict[str, str]) -> None:
    bus = Bus()
    with pytest.raises(ConfigException):
        await ConnectorUnit("c", Connector(), config, bus, 1.0).start()
    assert bus.states() == [State.FAILED]


async def test_more_task_configs_than_tasks_max_fail_the_connector() -> None:
    with pytest.raises(RuntimeError, match=r"more than tasks\.max"):
        await ConnectorUnit("c", Connector(), {"count": "2"}, Bus(), 1.0).start()


async def test_with_tasks_max_enforce_false_every_task_config_runs() -> None:
    config = {"count": "3", "tasks.max": "2", "tasks.max.enforce": "false"}
    unit = ConnectorUnit("c", Connector(), config, Bus(), 1.0)
    assert await unit.start() == [{"k": "0"}, {"k": "1"}, {"k": "2"}]


async def test_a_reconfiguration_request_is_an_event() -> None:
    bus = Bus()
    await ConnectorUnit("c", Connector(), {"reconfigure": "yes"}, bus, 1.0).start()
    assert bus.states() == [ReconfigurationRequested("c"), State.RUNNING]


def plugin() -> HostedPlugin:
    descriptor = PluginDescriptor("x.Connector", "1.0.0", "source", "m", "a", Path("."))
    return HostedPlugin(
        descriptor, Connector, Settings(bootstrap_servers="unused:1"), 1.0, no_stored_offsets
    )


async def test_starting_a_connector_again_is_harmless_unless_its_config_changed() -> None:
    host = plugin()
    first = await host.start_connector("c", {"count": "1"})
    assert await host.start_connector("c", {"count": "1"}) == first
    with pytest.raises(UnitConflict):
        await host.start_connector("c", {"count": "2", "tasks.max": "2"})
    assert await host.stop_connector("c", deleted=True)
    assert not await host.stop_connector("c", deleted=True)  # unknown by now: nothing happens
    assert not await host.stop_task(WorkUnit("c", 3), deleted=True)


async def test_nothing_starts_once_the_host_shuts_down() -> None:
    host = plugin()
    await host.start_connector("c", {})
    await host.shutdown()
    with pytest.raises(HostClosing):
        await host.start_connector("d", {})


async def test_a_config_that_sets_config_providers_is_refused_before_any_plugin_code() -> None:
    """The config service refuses it first; a plugin process refuses it too, before any of
    the plugin's code (or a component's) is configured with it."""
    started: list[Mapping[str, str]] = []

    class Counted(Connector):
        async def start(self, config: Mapping[str, str]) -> None:
            started.append(config)
            await super().start(config)

    descriptor = PluginDescriptor("x.Connector", "1.0.0", "source", "m", "a", Path("."))
    host = HostedPlugin(
        descriptor, Counted, Settings(bootstrap_servers="unused:1"), 1.0, no_stored_offsets
    )
    unsafe = {"value.converter.config.providers": "_e", "count": "1"}
    for call in (
        lambda: host.start_connector("c", unsafe),
        lambda: host.start_task(WorkUnit("c", 0), unsafe, {}),
        lambda: host.start_task(WorkUnit("c", 0), {}, unsafe),
    ):
        with pytest.raises(ConfigException, match="CVE-2024-31141"):
            await call()
    with pytest.raises(ConfigException, match=r"value\.converter\.config\.providers"):
        host.validate(unsafe)
    assert started == []
    await host.start_connector("c", {"count": "1"})
    assert started == [{"count": "1"}]  # a safe one starts


class EveryRecordOnce(Connector):
    def exactly_once_support(self, config: Mapping[str, str]) -> ExactlyOnceSupport:
        return ExactlyOnceSupport.SUPPORTED


async def test_exactly_once_required_of_a_connector_that_does_not_say_it_fails_it() -> None:
    required = {"exactly.once.support": "required"}
    bus = Bus()
    with pytest.raises(ConfigException, match=r"exactly\.once\.support: required, but"):
        await ConnectorUnit("c", Connector(), required, bus, 1.0).start()
    assert bus.states() == [State.FAILED]
    assert await ConnectorUnit("c", EveryRecordOnce(), required, Bus(), 1.0).start()


async def test_a_task_start_its_caller_gave_up_on_is_made_anew_by_the_next_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Seen in a nemesis run (seed 302): a task's start waited past the worker's deadline; the
    worker's next start of it was answered at once, and the task never ran."""
    host = plugin()
    runners = [Runner(hang_start=True), Runner()]
    made = iter(runners)
    monkeypatch.setattr(
        host, "_task_unit", lambda u, _c, task: TaskUnit(u, next(made), host.bus, 1.0, task)
    )
    first = asyncio.create_task(host.start_task(WorkUnit("c", 0), {}, {}))
    await eventually("the first start hangs", lambda: runners[0].hanging, within=5.0)
    first.cancel()  # the gRPC call's deadline passed
    with pytest.raises(asyncio.CancelledError):
        await first
    await host.start_task(WorkUnit("c", 0), {}, {})
    assert runners[1].calls == ["task.start"]
    await host.stop_task(WorkUnit("c", 0), deleted=False)


class HangsFirst(Connector):
    """The first instance's start never returns; later ones start at once."""

    started: ClassVar[list[str]] = []

    async def start(self, config: Mapping[str, str]) -> None:
        await super().start(config)
        if not self.started:
            self.started.append("hung")
            await asyncio.Event().wait()
        self.started.append("started")


async def test_a_connector_start_its_caller_gave_up_on_is_made_anew_by_the_next_start() -> None:
    descriptor = PluginDescriptor("x.Connector", "1.0.0", "source", "m", "a", Path("."))
    host = HostedPlugin(
        descriptor, HangsFirst, Settings(bootstrap_servers="unused:1"), 1.0, no_stored_offsets
    )
    HangsFirst.started.clear()
    first = asyncio.create_task(host.start_connector("c", {"count": "2", "tasks.max": "2"}))
    await eventually("the first start hangs", lambda: HangsFirst.started == ["hung"], within=5.0)
    first.cancel()  # the gRPC call's deadline passed
    with pytest.raises(asyncio.CancelledError):
        await first
    assert await host.start_connector("c", {"count": "2", "tasks.max": "2"}) == [
        {"k": "0"},
        {"k": "1"},
    ]
    assert HangsFirst.started == ["hung", "started"]
    await host.stop_connector("c", deleted=True)
