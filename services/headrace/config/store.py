"""The config service's view of the cluster: configs and status, rebuilt by replay.

Two logs feed two folds: the configs topic into :class:`ConfigState` (desired), the status topic
into the status map (observed, through :class:`StatusStore`). Writes go through
:meth:`ConfigStore.transact`, which decides what to write against the state read to the end of
the topic, appends it, and waits until the fold has read the write back, so an answer never runs
ahead of the log.

Replicas of the config service write the one topic side by side. Their appends are transactions
under one transactional id, so an append commits only if no other replica wrote since this one
read: one that lost is discarded unseen, and the command reads again and decides again. Two
racing creates of one name thus end with one winner, the first in the topic, and one
ALREADY_EXISTS. In one replica, a lock keeps its own writers in turn.
"""

from __future__ import annotations

import asyncio
import itertools
import random
from collections.abc import Awaitable, Callable

from headrace.core import configlog, log
from headrace.core.configstate import ConfigState, apply
from headrace.core.errors import WriterFenced
from headrace.core.settings import Settings
from headrace.core.status import StatusState, StatusStore
from headrace.core.topiclog import LogFactory, LogRecord, kafka_logs


class ConfigStore:
    """Holds the folded state; the only code that changes it is the logs' record handlers."""

    def __init__(self, config_logs: LogFactory, statuses: StatusStore) -> None:
        self.configs = ConfigState()
        self._config_log = config_logs(self._on_config)
        self._statuses = statuses
        self._write_lock = asyncio.Lock()

    @classmethod
    def on_kafka(cls, settings: Settings) -> ConfigStore:
        """The store over the cluster's configs and status topics."""
        configs = kafka_logs(settings, "configs", writer_id=f"{settings.cluster}-configs-writer")
        return cls(configs, StatusStore(kafka_logs(settings, "status")))

    def _on_config(self, record: LogRecord) -> None:
        event = configlog.decode(record.key, record.value, record.offset)
        if event is not None:
            self.configs = apply(self.configs, event)

    async def start(self) -> None:
        await self._config_log.start()
        await self._statuses.start(writer=False)

    def readers(self) -> list[asyncio.Task[None] | None]:
        """The tasks that keep the state current; the service stops if one of them ends."""
        return [self._config_log.reader, self._statuses.reader]

    async def close(self) -> None:
        await self._config_log.close()
        await self._statuses.close()

    async def current(self) -> ConfigState:
        """The configs after reading everything written so far (read-before-act)."""
        await self._config_log.catch_up()
        return self.configs

    async def current_status(self) -> StatusState:
        return await self._statuses.current()

    async def transact(self, plan: Plan) -> ConfigState:
        """Appends the records ``plan`` makes of the current state, and returns the state that
        includes them. ``plan`` raises to refuse, and is asked again, against the state read
        anew, when another replica wrote first."""
        async with self._write_lock:
            for attempt in itertools.count(1):
                records = await plan(await self.current())
                if not records:
                    return self.configs
                try:
                    await self._config_log.write_and_read_back(records)
                except WriterFenced:
                    log.get().info("configs_write_retried", attempt=attempt)
                    # Jitter: two replicas that keep fencing each other fall out of step.
                    await asyncio.sleep(random.uniform(0, min(0.2, 0.005 * 2**attempt)))
                    continue
                return self.configs
        raise AssertionError("unreachable")


Plan = Callable[[ConfigState], Awaitable[list[configlog.Record]]]
"""What a command writes, given the configs as they are: records, none, or an exception."""
