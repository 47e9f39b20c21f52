"""Restarts of a connector's units: an operator's (Connect's ``/restart``, with
``includeTasks`` and ``onlyFailed``, and a task's), and the automatic ones the restarter makes
(``headrace.config.restarter``), each written to the configs topic as a restart record that the
coordinator hands the units' workers. The plans are pure functions of the config state.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass

from headrace.config.commands.views import ConnectorView, traces_masked
from headrace.config.store import ConfigStore
from headrace.config.validation import check_exists, check_task
from headrace.core.model import configlog
from headrace.core.model.autorestart import Attempt, Shown
from headrace.core.model.configstate import ConfigState
from headrace.core.model.status import StatusState, of_connector
from headrace.core.model.structs import CONNECTOR_TASK, State, Target, WorkUnit


@dataclass(frozen=True)
class RestartPlan:
    """The units a restart asked for, as Kafka Connect plans them (``onlyFailed``,
    ``includeTasks``); they are reported RESTARTING until their worker has restarted them."""

    connector: bool
    tasks: tuple[int, ...]

    @property
    def units(self) -> list[int]:
        return ([CONNECTOR_TASK] if self.connector else []) + list(self.tasks)


def plan_restart(
    task_count: int, statuses: StatusState, name: str, *, include_tasks: bool, only_failed: bool
) -> RestartPlan:
    """Which of a connector's units a restart covers: the connector, and with ``include_tasks``
    its tasks; with ``only_failed`` only those that are FAILED."""

    def wanted(unit: WorkUnit) -> bool:
        status = statuses.get(unit)
        return not only_failed or (status is not None and status.state is State.FAILED)

    tasks = range(task_count) if include_tasks else range(0)
    return RestartPlan(
        wanted(WorkUnit.of(name)), tuple(t for t in tasks if wanted(WorkUnit(name, t)))
    )


ShownRestarts = Callable[[ConfigState, StatusState, str], Mapping[int, Shown]]
"""Per task (-1: the connector), what a status says of its automatic restarts: set by whoever
runs them (``headrace.config.restarter``); none by default."""


class RestartCommands:
    def __init__(
        self,
        store: ConfigStore,
        with_hidden: Callable[[str], Awaitable[tuple[ConnectorView, Sequence[str]]]],
    ) -> None:
        """``with_hidden``: a connector as answered, and the secret values of its config
        (``Commands``), which a restart's answer hides from its units' traces."""
        self._store = store
        self._with_hidden = with_hidden
        self.shown_by: ShownRestarts = lambda configs, statuses, name: {}
        """What a status says of the automatic restarts: the restarter's, once it runs."""

    async def restart(
        self, name: str, *, include_tasks: bool = False, only_failed: bool = False
    ) -> tuple[ConnectorView, StatusState, RestartPlan]:
        """Restarts the connector, and with ``include_tasks`` its tasks (with ``only_failed``
        only the FAILED ones); the status answered shows the restarted units RESTARTING."""
        planned = RestartPlan(connector=False, tasks=())
        statuses: StatusState = {}

        async def plan(state: ConfigState) -> list[configlog.Record]:
            nonlocal planned, statuses
            check_exists(name, state)
            statuses = of_connector(await self._store.current_status(), name)
            planned = plan_restart(
                len(state.tasks_of(name)),
                statuses,
                name,
                include_tasks=include_tasks,
                only_failed=only_failed,
            )
            return [configlog.restart(name, planned.units)] if planned.units else []

        await self._store.transact(plan)
        view, hidden = await self._with_hidden(name)
        return view, traces_masked(statuses, hidden), planned

    async def automatic(self, name: str, task: int, attempt: int, at_ms: int) -> None:
        """Restarts the unit (task -1: the connector) as its ``attempt``-th automatic restart in
        a row; nothing when that attempt was made already (by another replica)."""

        async def plan(state: ConfigState) -> list[configlog.Record]:
            check_exists(name, state)
            if state.target_of(name) is not Target.RUNNING:
                return []
            attempts = dict(state.auto_restarts.get(name, {}))
            last = attempts.get(task)
            if (last.count if last is not None else 0) >= attempt:
                return []
            attempts[task] = Attempt(attempt, at_ms)
            return [configlog.restart(name, [task]), configlog.auto_restarts(name, attempts)]

        await self._store.transact(plan)

    async def recovered(self, name: str, task: int) -> None:
        """Forgets the unit's automatic restarts: it has run long enough since the last."""

        async def plan(state: ConfigState) -> list[configlog.Record]:
            check_exists(name, state)
            attempts = dict(state.auto_restarts.get(name, {}))
            if attempts.pop(task, None) is None:
                return []
            return [configlog.auto_restarts(name, attempts)]

        await self._store.transact(plan)

    async def task(self, name: str, task: int) -> None:
        async def plan(state: ConfigState) -> list[configlog.Record]:
            check_task(name, task, state)
            return [configlog.restart(name, [task])]

        await self._store.transact(plan)

    def shown(self, name: str, statuses: StatusState) -> Mapping[int, Shown]:
        """What the connector's status says of its units' automatic restarts."""
        return self.shown_by(self._store.configs, statuses, name)
