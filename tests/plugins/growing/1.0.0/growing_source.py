"""growing source 1.0.0: a connector whose task count changes while it runs.

It starts with one task; ``grow.after.ms`` (default 500) later it asks for its tasks to be
reconfigured (``context.request_task_reconfiguration()``) and from then on answers ``grow.to``
task configs (default 3, at most ``tasks.max``), as a connector watching its source system would
when the system grows. Its tasks produce nothing. Each connector ``start`` is written as a line
to ``<path>/starts.jsonl`` when ``path`` is set, so a test can tell a reconfiguration from a
restart.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from pathlib import Path

from headrace.sdk import SourceConnector, SourceRecord, SourceTask

VERSION = "1.0.0"


class GrowingSourceConnector(SourceConnector):
    VERSION = VERSION

    async def start(self, config: Mapping[str, str]) -> None:
        self._config = dict(config)
        self._tasks = 1
        if config.get("path"):
            with (Path(config["path"]) / "starts.jsonl").open("a") as out:
                out.write(json.dumps({"connector": config.get("name", "")}) + "\n")
        delay = int(config.get("grow.after.ms", "500")) / 1000
        self._growing = asyncio.get_running_loop().call_later(delay, self._grow)

    def _grow(self) -> None:
        self._tasks = int(self._config.get("grow.to", "3"))
        self.context.request_task_reconfiguration()

    def task_class(self) -> type[GrowingSourceTask]:
        return GrowingSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        count = min(self._tasks, max_tasks)
        return [{**self._config, "task.id": str(k)} for k in range(count)]

    async def stop(self, deleted: bool = False) -> None:
        self._growing.cancel()


class GrowingSourceTask(SourceTask):
    VERSION = VERSION

    async def start(self, config: Mapping[str, str]) -> None:
        return None

    async def poll(self) -> list[SourceRecord]:
        return []  # nothing to send: the runtime waits a little before it polls again
