"""The topics a connector's tasks use (KIP-558): listed, reset, and forgotten with the
connector, while the operator keeps topic tracking on (the worker config's
``topic.tracking.enable`` and ``topic.tracking.allow.reset``).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence

from aiokafka.errors import KafkaError

from headrace.config.commands.views import ConnectorView
from headrace.config.store import ConfigStore
from headrace.config.validation import ConfigRejected, Problem, check_exists
from headrace.core.model import configlog
from headrace.core.model.configstate import ConfigState
from headrace.core.observability import log


class TopicCommands:
    def __init__(
        self,
        store: ConfigStore,
        view: Callable[[str], Awaitable[ConnectorView]],
        tracks: bool,
        reset_allowed: bool,
    ) -> None:
        """``view``: a connector as answered (``Commands.get``), which says it exists."""
        self._store = store
        self._view = view
        self._tracks = tracks
        self._reset_allowed = tracks and reset_allowed

    async def of(self, name: str) -> Sequence[str]:
        """The topics the connector's tasks have used since it was created or its topics were
        last reset (KIP-558); FORBIDDEN when topic tracking is off."""
        self._tracking("Topic tracking is disabled.")
        await self._view(name)
        return await self._store.connector_topics(name)

    async def reset(self, name: str) -> None:
        """Forgets the connector's topics: the list starts again from what its tasks use next,
        as Connect's does. The tombstones first, then a record of the configs topic that the
        coordinator hands every worker, which has the connector's running tasks report their
        topics again. FORBIDDEN when topic tracking or its reset is off."""
        self._tracking("Topic tracking is disabled.")
        if not self._reset_allowed:
            raise ConfigRejected(Problem.FORBIDDEN, "Topic tracking reset is disabled.")
        await self._view(name)
        await self._store.forget_topics(name)
        record = configlog.topics_reset(name, int(time.time() * 1000))

        async def plan(state: ConfigState) -> list[configlog.Record]:
            check_exists(name, state)  # deleted meanwhile: nothing to reset
            return [record]

        await self._store.transact(plan)

    def _tracking(self, refusal: str) -> None:
        if not self._tracks:
            raise ConfigRejected(Problem.FORBIDDEN, refusal)

    async def forget(self, name: str) -> None:
        try:
            await self._store.forget_topics(name)
        except KafkaError as exc:  # the deletion stands; the list is shown for no connector
            log.get().error("topics_not_forgotten", connector=name, error=repr(exc))
