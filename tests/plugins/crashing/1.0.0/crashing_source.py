"""crashing source 1.0.0: its task kills the whole plugin process with ``os._exit(3)`` in ``poll``
once it returned ``crash.after.records`` (default 0) records, having written ``last.words`` (if
given) to its standard error, as a crashing driver might write what it held."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from headrace.sdk import SourceConnector, SourceRecord, SourceTask

VERSION = "1.0.0"
EXIT_CODE = 3


class CrashingSourceConnector(SourceConnector):
    VERSION = VERSION

    async def start(self, config: Mapping[str, str]) -> None:
        self._config = {"topic": f"{config.get('name') or self.context.name}-out", **config}

    def task_class(self) -> type[CrashingSourceTask]:
        return CrashingSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self._config) for _ in range(max_tasks)]


class CrashingSourceTask(SourceTask):
    VERSION = VERSION

    async def start(self, config: Mapping[str, str]) -> None:
        self.topic = config["topic"]
        self.crash_after = int(config.get("crash.after.records", "0"))
        self.last_words = config.get("last.words", "")
        self.sent = 0

    async def poll(self) -> list[SourceRecord]:
        if self.sent >= self.crash_after:
            if self.last_words:
                print(self.last_words, file=sys.stderr, flush=True)
            os._exit(EXIT_CODE)  # no cleanup, no flush: what a segfault looks like from outside
        n = self.sent
        self.sent += 1
        return [SourceRecord({"crash": 0}, {"n": n}, self.topic, {"n": n})]
