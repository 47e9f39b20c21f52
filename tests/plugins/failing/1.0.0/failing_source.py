"""failing source 1.0.0: its task raises on purpose.

``fail.in=start`` raises in the task's ``start``; ``fail.in=poll`` (default) raises in ``poll``
once ``fail.after.records`` (default 0) records were returned; ``fail.in=connector`` raises in the
connector's own ``start``. ``fail.times`` (default: always) makes a task fail only its first
that many runs in this plugin process, as a flaky task would, and then run without failing.
Records are ``{"n": i}`` to ``topic``.
"""

from __future__ import annotations

from collections.abc import Mapping

from headrace.sdk import SourceConnector, SourceRecord, SourceTask

VERSION = "1.0.0"
FAILED_RUNS: dict[tuple[str, int], int] = {}  # per (connector, task): runs that failed so far


class FailingSourceConnector(SourceConnector):
    VERSION = VERSION

    async def start(self, config: Mapping[str, str]) -> None:
        if config.get("fail.in") == "connector":
            raise RuntimeError("failing on purpose in the connector's start")
        self._config = {"topic": f"{config.get('name') or self.context.name}-out", **config}

    def task_class(self) -> type[FailingSourceTask]:
        return FailingSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{**self._config, "task.id": str(k)} for k in range(max_tasks)]


class FailingSourceTask(SourceTask):
    VERSION = VERSION

    async def start(self, config: Mapping[str, str]) -> None:
        if config.get("fail.in", "poll") == "start":
            raise RuntimeError("failing on purpose in start")
        self.topic = config["topic"]
        self.fail_after = int(config.get("fail.after.records", "0"))
        self.task = int(config.get("task.id", "0"))
        self.sent = 0
        self.run = (config.get("name", ""), self.task)
        times = config.get("fail.times", "")
        self.fails = not times or FAILED_RUNS.get(self.run, 0) < int(times)

    async def poll(self) -> list[SourceRecord]:
        if self.fails and self.sent >= self.fail_after:
            FAILED_RUNS[self.run] = FAILED_RUNS.get(self.run, 0) + 1
            raise RuntimeError(f"failing on purpose in poll after {self.sent} records")
        n = self.sent
        self.sent += 1
        return [SourceRecord({"task": self.task}, {"n": n}, self.topic, {"n": n}, key=str(n))]
