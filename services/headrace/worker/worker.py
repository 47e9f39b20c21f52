"""The worker's control plane: runs what the coordinator assigns, in plugin processes.

One asyncio task (:meth:`Worker.run`) owns the worker's state and acts on one event at a time
from its queue: a new assignment, a unit's event from a plugin process, a plugin process's exit,
or shutdown. Revoked units are stopped first (with the deletion marker the coordinator sent),
then the coordinator is told, then newly assigned units start. Every stop other than a deletion
passes ``deleted=False``. Status goes to the status topic through a ``StatusStore``.

Within one event the units are started and stopped concurrently, as Kafka Connect starts and
stops a worker's connectors and tasks in parallel, at most ``MAX_CONCURRENT_UNIT_CALLS`` at a
time. Stops run in two rounds, every task and then every connector, so a connector's tasks have
stopped before it does. Starts run in one round, once the plugin processes they need are up,
each started once however many of its units start. The owning task changes ``running`` and the
processes between rounds; the calls in flight only speak to plugin processes and write status.

Deletions are delivered exactly once as far as this worker can tell: a revocation with the
deletion marker becomes ``stop(deleted=True)``, or, when the unit's plugin process is gone, a
clean-up (the plugin is started only to be stopped as deleted); a clean-up the coordinator
hands out is done the same way. Each one done is acknowledged, and remembered, so that one the
coordinator sends again (its acknowledgement was lost) is acknowledged without a second call, as
soon as it arrives; each Join acknowledges again the newest ones, for a coordinator that took
over from one that had not recorded them.
It counts as done when the plugin process says its plugin heard it (``DeletionHeard``), as the
plugin returns from ``stop(deleted=True)``: not seconds later, once the unit's Kafka clients are
closed and the stop answers, since a worker killed meanwhile would have it told again.

When the worker is cut off from the coordinator for most of the session timeout (see
``membership``), it fences itself: its plugin processes are stopped, bounded in time, and its
units are given up, since the coordinator may by then hand them to another worker.

The worker speaks the shared vocabulary (``headrace.core.model.structs``) only: membership hands it
``AssignmentUpdate``s, the plugin processes ``UnitStateChanged``, ``ReconfigurationRequested``
and ``TopicUsed``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TypeVar

import immutables
import structlog
from aiokafka.errors import KafkaError

from headrace.components import versions
from headrace.core import runner
from headrace.core.model.connectorconfig import requested_version
from headrace.core.model.errors import PluginError
from headrace.core.model.persistent import with_item, without_item
from headrace.core.model.status import TopicStatus, UnitStatus, status_key
from headrace.core.model.structs import (
    AssignedUnit,
    AssignmentUpdate,
    Cleanup,
    DeletionHeard,
    HostEvent,
    Instance,
    ReconfigurationRequested,
    Revocation,
    State,
    Target,
    TopicUsed,
    UnitStateChanged,
    WorkUnit,
)
from headrace.core.observability import log
from headrace.core.security import tls
from headrace.core.settings import Settings
from headrace.core.storage.stores import StatusStore
from headrace.core.storage.told import ToldRecords
from headrace.core.storage.topiclog import LogFactory, kafka_logs
from headrace.isolation.client import PluginCallError
from headrace.isolation.live import LivePlugins
from headrace.isolation.plugins import JVM_PLUGINS, PluginCatalog, PluginDescriptor
from headrace.isolation.supervisor import BeforeStart, PluginProcess, Spare, idle, plugin_key
from headrace.worker import metrics
from headrace.worker.delivered import Delivered
from headrace.worker.executorlevels import ExecutorLevels
from headrace.worker.membership import FENCE_AFTER, Membership
from headrace.worker.reconcile import reconcile
from headrace.worker.taskconfigs import TaskConfigsClient, TaskConfigsGone, TaskConfigsStale


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

    @property
    def held(self) -> bool:
        """Paused or stopped by an operator: kept here, and not running in a plugin process."""
        return self.assigned.target is not Target.RUNNING


@dataclass(frozen=True)
class Assigned:
    update: AssignmentUpdate
    session: int  # the membership's stream it arrived on


@dataclass(frozen=True)
class UnitReported:
    event: HostEvent


@dataclass(frozen=True)
class ProcessExited:
    process: PluginProcess
    code: int
    overrun: str  # why its watchdog ended it, if it did


@dataclass(frozen=True)
class Fenced:
    """The plugin processes were stopped because the worker was cut off; these units, which
    it no longer claims, are to be reported given up."""

    units: Mapping[WorkUnit, Running]


@dataclass(frozen=True)
class IdleCheck:
    """A plugin process ran no unit here a while ago: stopped if it still runs none."""

    process: PluginProcess


@dataclass(frozen=True)
class TopicsForgotten:
    """The connector's topics were reset (KIP-558): its tasks here report them again."""

    connector: str


Event = (
    Assigned | UnitReported | ProcessExited | Fenced | IdleCheck | TopicsForgotten | None
)  # None: shut down
Host = PluginProcess | Exception  # a unit's plugin process, or why it has none

# Bounds every call to a plugin process: the host bounds a plugin's own start and stop more
# tightly, so this only fires when the process itself is wedged.
CALL_TIMEOUT_S = 60.0
# How many units one event starts or stops at once. A start or a stop mostly waits (on its plugin
# process, on Kafka, on the config service), so one at a time leaves the CPU idle; all at once, a
# thousand units would open thousands of Kafka connections in one burst.
MAX_CONCURRENT_UNIT_CALLS = 32
# How many of the deletions told here last each Join acknowledges again: the ones a coordinator
# that failed over may not have recorded yet (told within seconds of it), with room to spare.
REACKNOWLEDGED = 1_000
# Start failures that fail only the unit: the plugin cannot be resolved or its process started,
# or the plugin process or the config service refused or did not answer.
START_ERRORS = (PluginError, PluginCallError, OSError, RuntimeError, TimeoutError)

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


def stop_rounds(stops: Iterable[Revocation]) -> tuple[list[Revocation], list[Revocation]]:
    """The stops in the rounds they run in: every task, then every connector, so that a
    connector's tasks have stopped before it does (Kafka Connect's order)."""
    ordered = list(stops)
    return (
        [s for s in ordered if not s.unit.is_connector],
        [s for s in ordered if s.unit.is_connector],
    )


class Worker:
    def __init__(
        self,
        settings: Settings,
        worker_id: str,
        catalog: PluginCatalog,
        run_dir: Path,
        log_dir: Path,
        logs: Callable[[str], LogFactory] | None = None,
        before_plugin_start: BeforeStart | None = None,
        live: LivePlugins | None = None,
    ) -> None:
        """``logs`` gives the log of each of the cluster's topics (status, configs): on Kafka
        unless given (standalone mode's are in its process); ``before_plugin_start`` is done
        before each plugin process starts (standalone mode starts the executor); ``live``, the
        plugin path kept current by the process's config service, which it shares (standalone
        mode), else the worker keeps its own."""
        self._before_plugin_start = before_plugin_start
        logs = logs or partial(kafka_logs, settings)
        self.settings = settings
        self.worker_id = worker_id
        self.catalog = catalog
        # The plugin path as it is now: the cluster's installs, and what is copied in by hand.
        self._watches_plugins = live is None
        self.live = live or LivePlugins(
            settings.plugin_path, settings.var_dir / JVM_PLUGINS, catalog=catalog
        )
        self.live.listen(self._catalog_changed)
        self._watching: asyncio.Task[None] | None = None
        self._run_dir = run_dir
        self._log_dir = log_dir
        self.running: dict[WorkUnit, Running] = {}
        # The state each unit here last reported, for the metrics: replaced, never mutated, so
        # their server's thread reads a whole one.
        self.states: Mapping[WorkUnit, State] = immutables.Map()
        self.generation = 0
        self.ready = asyncio.Event()  # joined, and the first assignment applied
        # The deletions delivered here, across restarts (an acknowledgement may be lost).
        self._deleted = Delivered(run_dir / f"deletions-{worker_id}.jsonl")
        # The deletions being told now, by unit: the incarnation, and the plugin process asked
        # to tell it (the only one whose word that its plugin heard it is taken).
        self._telling: dict[WorkUnit, tuple[str, PluginProcess]] = {}
        self._fences = 0  # how often this worker was cut off and gave its units up
        self._fences_at_apply = 0  # how often, when the assignment being applied arrived
        self._session_at_apply = 0  # the Join stream it arrived on
        self._fencing: asyncio.Future[None] | None = None
        self._processes: dict[str, PluginProcess] = {}
        # A plugin host kept ready while no plugin process runs here: the first units this
        # worker is given (as it joins, or once its own all went) start without Python's start.
        self._spare = Spare(settings, worker_id, log_dir)
        self._spawning: defaultdict[str, asyncio.Lock] = defaultdict(asyncio.Lock)
        self._handed_out: dict[str, float] = {}  # when process_for last gave each out
        self._idle_checks: dict[str, asyncio.TimerHandle] = {}
        self._queue: asyncio.Queue[Event] = asyncio.Queue()
        self._status = StatusStore(logs("status"))
        # The topics this worker recorded for each connector: the ones whose records it
        # forgets when the connector is deleted (the config service forgets those recorded
        # before the deletion; a task may still write to a topic until it is stopped).
        self._topics: dict[str, set[str]] = {}
        self.membership = Membership(
            settings.coordinator_addrs,
            worker_id,
            lambda: {u: r.incarnation for u, r in self.running.items()},
            lambda update: self._queue.put_nowait(Assigned(update, self.membership.session)),
            self._on_fence,
            connect=partial(tls.aio_channel, settings=settings),
            on_levels=lambda: self._executor_levels.changed(),
            on_topics_reset=lambda connector: self._queue.put_nowait(TopicsForgotten(connector)),
            on_plugins=self.live.want,
            delivered=lambda: self._deleted.newest(REACKNOWLEDGED),
        )
        self.log = log.get(worker=worker_id)
        self._told = ToldRecords(logs("assignments"), worker_id, self.log)
        self._executor_levels = ExecutorLevels(settings, self.log)
        self._task_configs = TaskConfigsClient(settings, self.log, logs("configs"))

    async def run(self) -> None:
        """Joins the group and acts on events until :meth:`shutdown`; :attr:`ready` is set
        (and ``worker_ready`` logged) once the first assignment is applied."""
        await self._status.start(reader=False)
        await self._told.start()
        self._task_configs.start()
        self.membership.start()
        if self._watches_plugins:
            self._watching = asyncio.create_task(self.live.watch(), name="plugin-path")
        self.log.info("worker_joining", plugins=len(self.catalog.plugins))
        while (event := await self._next_event()) is not None:
            try:
                await self._handle(event)
            except Exception:
                # Logged, not raised: one event that fails must not end the worker. (structlog
                # takes the event name as its first argument: the kind goes under another key.)
                self.log.exception("worker_event_failed", kind=type(event).__name__)
        await self._stop_everything()

    async def _handle(self, event: Event) -> None:
        match event:
            case Assigned(update, session):
                if session != self.membership.session:
                    # Read from a stream that has ended since (a worker frozen with it
                    # unread, say): its coordinator may no longer lead, and the one this worker
                    # joined since has sent what it is to run now.
                    self.log.warning("assignment_of_an_ended_session", generation=update.generation)
                    return
                await self._apply(update)
                # Only an assignment changes which units run here: checked once per update, not
                # at every report (a cold start reports each of its units).
                self._check_idle_later()
            case UnitReported(host_event):
                await self._reported(host_event)
            case ProcessExited(process, code, overrun):
                await self._exited(process, code, overrun)
            case Fenced(units):
                await self._given_up(units)
            case IdleCheck(process):
                await self._idle(process)
            case TopicsForgotten(connector):
                await self._forget_topics(connector)

    async def _next_event(self) -> Event | None:
        """The next event, once a spare plugin host is kept if no plugin process runs here.
        Every change to the processes (a start that failed and spent the spare, an exit, an
        idle stop, a fence) is made by an event, or reaches the queue as one, so this is the
        one place that keeps it."""
        await self._spare_when_idle()
        return await self._queue.get()

    def shutdown(self) -> None:
        self._queue.put_nowait(None)

    async def _apply(self, update: AssignmentUpdate) -> None:
        if update.generation < self.generation:
            # From a coordinator that lost its lease after a newer one spoke: never acted on.
            self.log.warning("assignment_stale", generation=update.generation, seen=self.generation)
            return
        if update.generation > self.generation:
            metrics.REBALANCES.inc()
        self._fences_at_apply = self._fences
        self._session_at_apply = self.membership.session
        self.generation = update.generation
        metrics.GENERATION.set(update.generation)
        structlog.contextvars.bind_contextvars(generation=update.generation)
        log.get().info(
            "assignment_received",
            worker=self.worker_id,
            generation=update.generation,
            units=len(update.units),
            revoked=len(update.revoked),
            cleanups=len(update.cleanups),
        )
        told = [c.instance for c in update.cleanups if c.instance in self._deleted]
        if told:
            # Told here already, and handed back (the acknowledgement was lost): said at once,
            # not after the starts, which may take long; the worker may not live through them
            # (found by the nemesis: killed 4 s into them, and another worker told it again).
            self.membership.deletions_done(told)
        assigned = {u.unit: u for u in update.units}
        steps = reconcile(
            {u: r.assigned for u, r in self.running.items()}, update.revoked, assigned
        )
        await for_each(
            lambda u: self._report(u, State.RESTARTING), steps.restarts, MAX_CONCURRENT_UNIT_CALLS
        )
        await self._stop_all(steps.stops, restarting=frozenset(steps.starts))
        if steps.acknowledge:
            self.membership.acknowledge(update.generation)
            return  # the assignment that follows says what to run now
        await self._start_all({unit: assigned[unit] for unit in steps.starts})
        untold = [c for c in update.cleanups if c.instance not in told]
        await for_each(self._clean_up, untold, MAX_CONCURRENT_UNIT_CALLS)
        self.log.info("assignment_applied", generation=update.generation, running=len(self.running))
        if not self.ready.is_set():
            # Caught up: it runs what the group wants of it now.
            self.ready.set()
            self.log.info(
                "worker_ready",
                plugins=len(self.catalog.plugins),
                generation=update.generation,
                running=len(self.running),
            )

    async def _start_all(self, starts: Mapping[WorkUnit, AssignedUnit]) -> None:
        """Starts the units concurrently, once the plugin processes they need are up; a held
        unit is only reported (PAUSED or STOPPED)."""
        # A plugin the cluster installed before these units were assigned is here first; one
        # copied into the plugin path since the last look is read before a unit fails for it.
        await self.live.settled()
        plugins = {unit: self._resolve(a.connector_config) for unit, a in starts.items()}
        unknown = [u for u, p in plugins.items() if isinstance(p, PluginError)]
        if unknown and await self.live.refresh():
            plugins |= {u: self._resolve(starts[u].connector_config) for u in unknown}
        for unit, assigned in starts.items():
            plugin = plugins[unit]
            descriptor = plugin if isinstance(plugin, PluginDescriptor) else None
            self.running[unit] = Running(descriptor, assigned)
        held = {u for u, a in starts.items() if a.target is not Target.RUNNING}
        await for_each(lambda u: self._hold(u, starts[u].target), held, MAX_CONCURRENT_UNIT_CALLS)
        plugins = {u: p for u, p in plugins.items() if u not in held}
        processes = await self._processes_for(
            p for p in plugins.values() if isinstance(p, PluginDescriptor)
        )
        hosts: dict[WorkUnit, Host] = {
            unit: processes[plugin_key(p)] if isinstance(p, PluginDescriptor) else p
            for unit, p in plugins.items()
        }
        await for_each(lambda u: self._start(u, hosts[u]), plugins, MAX_CONCURRENT_UNIT_CALLS)

    async def _hold(self, unit: WorkUnit, target: Target) -> None:
        """Keeps a paused or stopped unit here without running it, and says so."""
        self.log.info("unit_held", connector=unit.connector, task=unit.task, target=target.value)
        await self._report(unit, State(target.value))

    def _resolve(self, connector_config: Mapping[str, str]) -> PluginDescriptor | PluginError:
        """The connector version the config runs, with the component versions its process
        loads beside it; or why the config cannot run here."""
        try:
            plugin = self.catalog.resolve(
                connector_config.get("connector.class", ""), requested_version(connector_config)
            )
            if plugin.is_java:  # its JVM makes its components, from its location or Connect's
                return plugin
            resolution = versions.resolve(connector_config, self.catalog)
            resolution.raise_problems()
        except PluginError as exc:
            return exc
        return dataclasses.replace(plugin, components=resolution.components)

    async def _processes_for(self, plugins: Iterable[PluginDescriptor]) -> dict[str, Host]:
        """The process of each plugin version, by key; one that is not running yet is started
        once, however many of its units start, and different plugins' start at once."""
        missing = {plugin_key(p): p for p in plugins if plugin_key(p) not in self._processes}
        spawned = dict(
            zip(
                missing, await asyncio.gather(*map(self._spawn_once, missing.values())), strict=True
            )
        )
        return {**self._processes, **spawned}

    async def process_for(self, plugin: PluginDescriptor) -> PluginProcess:
        """This worker's process of the plugin version, started if it has none: standalone mode
        validates configs in the processes that run them, rather than in processes of their
        own. One that runs no unit is stopped once idle, as any of the worker's. What
        :meth:`_spawn` says when it cannot start one is raised."""
        host = await self._spawn_once(plugin)
        if isinstance(host, Exception):
            # Called outside the event loop: a start that spent the spare does not wait for the
            # next event to have it replaced.
            await self._spare_when_idle()
            raise host
        self._handed_out[plugin_key(plugin)] = time.monotonic()
        self._check_idle_later()
        return host

    async def _spawn_once(self, plugin: PluginDescriptor) -> Host:
        """The plugin version's process, started unless it runs (or is starting) already."""
        key = plugin_key(plugin)
        async with self._spawning[key]:
            running = self._processes.get(key)
            if running is not None:
                return running
            host = await self._spawn(plugin)
            if not isinstance(host, Exception):
                self._processes[key] = host
            return host

    async def _spawn(self, plugin: PluginDescriptor) -> Host:
        """A started process for the plugin, or why it did not start."""
        process = PluginProcess(
            plugin,
            self.settings,
            self.worker_id,
            self._run_dir,
            self._log_dir,
            self._on_host_event,
            lambda p, code, overrun: self._queue.put_nowait(ProcessExited(p, code, overrun)),
            self._host_lease,
            self._before_plugin_start,
        )
        try:
            await process.start(spare=self._spare)
        except START_ERRORS as exc:
            return exc
        return process

    def _on_host_event(self, process: PluginProcess, event: HostEvent) -> None:
        """A plugin process's event: a deletion heard is recorded at once, on disk, and
        acknowledged, whatever the worker is busy with (the stop that asked for it may take
        seconds yet to answer, closing the unit's Kafka clients); the rest wait their turn in
        the queue."""
        if isinstance(event, DeletionHeard):
            incarnation, asked = self._telling.get(event.unit, ("", None))
            heard = (event.unit, incarnation)
            if asked is process and heard not in self._deleted:  # only what it was asked to tell
                self._deleted.add(heard)
                self.membership.deletions_done([heard])
            return
        self._queue.put_nowait(UnitReported(event))

    @contextlib.contextmanager
    def _told_by(self, instance: Instance, process: PluginProcess) -> Iterator[None]:
        """While ``process`` is asked to tell ``instance`` of its deletion."""
        unit, incarnation = instance
        self._telling[unit] = (incarnation, process)
        try:
            yield
        finally:
            if self._telling.get(unit) == (incarnation, process):
                del self._telling[unit]

    async def _spare_when_idle(self) -> None:
        """Keeps a spare plugin host while no plugin process runs here."""
        if not self._processes:
            await self._spare.keep()

    async def _start(self, unit: WorkUnit, host: Host) -> None:
        """Starts one unit in its plugin process and reports RUNNING, or FAILED with why."""
        if isinstance(host, Exception):
            await self._start_failed(unit, host)
            return
        running = self.running.get(unit)
        if running is None:
            return  # given up meanwhile (the worker fenced itself)
        if self._cut_off_since_assigned():
            # The assignment may be stale: the unit may run elsewhere by now.
            del self.running[unit]
            await self._report(unit, State.UNASSIGNED, running=running)
            return
        try:
            await self._launch(host, unit, running)
        except START_ERRORS as exc:
            await self._start_failed(unit, exc)
            return
        if self.running.get(unit) is running:
            self.running[unit] = dataclasses.replace(running, host=host)
        self.log.info(
            "unit_started", connector=unit.connector, task=unit.task, version=host.plugin.version
        )
        await self._report(unit, State.RUNNING)

    async def _start_failed(self, unit: WorkUnit, error: Exception) -> None:
        detail = str(error)
        self.log.warning(
            "unit_start_failed", connector=unit.connector, task=unit.task, error=detail
        )
        await self._report(unit, State.FAILED, trace=detail or repr(error))

    async def _launch(self, process: PluginProcess, unit: WorkUnit, running: Running) -> None:
        """Starts the unit in its plugin process; a connector's task configs then go to the
        config service."""
        assert process.client is not None
        assigned = running.assigned
        if unit.is_connector:
            tasks = await process.client.start_connector(
                unit.connector, assigned.connector_config, deadline_s=CALL_TIMEOUT_S
            )
            try:
                await self._task_configs.put(
                    unit.connector, tasks, assigned.incarnation, assigned.config_version
                )
            except TaskConfigsStale as exc:
                # A newer config or task set is the connector's now: the assignment that
                # carries it restarts this connector with it.
                self.log.info("task_configs_stale", connector=unit.connector, reason=str(exc))
            except TaskConfigsGone as exc:
                # Deleted since it was assigned here: the coordinator's next assignment stops it
                # with the deletion marker. Stopped now without it, the plugin would hear that
                # it was stopped, and then, started again, that it was deleted.
                self.log.info(
                    "connector_deleted_meanwhile", connector=unit.connector, reason=str(exc)
                )
            except START_ERRORS:
                # The unit fails here (the config service away, say), yet its plugin runs it:
                # stopped there, or it would run on unseen.
                with contextlib.suppress(*START_ERRORS):
                    await process.client.stop(unit, deleted=False, deadline_s=CALL_TIMEOUT_S)
                raise
            return
        await process.client.start_task(
            unit, assigned.connector_config, assigned.task_config, deadline_s=CALL_TIMEOUT_S
        )

    async def _stop_all(
        self, stops: Iterable[Revocation], restarting: frozenset[WorkUnit] = frozenset()
    ) -> None:
        """Stops the units concurrently, every task and then every connector; each round takes
        its units out of ``running`` as it begins. The deletions done are acknowledged. A unit
        in ``restarting`` starts again next, and is not reported UNASSIGNED meanwhile."""
        done: list[Instance] = []
        for stop_round in stop_rounds(stops):
            taken = [
                (s, r) for s in stop_round if (r := self.running.pop(s.unit, None)) is not None
            ]
            await for_each(
                lambda t: self._stop(*t, done, restarting), taken, MAX_CONCURRENT_UNIT_CALLS
            )
        if done:
            self.membership.deletions_done(done)
            await self._told.record(done)

    async def _stop(
        self,
        stop: Revocation,
        running: Running,
        done: list[Instance],
        restarting: frozenset[WorkUnit] = frozenset(),
    ) -> None:
        unit, deleted = stop.unit, stop.deleted
        process = self._processes.get(plugin_key(running.plugin)) if running.plugin else None
        if process is not running.host:
            process = None  # the process that ran it is gone; it runs in none of the others
        halted = False
        # Cut off, the deletion may be another worker's to deliver by now: the unit stops
        # without the marker, unacknowledged, and the coordinator hands it to whom it picks.
        tell = deleted and not self._cut_off_since_assigned()
        if deleted and not tell:
            self._abandoned(unit)
        if process is not None and process.client is not None and not running.held:
            halted = await self._halt(process, (unit, running.incarnation), deleted=tell)
        self.log.info("unit_stopped", connector=unit.connector, task=unit.task, deleted=tell)
        if deleted:
            instance = (unit, running.incarnation)
            # Its process is gone (it crashed), did not answer, or the unit was held (paused or
            # stopped, so its plugin stopped without the marker): unless its process said the
            # plugin heard it all the same (and then failed to answer), the plugin has not
            # heard of the deletion yet, and is started only to hear of it.
            assigned = running.assigned
            cleanup = Cleanup(
                unit, assigned.incarnation, assigned.connector_config, assigned.task_config
            )
            if tell and (halted or instance in self._deleted or await self._deliver(cleanup)):
                self._deleted.add(instance)
                done.append(instance)
            self.states = without_item(self.states, unit)
            await self._write_status(unit, self._status.remove(unit))
            topics = self._topics.pop(unit.connector, set())
            await self._write_status(unit, self._status.forget_topics(unit.connector, topics))
        elif unit not in restarting:
            await self._report(unit, State.UNASSIGNED, running=running)

    async def _halt(self, process: PluginProcess, instance: Instance, *, deleted: bool) -> bool:
        """Stops the unit in its plugin process; a failure to is logged, and the unit is gone
        from this worker all the same. Whether the plugin process stopped it: it answered,
        and had it to stop (one it had stopped already, with ``deleted=False`` as its lease ran
        out, say, never heard of the deletion: found by the nemesis, seed 404)."""
        assert process.client is not None
        unit = instance[0]
        telling = self._told_by(instance, process) if deleted else contextlib.nullcontext()
        try:
            with telling:
                stopped = await process.client.stop(
                    unit, deleted=deleted, deadline_s=CALL_TIMEOUT_S
                )
        except PluginCallError as exc:
            self.log.warning(
                "unit_stop_failed", connector=unit.connector, task=unit.task, error=exc.details
            )
            return False
        return stopped

    async def _clean_up(self, cleanup: Cleanup) -> None:
        """Delivers a deletion the coordinator handed out, unless this worker already has."""
        if cleanup.instance not in self._deleted and not await self._deliver(cleanup):
            return  # not acknowledged: the coordinator keeps it pending and sends it again
        self._deleted.add(cleanup.instance)
        self.membership.deletions_done([cleanup.instance])
        await self._told.record([cleanup.instance])

    async def _deliver(self, cleanup: Cleanup) -> bool:
        """Starts the deleted unit's plugin only to stop it with ``deleted=True``; whether the
        plugin process carried it out."""
        unit = cleanup.unit
        plugin = self._resolve(cleanup.connector_config)
        if isinstance(plugin, PluginError):
            # No plugin here can ever hear of it: said loudly, and not asked for again.
            self.log.error(
                "deletion_undeliverable",
                connector=unit.connector,
                task=unit.task,
                error=str(plugin),
            )
            return True
        if self._cut_off_since_assigned():
            self._abandoned(unit)
            return False
        host = (await self._processes_for([plugin]))[plugin_key(plugin)]
        if isinstance(host, Exception) or host.client is None:
            self.log.error("deletion_cleanup_failed", connector=unit.connector, error=str(host))
            return False
        if self._cut_off_since_assigned():
            self._abandoned(unit)
            return False
        try:
            with self._told_by(cleanup.instance, host):
                await host.client.clean_up(cleanup, deadline_s=CALL_TIMEOUT_S)
        except PluginCallError as exc:
            self.log.error(
                "deletion_cleanup_failed",
                connector=unit.connector,
                task=unit.task,
                error=exc.details,
            )
            return cleanup.instance in self._deleted  # heard, though the answer did not come
        self.log.info("deletion_cleaned_up", connector=unit.connector, task=unit.task)
        return True

    def _cut_off_since_assigned(self) -> bool:
        """Whether this worker is cut off from the group, or was since the assignment it is
        applying arrived (an assignment read after a freeze may be long stale), or has joined
        anew since (a worker thawed in the middle of applying one rejoins at once): the
        coordinator may have handed that assignment's units and deletions to other workers
        meanwhile, so this one starts and delivers none of them, and hears again what to run."""
        membership = self.membership
        return (
            self._fences != self._fences_at_apply
            or membership.session != self._session_at_apply
            or membership.cut_off_for() >= FENCE_AFTER * membership.session_timeout
        )

    def _abandoned(self, unit: WorkUnit) -> None:
        # Not acknowledged: the coordinator hands it to a live worker, or back to this one.
        self.log.warning("deletion_cleanup_abandoned", connector=unit.connector, task=unit.task)

    def _host_lease(self) -> tuple[float, float]:
        """How long a plugin process may run on without hearing from this worker, and how long
        it then has to stop: what the worker itself would have (see ``membership``)."""
        session = self.membership.session_timeout
        return session * FENCE_AFTER, session * (1 - FENCE_AFTER) / 2

    def _on_fence(self) -> None:
        self._fences += 1
        # Given up at once, not once the main task gets to it (it may be busy for long): a
        # Join sent meanwhile, as the worker rejoins, must not claim units it no longer runs,
        # or the coordinator would have their deletions delivered here a second time.
        units, self.running = self.running, {}
        self._fencing = asyncio.ensure_future(self._fence(units))

    async def _fence(self, units: Mapping[WorkUnit, Running]) -> None:
        """Stops every plugin process at once, bounded in time: the worker is cut off, and its
        units may soon run elsewhere. The main task then reports them given up (``Fenced``)."""
        _, budget = self._host_lease()
        processes, self._processes = list(self._processes.values()), {}
        await asyncio.gather(*(p.stop(wait_s=budget) for p in processes))
        self._queue.put_nowait(Fenced(units))

    async def _given_up(self, units: Mapping[WorkUnit, Running]) -> None:
        gone = {u: r for u, r in units.items() if u not in self.running}  # not run here again
        await for_each(
            lambda item: self._report(item[0], State.UNASSIGNED, running=item[1]),
            gone.items(),
            MAX_CONCURRENT_UNIT_CALLS,
        )
        self.log.warning("worker_units_given_up", units=len(units))

    async def _report(
        self, unit: WorkUnit, state: State, trace: str = "", running: Running | None = None
    ) -> None:
        self.states = (
            without_item(self.states, unit)
            if state is State.UNASSIGNED
            else with_item(self.states, unit, state)
        )
        current = running or self.running.get(unit)
        version = current.plugin.version if current and current.plugin else ""
        reported = UnitStatus(unit, state, self.worker_id, trace, self.generation, version)
        await self._write_status(unit, self._status.report(reported))

    async def _write_status(self, unit: WorkUnit, write: Awaitable[None]) -> None:
        # Status is what the worker observed; failing to record it must not stop the work.
        try:
            await write
        except KafkaError as exc:
            self.log.error("status_write_failed", key=status_key(unit), error=repr(exc))

    @property
    def plugin_processes(self) -> int:
        return len(self._processes)

    def _live(self, unit: WorkUnit) -> bool:
        """Whether the unit runs here in a plugin process (not held, not gone)."""
        running = self.running.get(unit)
        return running is not None and not running.held

    async def _reported(self, event: HostEvent) -> None:
        match event:
            case UnitStateChanged(unit, State.FAILED, trace) if self._live(unit):
                await self._report(unit, State.FAILED, trace=trace)
            case ReconfigurationRequested(connector) if self._live(WorkUnit.of(connector)):
                await self._reconfigure(WorkUnit.of(connector))
            case TopicUsed(unit, topic) if self._live(unit) and self.settings.tracks_topics:
                self._topics.setdefault(unit.connector, set()).add(topic)
                used = TopicStatus(topic, unit.connector, unit.task, int(time.time() * 1000))
                await self._write_status(unit, self._status.report_topic(used))
        # RUNNING is reported when a start returns, STOPPED when a stop does.

    async def _forget_topics(self, connector: str) -> None:
        """Has the connector's tasks here report the topics they use again, as they next use
        them, once the config service has forgotten those recorded (KIP-558's reset)."""
        self._topics.pop(connector, None)
        processes = {
            plugin_key(r.plugin)
            for u, r in self.running.items()
            if u.connector == connector and u.task >= 0 and r.plugin is not None
        }
        for key in processes:
            process = self._processes.get(key)
            if process is None or process.client is None:
                continue  # gone: its units start afresh, reporting every topic they use
            try:
                await process.client.forget_topics(connector, deadline_s=CALL_TIMEOUT_S)
            except PluginCallError as exc:
                self.log.warning("topics_not_forgotten", connector=connector, error=str(exc))

    async def _reconfigure(self, unit: WorkUnit) -> None:
        """The connector wants its tasks reconfigured: as in Connect, it is asked for its task
        configs again, running as it is (a start of a running connector with its own config
        answers them), and the config service takes them when they changed. Its tasks then
        follow through the assignment, as for any new task set."""
        running = self.running[unit]
        process = self._processes.get(plugin_key(running.plugin)) if running.plugin else None
        if process is None or process.client is None:
            return  # its process is gone: the exit fails its units, and a restart starts afresh
        try:
            await self._launch(process, unit, running)
        except START_ERRORS as exc:
            await self._start_failed(unit, exc)
            return
        self.log.info("task_reconfiguration_applied", connector=unit.connector)

    async def _exited(self, process: PluginProcess, code: int, overrun: str) -> None:
        async with self._spawning[process.key]:  # no new one starts while this one is cleared
            if self._processes.get(process.key) is not process:
                return
            del self._processes[process.key]
            await process.stop()
        # What the process wrote last stays in its own log, which only the operator reads: it
        # may be anything, another connector's secret included, and every unit of the process
        # would show it to whoever may read a status. Only the watchdog's own reason is shown.
        trace = (
            f"plugin process {process.key} exited with code {code}; what it wrote last is in "
            f"its log, {process.log_file.name}, in the worker's log folder"
        )
        if overrun:
            trace = f"{overrun}\n{trace}"
        hosted = [
            unit
            for unit, running in self.running.items()
            if running.plugin is not None
            and not running.held
            and plugin_key(running.plugin) == process.key
        ]
        await for_each(
            lambda u: self._report(u, State.FAILED, trace=trace), hosted, MAX_CONCURRENT_UNIT_CALLS
        )

    def _in_use(self) -> set[str]:
        return {plugin_key(r.plugin) for r in self.running.values() if r.plugin and not r.held}

    def _check_idle_later(self) -> None:
        """Checks, ``plugin_idle_stop_s`` from now, each plugin process that runs no unit: one
        still idle then is stopped (its memory, and a Java plugin's JVM, are given back)."""
        used = self._in_use()
        loop = asyncio.get_running_loop()
        for key, process in self._processes.items():
            if key not in used and key not in self._idle_checks:
                self._idle_checks[key] = loop.call_later(
                    self.settings.plugin_idle_stop_s, self._queue.put_nowait, IdleCheck(process)
                )

    async def _idle(self, process: PluginProcess) -> None:
        self._idle_checks.pop(process.key, None)
        async with self._spawning[process.key]:
            if self._processes.get(process.key) is not process:
                return  # stopped or replaced since the check was set
            handed = self._handed_out.get(process.key)
            if not idle(process.key, self._in_use(), handed, time.monotonic(), self.settings):
                self._check_idle_later()  # in use, or asked for lately: checked again later
                return
            del self._processes[process.key]
            self.log.info("plugin_process_idle_stopped", plugin=process.key)
            await process.stop()

    def _catalog_changed(self, catalog: PluginCatalog) -> None:
        """The plugin path holds other plugins now: units started from now on resolve their
        plugin in ``catalog``; those running go on with theirs."""
        self.catalog = catalog

    async def _stop_everything(self) -> None:
        await runner.cancel(self._watching)
        for handle in self._idle_checks.values():
            handle.cancel()
        await self._stop_all([Revocation(unit) for unit in self.running])
        await self.membership.leave()
        await asyncio.gather(*(process.stop() for process in self._processes.values()))
        self._processes.clear()
        await self._spare.stop()
        await self._task_configs.close()
        await self._executor_levels.close()
        await self._status.close()
        await self._told.close()
        self.log.info("worker_stopped")
