"""hanging source 1.0.0: its task's ``stop`` never returns (and ``poll`` never has data)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from headrace.sdk import SourceConnector, SourceRecord, SourceTask

VERSION = "1.0.0"


class HangingSourceConnector(SourceConnector):
    VERSION = VERSION

    async def start(self, config: Mapping[str, str]) -> None:
        self._config = dict(config)

    def task_class(self) -> type[HangingSourceTask]:
        return HangingSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self._config) for _ in range(max_tasks)]


class HangingSourceTask(SourceTask):
    VERSION = VERSION

    async def start(self, config: Mapping[str, str]) -> None:
        return None

    async def poll(self) -> list[SourceRecord]:
        await asyncio.sleep(0.2)
        return []

    async def stop(self, deleted: bool = False) -> None:
        await asyncio.Event().wait()  # forever: the host must give up on it
