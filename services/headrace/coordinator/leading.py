"""What a leading coordinator runs, over the logs it is given: the group, resumed from the
assignments log and fed from the configs log, and its clock. The distributed coordinator leads
with the cluster's topics while it holds the lease (``__main__``); standalone mode leads with logs
in its one process, for as long as it runs."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from headrace.coordinator import metrics
from headrace.coordinator.assignmentlog import AssignmentLog, Generation
from headrace.coordinator.configview import ConfigFeed
from headrace.coordinator.group import DeletionsDone, Group, Tick
from headrace.coordinator.service import CoordinatorServicer
from headrace.core import runner
from headrace.core.model.configstate import LogLevel, level_pairs
from headrace.core.observability import log
from headrace.core.storage.replay import replaying
from headrace.core.storage.topiclog import LogFactory


async def tick(group: Group, every: float) -> None:
    while True:
        await asyncio.sleep(every)
        group.submit(Tick())


def resume(group: Group, assignments: AssignmentLog) -> None:
    """Has ``group`` go on from the replayed ``assignments``: from its last generation, less the
    deletions workers recorded as told since; and from now on, each deletion recorded as told is
    the acknowledgement of the worker that told it. (Nothing is read between the two: no await.)
    """
    if assignments.last is not None:
        group.resume(assignments.last, assignments.history.told.values())
    assignments.on_told = lambda t: group.submit(
        DeletionsDone(t.worker_id, frozenset({t.instance}))
    )


def config_feed(configs: LogFactory, servicer: CoordinatorServicer) -> ConfigFeed:
    """The configs log's feed for a coordinator that serves with ``servicer``: the cluster's
    log levels go to this process and to the workers, a connector's topics reset to the
    workers running its tasks, and the cluster's installed plugins to every worker."""

    def on_levels(levels: Mapping[str, LogLevel]) -> None:
        log.cluster_levels.apply(level_pairs(levels))
        servicer.set_log_levels(levels)

    return ConfigFeed(configs, on_levels, servicer.topics_reset, servicer.set_plugins)


class Leading:
    """The group led from ``assignments`` and the ``configs`` feed, served by ``servicer``. The
    feed may have begun its replay before (:meth:`ConfigFeed.replay`); it is closed with the
    leading."""

    def __init__(
        self,
        assignments: LogFactory,
        configs: ConfigFeed,
        servicer: CoordinatorServicer,
        *,
        session_timeout: float,
        grace: float,
        name: str,
    ) -> None:
        self.assignments = AssignmentLog(assignments)
        self._configs = configs
        self._servicer = servicer
        self._session_timeout = session_timeout
        self._grace = grace
        self._name = name
        self.group: Group | None = None
        self.tasks: list[asyncio.Task[None]] = []

    async def _append(self, generation: Generation) -> None:
        await self.assignments.append(generation)
        metrics.REBALANCES.inc()
        metrics.GENERATION.set(generation.number)

    async def start(self) -> None:
        """Replays the assignments and the configs (unless that replay ran before), and starts
        leading: workers that join are served from now on."""
        with replaying("assignments"):
            await self.assignments.start()
        group = self.group = Group(
            self._append, session_timeout=self._session_timeout, grace=self._grace, name=self._name
        )
        resume(group, self.assignments)
        metrics.GENERATION.set(group.generation)
        await self._configs.start(group.submit)
        self.tasks = [
            asyncio.create_task(group.run(), name="group"),
            asyncio.create_task(tick(group, min(0.5, self._session_timeout / 8)), name="tick"),
        ]
        self._servicer.lead(group, lambda: self.assignments.history)

    @property
    def readers(self) -> list[asyncio.Task[None]]:
        """The tasks whose end ends the leading: the group's, and the logs' readers."""
        found = [self._configs.reader, self.assignments.reader]
        return [*self.tasks, *(r for r in found if r is not None)]

    async def stop(self) -> None:
        self._servicer.lead(None)
        for task in self.tasks:
            await runner.cancel(task)
        if self.group is not None:
            self.group.end_streams()  # its workers look for the replica that leads now
        await self._configs.close()
        await self.assignments.close()
