"""The config service's view of the cluster: configs and status, rebuilt by replay.

Two topic logs feed two folds: the configs topic into :class:`ConfigState` (desired), the status
topic into the status map (observed). Writes go through :meth:`ConfigStore.write`, which appends
and then waits until the fold has read the write back, so an answer never runs ahead of the log.
Writers take one lock: validation and append happen against a state that cannot move between.
"""

from __future__ import annotations

import asyncio
from types import MappingProxyType

from headrace.core import configlog, status
from headrace.core.configstate import ConfigState, apply
from headrace.core.settings import Settings
from headrace.core.topiclog import LogRecord, TopicLog


class ConfigStore:
    """Holds the folded state; the only code that changes it is the two logs' record handlers."""

    def __init__(self, settings: Settings) -> None:
        self.configs = ConfigState()
        self.statuses: status.StatusState = MappingProxyType({})
        self._config_log = TopicLog(
            settings.bootstrap_servers, settings.topic("configs"), self._on_config
        )
        self._status_log = TopicLog(
            settings.bootstrap_servers, settings.topic("status"), self._on_status
        )
        self.write_lock = asyncio.Lock()

    def _on_config(self, record: LogRecord) -> None:
        event = configlog.decode(record.key, record.value)
        if event is not None:
            self.configs = apply(event, self.configs)

    def _on_status(self, record: LogRecord) -> None:
        self.statuses = status.apply(self.statuses, record.key, record.value)

    async def start(self) -> None:
        await self._config_log.start()
        await self._status_log.start(writer=False)

    def readers(self) -> list[asyncio.Task[None] | None]:
        """The tasks that keep the state current; the service stops if one of them ends."""
        return [self._config_log.reader, self._status_log.reader]

    async def close(self) -> None:
        await self._config_log.close()
        await self._status_log.close()

    async def current(self) -> ConfigState:
        """The configs after reading everything written so far (read-before-act)."""
        await self._config_log.catch_up()
        return self.configs

    async def current_status(self) -> status.StatusState:
        await self._status_log.catch_up()
        return self.statuses

    async def write(self, records: list[configlog.Record]) -> ConfigState:
        """Appends records to the configs topic and returns the state that includes them."""
        await self._config_log.write_and_read_back(records)
        return self.configs
