"""A running connector or task inside the plugin process, with a lifecycle that never hangs.

``TaskUnit`` owns one task and its runner: ``start`` starts it and launches its loop, any failure
becomes a FAILED event with the traceback; ``stop`` asks the loop to finish its batch, commits,
calls the plugin's ``stop(deleted=...)`` once (a deletion heard is said on the bus at once), and
closes the Kafka clients. Every plugin call on the way out is bounded by ``stop_timeout`` so a
hung plugin cannot wedge the process.
``ConnectorUnit`` does the same for the connector. Every call into plugin code is also bounded
by the process's watchdog, which ends the process when one holds it (see ``watchdog``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import Protocol

from headrace.components.transforms import parse_chain
from headrace.core.model.connectorconfig import (
    check_support,
    enforce_tasks_max,
    tasks_max,
    transactions,
)
from headrace.core.model.structs import (
    DeletionHeard,
    ReconfigurationRequested,
    State,
    UnitStateChanged,
    WorkUnit,
)
from headrace.core.observability import log
from headrace.runtime import watchdog
from headrace.runtime.converted import Converted
from headrace.runtime.host.events import EventBus
from headrace.runtime.lifecycle import bounded, format_trace
from headrace.sdk.config import ConfigValue
from headrace.sdk.connector import Connector, ConnectorContext, SourceConnector
from headrace.sdk.errors import ConfigException
from headrace.sdk.paths import Paths
from headrace.sdk.task import NoOffsets, OffsetReader, Task

STOP_KILL_GRACE_S = 5.0
"""How long past its stop timeout a stop may hold the event loop before the process is ended."""


class Runner(Protocol):
    """What a task loop offers its unit (``SourceRunner``, ``SinkRunner``)."""

    @property
    def task(self) -> Task: ...  # read-only, so a runner may hold a SourceTask or a SinkTask

    async def start(self, loop: bool = True) -> None:
        """Starts the plugin's task, and without ``loop`` nothing its loop would need."""
        ...

    async def run(self) -> None: ...
    def request_stop(self) -> None: ...
    async def finish(self) -> None: ...
    async def close(self) -> None: ...
    def forget_topics(self) -> None: ...


class TaskUnit:
    """One task: its runner, its loop, and whether it failed."""

    def __init__(
        self,
        unit: WorkUnit,
        runner: Runner | None,
        bus: EventBus,
        stop_timeout: float,
        task_config: Mapping[str, str],
    ) -> None:
        self.unit = unit
        self.runner = runner
        self.bus = bus
        self.stop_timeout = stop_timeout
        self.task_config = dict(task_config)
        self.failed = False
        self._loop: asyncio.Task[None] | None = None
        self._log = log.get(connector=unit.connector, task=unit.task)

    async def start(self) -> None:
        """Starts the runner and its loop; failures are reported, never raised."""
        if self.runner is None:
            return  # creating the task already failed and was reported
        try:
            await self.runner.start()
        except Exception as exc:  # noqa: BLE001 - any plugin error fails the task, with its trace
            self.fail(exc)
            return
        self._log.info("task_started")
        self.bus.publish(UnitStateChanged(self.unit, State.RUNNING))
        self._loop = asyncio.create_task(self._run(), name=str(self.unit))

    def fail(self, exc: BaseException) -> None:
        """Marks the task FAILED and reports the traceback."""
        self.failed = True
        trace = format_trace(exc)
        self._log.error("task_failed", error=str(exc), trace=trace)
        self.bus.publish(UnitStateChanged(self.unit, State.FAILED, trace))

    async def _run(self) -> None:
        assert self.runner is not None
        try:
            await self.runner.run()
        except Exception as exc:  # noqa: BLE001 - reported as FAILED, the worker decides next
            self.fail(exc)

    async def stop(self, deleted: bool) -> None:
        """Finishes the loop, commits, stops the plugin's task once, closes the clients."""
        if self.runner is not None:
            await self._stop_runner(self.runner, deleted)
        self._log.info("task_stopped", deleted=deleted)
        self.bus.publish(UnitStateChanged(self.unit, State.STOPPED))

    async def _stop_runner(self, runner: Runner, deleted: bool) -> None:
        runner.request_stop()
        if self._loop is not None:
            done, _ = await asyncio.wait({self._loop}, timeout=self.stop_timeout)
            if not done:
                self._log.warning("task_loop_stop_timeout", timeout_s=self.stop_timeout)
                self._loop.cancel()
                await asyncio.wait({self._loop}, timeout=1.0)
                self.failed = True  # its batch may be half done: do not commit it
        if self._loop is not None and not self.failed:
            await self._call(runner.finish(), "task_commit_failed", "task_commit_timeout")
        await self._call(runner.task.stop(deleted=deleted), "task_stop_failed", "task_stop_timeout")
        if deleted:
            # Said before the clients close, which can take seconds (a consumer leaving its
            # group): a worker killed meanwhile has recorded it, and does not have the plugin
            # told a second time.
            self.bus.publish(DeletionHeard(self.unit))
        await self._call(runner.close(), "task_close_failed", "task_close_timeout")

    async def _call(self, work: Awaitable[None], failed_event: str, timeout_event: str) -> None:
        try:
            with stop_bound(self.unit, failed_event, self.stop_timeout):
                finished, _ = await bounded(work, self.stop_timeout)
        except Exception as exc:  # noqa: BLE001 - stopping goes on; the error is logged
            self._log.error(failed_event, error=str(exc), trace=format_trace(exc))
            return
        if not finished:
            self._log.warning(timeout_event, timeout_s=self.stop_timeout)


class ConnectorUnit:
    """One connector instance."""

    def __init__(
        self,
        name: str,
        connector: Connector,
        config: Mapping[str, str],
        bus: EventBus,
        stop_timeout: float,
        *,
        paths: Paths | None = None,
        exactly_once: bool = True,
        stored_offsets: Callable[[], Awaitable[OffsetReader]] | None = None,
    ) -> None:
        """``stored_offsets`` reads a source connector's stored offsets, as it starts."""
        self.name = name
        self.unit = WorkUnit.of(name)
        self._stored_offsets = stored_offsets
        self.exactly_once = exactly_once  # the worker config's exactly.once.source.support
        self.connector = connector
        self.config = dict(config)
        self.bus = bus
        self.stop_timeout = stop_timeout
        self.paths = Paths() if paths is None else paths  # Paths(): no folder allowed
        self.failed = False
        self._log = log.get(connector=name)

    async def start(self) -> list[dict[str, str]]:
        """Validates and starts the connector; returns its task configs.

        ConfigException for a bad config; other plugin errors propagate (the caller reports
        them). Both leave the unit FAILED and reported on the bus.
        """
        try:
            reader = NoOffsets() if self._stored_offsets is None else await self._stored_offsets()
            self.connector.initialize(
                ConnectorContext(
                    self.name,
                    self._request_reconfiguration,
                    self.fail,
                    logger=self._log,
                    paths=self.paths,
                    offset_reader=reader,
                )
            )
            with watchdog.bounded(self.unit, "connector_start"):
                configs = await self._start_connector()
        except Exception as exc:
            self.fail(exc)
            raise
        self._log.info("connector_started", tasks=len(configs))
        self.bus.publish(UnitStateChanged(self.unit, State.RUNNING))
        return configs

    async def _start_connector(self) -> list[dict[str, str]]:
        """Validates, starts the plugin's connector and asks it for its task configs."""
        max_tasks = tasks_max(self.config)
        raise_errors(self.connector.validate(self.config))
        if not issubclass(self.connector.task_class(), Converted):  # else where they run
            parse_chain(self.config).close()  # every transform and predicate problem, by key
        if isinstance(self.connector, SourceConnector):
            check_support(
                transactions(self.config, self.exactly_once),
                self.connector.exactly_once_support(self.config),
                self.connector.can_define_transaction_boundaries(self.config),
            )
        await self.connector.start(self.config)
        return task_configs_of(self.connector, max_tasks, enforce_tasks_max(self.config))

    def fail(self, exc: BaseException) -> None:
        """Marks the connector FAILED (also what ``context.raise_error`` does)."""
        self.failed = True
        trace = format_trace(exc)
        self._log.error("connector_failed", error=str(exc), trace=trace)
        self.bus.publish(UnitStateChanged(self.unit, State.FAILED, trace))

    def _request_reconfiguration(self) -> None:
        self._log.info("task_reconfiguration_requested")
        self.bus.publish(ReconfigurationRequested(self.name))

    async def stop(self, deleted: bool) -> None:
        """Calls the plugin's ``stop(deleted=...)`` once, bounded by ``stop_timeout``."""
        try:
            with stop_bound(self.unit, "connector_stop", self.stop_timeout):
                finished, _ = await bounded(self.connector.stop(deleted=deleted), self.stop_timeout)
            if not finished:
                self._log.warning("connector_stop_timeout", timeout_s=self.stop_timeout)
        except Exception as exc:  # noqa: BLE001 - stopping goes on; the error is logged
            self._log.error("connector_stop_failed", error=str(exc), trace=format_trace(exc))
        if deleted:
            self.bus.publish(DeletionHeard(self.unit))
        self._log.info("connector_stopped", deleted=deleted)
        self.bus.publish(UnitStateChanged(self.unit, State.STOPPED))


@contextlib.contextmanager
def stop_bound(unit: WorkUnit, call: str, stop_timeout: float) -> Iterator[None]:
    """The watchdog's bound on a stop: past ``stop_timeout`` an awaiting stop is abandoned, as
    Connect abandons it; only one that holds the event loop past the grace as well (a blocking
    call, which no abandoning frees) ends the process."""
    with watchdog.bounded(unit, call, stop_timeout + STOP_KILL_GRACE_S):
        yield


def task_configs_of(
    connector: Connector, max_tasks: int, enforce: bool = True
) -> list[dict[str, str]]:
    """The connector's task configs, at most ``max_tasks`` of them (RuntimeError otherwise),
    or all of them when ``tasks.max.enforce`` is false (with a warning, as Connect logs)."""
    configs = [dict(c) for c in connector.task_configs(max_tasks)]
    if len(configs) > max_tasks and not enforce:
        log.get().warning("tasks_max_exceeded", tasks=len(configs), tasks_max=max_tasks)
    elif len(configs) > max_tasks:
        raise RuntimeError(
            f"task_configs({max_tasks}) returned {len(configs)} configs, more than tasks.max"
        )
    return configs


def raise_errors(results: list[ConfigValue]) -> None:
    """ConfigException listing every per-key error of a validation."""
    errors = [f"{r.name}: {e}" for r in results for e in r.errors]
    if errors:
        raise ConfigException("; ".join(errors))
