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
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import structlog

from headrace.clients.executorlevels import ExecutorLevels
from headrace.clients.taskconfigs import TaskConfigsClient
from headrace.core import runner
from headrace.core.model.plugins import PluginCatalog, PluginDescriptor
from headrace.core.model.structs import (
    AssignmentUpdate,
    DeletionHeard,
    HostEvent,
    Instance,
    ReconfigurationRequested,
    Revocation,
    State,
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
from headrace.isolation.live import LivePlugins
from headrace.isolation.plugins import JVM_PLUGINS
from headrace.isolation.supervisor import BeforeStart, PluginProcess, Spare, plugin_key
from headrace.worker import metrics
from headrace.worker.deletions import Deletions, Teller
from headrace.worker.delivered import Delivered
from headrace.worker.membership import FENCE_AFTER, Freshness, Membership
from headrace.worker.processes import (
    Launch,
    PluginProcesses,
    launcher,
)
from headrace.worker.reconcile import reconcile
from headrace.worker.reporting import StatusReporter
from headrace.worker.starting import (
    MAX_CONCURRENT_UNIT_CALLS,
    Running,
    Starter,
    TaskConfigs,
    for_each,
)


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
# How many of the deletions told here last each Join acknowledges again: the ones a coordinator
# that failed over may not have recorded yet (told within seconds of it), with room to spare.
REACKNOWLEDGED = 1_000


def stop_rounds(stops: Iterable[Revocation]) -> tuple[list[Revocation], list[Revocation]]:
    """The stops in the rounds they run in: every task, then every connector, so that a
    connector's tasks have stopped before it does (Kafka Connect's order)."""
    ordered = list(stops)
    return (
        [s for s in ordered if not s.unit.is_connector],
        [s for s in ordered if s.unit.is_connector],
    )


def build_worker(
    settings: Settings,
    worker_id: str,
    catalog: PluginCatalog,
    run_dir: Path,
    log_dir: Path,
    logs: Callable[[str], LogFactory] | None = None,
    before_plugin_start: BeforeStart | None = None,
    live: LivePlugins | None = None,
    launch: Launch | None = None,
    task_configs: TaskConfigs | None = None,
) -> Worker:
    """A worker with its parts: ``logs`` gives the log of each of the cluster's topics (status,
    configs, assignments): on Kafka unless given (standalone mode's are in its process);
    ``before_plugin_start`` is done before each plugin process starts (standalone mode starts
    the executor); ``live``, the plugin path kept current by the process's config service,
    which it shares (standalone mode), else the worker keeps its own and watches it. ``launch``
    and ``task_configs`` stand in for the plugin processes and the config service."""
    logs = logs or partial(kafka_logs, settings)
    logger = log.get(worker=worker_id)
    return Worker(
        settings,
        worker_id,
        catalog,
        processes=PluginProcesses(
            settings,
            launch or launcher(settings, worker_id, run_dir, log_dir, before_plugin_start),
            Spare(settings, worker_id, log_dir),
        ),
        status=StatusReporter(StatusStore(logs("status")), worker_id, logger),
        deletions=Deletions(
            Delivered(run_dir / f"deletions-{worker_id}.jsonl"),
            ToldRecords(logs("assignments"), worker_id, logger),
        ),
        task_configs=task_configs or TaskConfigsClient(settings, logger, logs("configs")),
        executor_levels=ExecutorLevels(settings, logger),
        live=live
        or LivePlugins(settings.plugin_path, settings.var_dir / JVM_PLUGINS, catalog=catalog),
        watches_plugins=live is None,
    )


class Worker:
    def __init__(
        self,
        settings: Settings,
        worker_id: str,
        catalog: PluginCatalog,
        *,
        processes: PluginProcesses,
        status: StatusReporter,
        deletions: Deletions,
        task_configs: TaskConfigs,
        executor_levels: ExecutorLevels,
        live: LivePlugins,
        watches_plugins: bool = False,
    ) -> None:
        """The parts it holds are given (:func:`build_worker` makes them as a worker process
        runs them): its plugin processes, what it reports, the deletions it told, the config
        service's task configs, the executor's levels, and the plugin path as it is now (the
        cluster's installs, and what is copied in by hand), which it watches if it is its own."""
        self.settings = settings
        self.worker_id = worker_id
        self.log = log.get(worker=worker_id)
        self.catalog = catalog
        self.live = live
        self.live.listen(self._catalog_changed)
        self._watches_plugins = watches_plugins
        self._watching: asyncio.Task[None] | None = None
        self.running: dict[WorkUnit, Running] = {}
        self.generation = 0
        self.ready = asyncio.Event()  # joined, and the first assignment applied
        self._fencing: asyncio.Future[None] | None = None
        self._queue: asyncio.Queue[Event] = asyncio.Queue()
        self.processes = processes
        self._status = status
        self._deletions = deletions
        self._task_configs = task_configs
        self._executor_levels = executor_levels
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
            delivered=lambda: self._deletions.newest(REACKNOWLEDGED),
        )
        self._fresh = Freshness(self.membership)
        deletions.bind(lambda done: self.membership.deletions_done(done))
        catalog_now, stale = (lambda: self.catalog), self._fresh.stale
        self._starter = Starter(
            self.running, processes, live, catalog_now, stale, self._report, task_configs, self.log
        )
        self._teller = Teller(deletions, processes, catalog_now, stale, self.log)
        processes.bind(
            self._on_host_event,
            lambda p, code, overrun: self._queue.put_nowait(ProcessExited(p, code, overrun)),
            self._host_lease,
        )

    @property
    def states(self) -> Mapping[WorkUnit, State]:
        """The state each unit here last reported."""
        return self._status.states

    async def run(self) -> None:
        """Joins the group and acts on events until :meth:`shutdown`; :attr:`ready` is set
        (and ``worker_ready`` logged) once the first assignment is applied."""
        await self.open()
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

    async def open(self) -> None:
        """Opens what an assignment is applied with: the status it reports, the deletions it
        records."""
        await self._status.start()
        await self._deletions.start()

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
                if not await self.processes.stop_if_idle(process, self._in_use()):
                    self._check_idle_later()  # in use, or asked for lately: checked again later
            case TopicsForgotten(connector):
                await self._forget_topics(connector)

    async def _next_event(self) -> Event | None:
        """The next event, once a spare plugin host is kept if no plugin process runs here.
        Every change to the processes (a start that failed and spent the spare, an exit, an
        idle stop, a fence) is made by an event, or reaches the queue as one, so this is the
        one place that keeps it."""
        await self.processes.keep_spare()
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
        self._fresh.applying()
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
        told = self._deletions.each_told(c.instance for c in update.cleanups)
        if told:
            # Told here already, and handed back (the acknowledgement was lost): said at once,
            # not after the starts, which may take long; the worker may not live through them
            # (found by the nemesis: killed 4 s into them, and another worker told it again).
            self._deletions.acknowledge(told)
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
        await self._starter.start_all({unit: assigned[unit] for unit in steps.starts})
        untold = [c for c in update.cleanups if c.instance not in told]
        await for_each(self._teller.clean_up, untold, MAX_CONCURRENT_UNIT_CALLS)
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

    async def process_for(self, plugin: PluginDescriptor) -> PluginProcess:
        """This worker's process of the plugin version (``PluginProcesses.hand_out``), stopped
        once idle as any of the worker's: standalone mode validates configs in the processes
        that run them."""
        host = await self.processes.hand_out(plugin)
        self._check_idle_later()
        return host

    def _on_host_event(self, process: PluginProcess, event: HostEvent) -> None:
        """A plugin process's event: a deletion heard is taken at once (``Deletions.heard``),
        whatever the worker is busy with; the rest wait their turn in the queue."""
        if isinstance(event, DeletionHeard):
            self._deletions.heard(process, event.unit)
        else:
            self._queue.put_nowait(UnitReported(event))

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
            await self._deletions.told(done)

    async def _stop(
        self,
        stop: Revocation,
        running: Running,
        done: list[Instance],
        restarting: frozenset[WorkUnit] = frozenset(),
    ) -> None:
        unit, deleted = stop.unit, stop.deleted
        process = self.processes.of(running.plugin, running.host)
        halted = False
        # Cut off, the deletion may be another worker's to deliver by now: the unit stops
        # without the marker, unacknowledged, and the coordinator hands it to whom it picks.
        tell = deleted and self._teller.may_tell(unit)
        if process is not None and process.client is not None and not running.held:
            halted = await self._teller.halt(process, (unit, running.incarnation), deleted=tell)
        self.log.info("unit_stopped", connector=unit.connector, task=unit.task, deleted=tell)
        if deleted:
            instance = (unit, running.incarnation)
            # Its process is gone (it crashed), did not answer, or the unit was held (paused or
            # stopped, so its plugin stopped without the marker): unless its process said the
            # plugin heard it all the same (and then failed to answer), the plugin has not
            # heard of the deletion yet, and is started only to hear of it.
            if tell and (
                halted
                or instance in self._deletions
                or await self._teller.deliver(running.cleanup(), running.plugin)
            ):
                self._deletions.remember(instance)
                done.append(instance)
            await self._status.deleted(unit)
        elif unit not in restarting:
            await self._report(unit, State.UNASSIGNED, running=running)

    def _host_lease(self) -> tuple[float, float]:
        """How long a plugin process may run on without hearing from this worker, and how long
        it then has to stop: what the worker itself would have (see ``membership``)."""
        session = self.membership.session_timeout
        return session * FENCE_AFTER, session * (1 - FENCE_AFTER) / 2

    def _on_fence(self) -> None:
        self._fresh.fenced()
        # Given up at once, not once the main task gets to it (it may be busy for long): a
        # Join sent meanwhile, as the worker rejoins, must not claim units it no longer runs,
        # or the coordinator would have their deletions delivered here a second time.
        units = dict(self.running)
        self.running.clear()  # the same mapping: the starter adds to it
        self._fencing = asyncio.ensure_future(self._fence(units))

    async def _fence(self, units: Mapping[WorkUnit, Running]) -> None:
        """Stops every plugin process at once, bounded in time: the worker is cut off, and its
        units may soon run elsewhere. The main task then reports them given up (``Fenced``)."""
        _, budget = self._host_lease()
        await self.processes.stop_all(wait_s=budget)
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
        current = running or self.running.get(unit)
        version = current.plugin.version if current and current.plugin else ""
        await self._status.report(unit, state, self.generation, version, trace)

    def _live(self, unit: WorkUnit) -> bool:
        """Whether the unit runs here in a plugin process (not held, not gone)."""
        running = self.running.get(unit)
        return running is not None and not running.held

    async def _reported(self, event: HostEvent) -> None:
        match event:
            case UnitStateChanged(unit, State.FAILED, trace) if self._live(unit):
                await self._report(unit, State.FAILED, trace=trace)
            case ReconfigurationRequested(connector) if self._live(WorkUnit.of(connector)):
                await self._starter.reconfigure(WorkUnit.of(connector))
            case TopicUsed(unit, topic) if self._live(unit) and self.settings.tracks_topics:
                await self._status.topic_used(unit, topic)
        # RUNNING is reported when a start returns, STOPPED when a stop does.

    async def _forget_topics(self, connector: str) -> None:
        """Has the connector's tasks here report the topics they use again, as they next use
        them, once the config service has forgotten those recorded (KIP-558's reset)."""
        self._status.topics_forgotten(connector)
        keys = {
            plugin_key(r.plugin)
            for u, r in self.running.items()
            if u.connector == connector and u.task >= 0 and r.plugin is not None
        }
        await self.processes.forget_topics(keys, connector, self.log)

    async def _exited(self, process: PluginProcess, code: int, overrun: str) -> None:
        if not await self.processes.exited(process):
            return
        trace = exit_trace(process, code, overrun)
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
        self.processes.check_idle_later(
            self._in_use(), lambda process: self._queue.put_nowait(IdleCheck(process))
        )

    def _catalog_changed(self, catalog: PluginCatalog) -> None:
        """The plugin path holds other plugins now: units started from now on resolve their
        plugin in ``catalog``; those running go on with theirs."""
        self.catalog = catalog

    async def _stop_everything(self) -> None:
        await runner.cancel(self._watching)
        await self._stop_all([Revocation(unit) for unit in self.running])
        await self.membership.leave()
        await self.processes.close()
        await self._task_configs.close()
        await self._executor_levels.close()
        await self._status.close()
        await self._deletions.close()
        self.log.info("worker_stopped")


def exit_trace(process: PluginProcess, code: int, overrun: str) -> str:
    """What the units of a plugin process that exited are FAILED with. What the process wrote
    last stays in its own log, which only the operator reads: it may be anything, another
    connector's secret included, and every unit of the process would show it to whoever may
    read a status. Only the watchdog's own reason (``overrun``) is shown."""
    trace = (
        f"plugin process {process.key} exited with code {code}; what it wrote last is in "
        f"its log, {process.log_file.name}, in the worker's log folder"
    )
    return f"{overrun}\n{trace}" if overrun else trace
