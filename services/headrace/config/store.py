"""The config service's view of the cluster: configs and status, rebuilt by replay.

Two logs feed two folds: the configs topic into :class:`ConfigState` (desired), the status topic
into the status map (observed, through :class:`StatusStore`). Writes go through
:meth:`ConfigStore.write`, which appends and then waits until the fold has read the write back,
so an answer never runs ahead of the log. Writers take one lock: validation and append happen
against a state that cannot move between.
"""

from __future__ import annotations

import asyncio

from headrace.core import configlog
from headrace.core.configstate import ConfigState, apply
from headrace.core.settings import Settings
from headrace.core.status import StatusState, StatusStore
from headrace.core.topiclog import LogFactory, LogRecord, kafka_logs


class ConfigStore:
    """Holds the folded state; the only code that changes it is the logs' record handlers."""

    def __init__(self, config_logs: LogFactory, statuses: StatusStore) -> None:
        self.configs = ConfigState()
        self._config_log = config_logs(self._on_config)
        self._statuses = statuses
        self.write_lock = asyncio.Lock()

    @classmethod
    def on_kafka(cls, settings: Settings) -> ConfigStore:
        """The store over the cluster's configs and status topics."""
        return cls(kafka_logs(settings, "configs"), StatusStore(kafka_logs(settings, "status")))

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

    async def write(self, records: list[configlog.Record]) -> ConfigState:
        """Appends records to the configs topic and returns the state that includes them."""
        await self._config_log.write_and_read_back(records)
        return self.configs
