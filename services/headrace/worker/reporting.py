"""What a worker says of its units on the status topic: each unit's state as it observed it, the
topics each connector's tasks use (KIP-558), and, once a unit is deleted, that it is gone.

Status is what the worker observed: a write that fails is logged, and the work goes on.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Mapping

import immutables
from aiokafka.errors import KafkaError
from structlog.typing import FilteringBoundLogger

from headrace.core.model.persistent import with_item, without_item
from headrace.core.model.status import TopicStatus, UnitStatus, status_key
from headrace.core.model.structs import State, WorkUnit
from headrace.core.storage.stores import StatusStore


class StatusReporter:
    def __init__(self, store: StatusStore, worker_id: str, log: FilteringBoundLogger) -> None:
        self._store = store
        self._worker_id = worker_id
        self._log = log
        # The state each unit here last reported, for the metrics: replaced, never mutated, so
        # their server's thread reads a whole one.
        self.states: Mapping[WorkUnit, State] = immutables.Map()
        # The topics this worker recorded for each connector: the ones whose records it
        # forgets when the connector is deleted (the config service forgets those recorded
        # before the deletion; a task may still write to a topic until it is stopped).
        self._topics: dict[str, set[str]] = {}

    async def start(self) -> None:
        await self._store.start(reader=False)

    async def close(self) -> None:
        await self._store.close()

    async def report(
        self, unit: WorkUnit, state: State, generation: int, version: str = "", trace: str = ""
    ) -> None:
        """The unit's state, as of the assignment ``generation``, run by its plugin ``version``."""
        self.states = (
            without_item(self.states, unit)
            if state is State.UNASSIGNED
            else with_item(self.states, unit, state)
        )
        reported = UnitStatus(unit, state, self._worker_id, trace, generation, version)
        await self._write(unit, self._store.report(reported))

    async def topic_used(self, unit: WorkUnit, topic: str) -> None:
        self._topics.setdefault(unit.connector, set()).add(topic)
        used = TopicStatus(topic, unit.connector, unit.task, int(time.time() * 1000))
        await self._write(unit, self._store.report_topic(used))

    def topics_forgotten(self, connector: str) -> None:
        """The connector's topics were reset: those its tasks use next are recorded anew."""
        self._topics.pop(connector, None)

    async def deleted(self, unit: WorkUnit) -> None:
        """The unit is gone for good: its status, and the topics its connector's tasks here
        recorded, are removed."""
        self.states = without_item(self.states, unit)
        await self._write(unit, self._store.remove(unit))
        topics = self._topics.pop(unit.connector, set())
        await self._write(unit, self._store.forget_topics(unit.connector, topics))

    async def _write(self, unit: WorkUnit, write: Awaitable[None]) -> None:
        try:
            await write
        except KafkaError as exc:
            self._log.error("status_write_failed", key=status_key(unit), error=repr(exc))
