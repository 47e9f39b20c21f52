"""Starting the units a worker is assigned: each resolved to the plugin version its config
runs, held (PAUSED or STOPPED) or started in that version's plugin process, and reported
RUNNING, or FAILED with why. A connector's start answers its task configs, which go to the
config service; one that asks for its tasks to be reconfigured is started again, running as it
is, for them.

Within one assignment the units start concurrently, at most ``MAX_CONCURRENT_UNIT_CALLS`` at a
time, once the plugin processes they need are up, each started once however many of its units
start.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Awaitable, Callable, Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from structlog.typing import FilteringBoundLogger

from headrace.clients.taskconfigs import TaskConfigsGone, TaskConfigsStale
from headrace.core.model.errors import PluginError
from headrace.core.model.plugins import PluginCatalog, PluginDescriptor
from headrace.core.model.structs import AssignedUnit, Cleanup, State, Target, WorkUnit
from headrace.isolation.live import LivePlugins
from headrace.isolation.supervisor import PluginProcess, plugin_key
from headrace.worker.processes import (
    CALL_TIMEOUT_S,
    START_ERRORS,
    Host,
    PluginProcesses,
    resolve,
)

# How many units one event starts or stops at once. A start or a stop mostly waits (on its plugin
# process, on Kafka, on the config service), so one at a time leaves the CPU idle; all at once, a
# thousand units would open thousands of Kafka connections in one burst.
MAX_CONCURRENT_UNIT_CALLS = 32


@dataclass(frozen=True)
class Running:
    """A unit this worker was assigned, as it was assigned when it started."""

    plugin: PluginDescriptor | None
    assigned: AssignedUnit
    # The plugin process it was started in: only that one can stop it. One started since for
    # the same plugin (after the first died) never heard of it.
    host: PluginProcess | None = None

    @property
    def incarnation(self) -> str:
        return self.assigned.incarnation

    def cleanup(self) -> Cleanup:
        """What tells its plugin of its deletion: the unit, with the configs it ran with."""
        a = self.assigned
        return Cleanup(a.unit, a.incarnation, a.connector_config, a.task_config)

    @property
    def held(self) -> bool:
        """Paused or stopped by an operator: kept here, and not running in a plugin process."""
        return self.assigned.target is not Target.RUNNING


class TaskConfigs(Protocol):
    """Where a connector's task configs go: the config service (``TaskConfigsClient``)."""

    def start(self) -> None: ...

    async def put(
        self, name: str, tasks: Sequence[Mapping[str, str]], incarnation: str, version: int
    ) -> None: ...

    async def close(self) -> None: ...


class Report(Protocol):
    """How a unit's state is reported: the worker's, which knows the generation and the
    version that ran it."""

    async def __call__(
        self, unit: WorkUnit, state: State, trace: str = "", running: Running | None = None
    ) -> None: ...


T = TypeVar("T")


async def for_each(call: Callable[[T], Awaitable[None]], items: Iterable[T], limit: int) -> None:
    """Awaits ``call(item)`` for every item, at most ``limit`` at a time.

    Each call runs to its end whatever the others do; the exceptions of those that raised are
    raised together, as one group, once all have finished.
    """
    gate = asyncio.Semaphore(limit)

    async def gated(item: T) -> None:
        async with gate:
            await call(item)

    outcomes = await asyncio.gather(*(gated(item) for item in items), return_exceptions=True)
    failures = [o for o in outcomes if isinstance(o, BaseException)]
    if failures:
        raise BaseExceptionGroup("unit calls failed", failures)


class Starter:
    def __init__(
        self,
        running: MutableMapping[WorkUnit, Running],
        processes: PluginProcesses,
        live: LivePlugins,
        catalog: Callable[[], PluginCatalog],
        stale: Callable[[], bool],
        report: Report,
        task_configs: TaskConfigs,
        log: FilteringBoundLogger,
    ) -> None:
        """``running``: the worker's units, which starts add to (the worker's own mapping);
        ``catalog``, the plugins as they are now; ``stale``, whether the assignment being
        applied may be out of date (``membership.Freshness``)."""
        self._running = running
        self._processes = processes
        self._live = live
        self._catalog = catalog
        self._stale = stale
        self._report = report
        self._task_configs = task_configs
        self._log = log

    async def start_all(self, starts: Mapping[WorkUnit, AssignedUnit]) -> None:
        """Starts the units concurrently, once the plugin processes they need are up; a held
        unit is only reported (PAUSED or STOPPED)."""
        # A plugin the cluster installed before these units were assigned is here first; one
        # copied into the plugin path since the last look is read before a unit fails for it.
        await self._live.settled()
        plugins = {unit: resolve(self._catalog(), a.connector_config) for unit, a in starts.items()}
        unknown = [u for u, p in plugins.items() if isinstance(p, PluginError)]
        if unknown and await self._live.refresh():
            plugins |= {u: resolve(self._catalog(), starts[u].connector_config) for u in unknown}
        for unit, assigned in starts.items():
            plugin = plugins[unit]
            descriptor = plugin if isinstance(plugin, PluginDescriptor) else None
            self._running[unit] = Running(descriptor, assigned)
        held = {u for u, a in starts.items() if a.target is not Target.RUNNING}
        await for_each(lambda u: self.hold(u, starts[u].target), held, MAX_CONCURRENT_UNIT_CALLS)
        plugins = {u: p for u, p in plugins.items() if u not in held}
        processes = await self._processes.for_plugins(
            p for p in plugins.values() if isinstance(p, PluginDescriptor)
        )
        hosts: dict[WorkUnit, Host] = {
            unit: processes[plugin_key(p)] if isinstance(p, PluginDescriptor) else p
            for unit, p in plugins.items()
        }
        await for_each(lambda u: self.start(u, hosts[u]), plugins, MAX_CONCURRENT_UNIT_CALLS)

    async def hold(self, unit: WorkUnit, target: Target) -> None:
        """Keeps a paused or stopped unit here without running it, and says so."""
        self._log.info("unit_held", connector=unit.connector, task=unit.task, target=target.value)
        await self._report(unit, State(target.value))

    async def start(self, unit: WorkUnit, host: Host) -> None:
        """Starts one unit in its plugin process and reports RUNNING, or FAILED with why."""
        if isinstance(host, Exception):
            await self.failed(unit, host)
            return
        running = self._running.get(unit)
        if running is None:
            return  # given up meanwhile (the worker fenced itself)
        if self._stale():
            # The assignment may be stale: the unit may run elsewhere by now.
            del self._running[unit]
            await self._report(unit, State.UNASSIGNED, running=running)
            return
        try:
            await launch(host, unit, running.assigned, self._task_configs, self._log)
        except START_ERRORS as exc:
            await self.failed(unit, exc)
            return
        if self._running.get(unit) is running:
            self._running[unit] = dataclasses.replace(running, host=host)
        self._log.info(
            "unit_started", connector=unit.connector, task=unit.task, version=host.plugin.version
        )
        await self._report(unit, State.RUNNING)

    async def failed(self, unit: WorkUnit, error: Exception) -> None:
        detail = str(error)
        self._log.warning(
            "unit_start_failed", connector=unit.connector, task=unit.task, error=detail
        )
        await self._report(unit, State.FAILED, trace=detail or repr(error))

    async def reconfigure(self, unit: WorkUnit) -> None:
        """The connector wants its tasks reconfigured: as in Connect, it is asked for its task
        configs again, running as it is (a start of a running connector with its own config
        answers them), and the config service takes them when they changed. Its tasks then
        follow through the assignment, as for any new task set."""
        running = self._running[unit]
        process = self._processes.get(plugin_key(running.plugin)) if running.plugin else None
        if process is None or process.client is None:
            return  # its process is gone: the exit fails its units, and a restart starts afresh
        try:
            await launch(process, unit, running.assigned, self._task_configs, self._log)
        except START_ERRORS as exc:
            await self.failed(unit, exc)
            return
        self._log.info("task_reconfiguration_applied", connector=unit.connector)


async def launch(
    process: PluginProcess,
    unit: WorkUnit,
    assigned: AssignedUnit,
    task_configs: TaskConfigs,
    logger: FilteringBoundLogger,
) -> None:
    """Starts the unit in its plugin process; a connector's task configs then go to the config
    service."""
    assert process.client is not None
    if not unit.is_connector:
        await process.client.start_task(
            unit, assigned.connector_config, assigned.task_config, deadline_s=CALL_TIMEOUT_S
        )
        return
    tasks = await process.client.start_connector(
        unit.connector, assigned.connector_config, deadline_s=CALL_TIMEOUT_S
    )
    try:
        await task_configs.put(unit.connector, tasks, assigned.incarnation, assigned.config_version)
    except TaskConfigsStale as exc:
        # A newer config or task set is the connector's now: the assignment that carries it
        # restarts this connector with it.
        logger.info("task_configs_stale", connector=unit.connector, reason=str(exc))
    except TaskConfigsGone as exc:
        # Deleted since it was assigned here: the coordinator's next assignment stops it with
        # the deletion marker. Stopped now without it, the plugin would hear that it was
        # stopped, and then, started again, that it was deleted.
        logger.info("connector_deleted_meanwhile", connector=unit.connector, reason=str(exc))
    except START_ERRORS:
        # The unit fails here (the config service away, say), yet its plugin runs it: stopped
        # there, or it would run on unseen.
        with contextlib.suppress(*START_ERRORS):
            await process.client.stop(unit, deleted=False, deadline_s=CALL_TIMEOUT_S)
        raise
