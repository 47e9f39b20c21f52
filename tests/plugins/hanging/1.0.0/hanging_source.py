"""hanging source 1.0.0: its task hangs where ``hang.in`` says.

``hang.in=stop`` (the default): ``stop`` never returns, awaiting forever, and ``poll`` never has
data. ``hang.in=poll``: ``poll`` awaits forever. ``hang.in=block``: ``poll`` blocks the event
loop in a call that never returns (a wait on a thread event never set), as a blocking driver
call in async code would.
"""

from __future__ import annotations

import asyncio
import threading
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
        self.hang_in = config.get("hang.in", "stop")

    async def poll(self) -> list[SourceRecord]:
        if self.hang_in == "poll":
            await asyncio.Event().wait()
        if self.hang_in == "block":
            threading.Event().wait()  # never set: blocking the loop is what this plugin is for
        return []  # nothing to send: the runtime waits a little before it polls again

    async def stop(self, deleted: bool = False) -> None:
        if self.hang_in == "stop":
            await asyncio.Event().wait()  # forever: the host must give up on it
