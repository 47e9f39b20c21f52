"""datagen 1.0.0: a source that generates deterministic records, for demos and tests.

Task k of n generates the ids k, k+n, k+2n, ... below ``records`` (unbounded when unset), so the
tasks together produce every id exactly once. Record ``id`` has key ``str(id)`` and value
``{"id": id, "name": f"record-{id}", "amount": id * 0.25}``. Each task's source partition is
``{"generator": <connector name>, "task": k}`` with offset ``{"next": <next id>}``, so a restarted
task resumes where its last stored offset left it. A poll returns its records as one
``SourceBatch`` (the SDK's batch API), whose offset is the next id after its last record.

This module is self-contained: the plugin host imports it as ``headrace_datagen`` with this folder
first on ``sys.path``, so it must not import its siblings.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from headrace.sdk import (
    ConfigDef,
    ConfigType,
    ExactlyOnceSupport,
    Importance,
    Range,
    SourceBatch,
    SourceConnector,
    SourceTask,
    topic_name,
)

VERSION = "1.0.0"
IDLE_POLL_S = 0.5  # how long a finished task's poll waits before returning []

CONFIG = (
    ConfigDef()
    .define(
        "topic",
        ConfigType.STRING,
        importance=Importance.HIGH,
        validator=topic_name,
        doc="The topic records are written to.",
    )
    .define(
        "records",
        ConfigType.LONG,
        None,
        Importance.MEDIUM,
        validator=Range(0, None),
        doc="How many records to generate across all tasks; unbounded when unset.",
    )
    .define(
        "batch.size",
        ConfigType.INT,
        100,
        Importance.LOW,
        validator=Range(1, None),
        doc="Records per poll.",
    )
    .define(
        "interval.ms",
        ConfigType.LONG,
        0,
        Importance.LOW,
        validator=Range(0, None),
        doc="Pause between batches, in milliseconds.",
    )
)


def record_value(record_id: int) -> dict[str, Any]:
    """The deterministic value of one record."""
    return {"id": record_id, "name": f"record-{record_id}", "amount": record_id * 0.25}


def next_ids(start: int, tasks: int, limit: int | None, count: int) -> list[int]:
    """Up to ``count`` ids from ``start`` in steps of ``tasks``, all below ``limit``."""
    stop = start + tasks * count
    if limit is not None:
        stop = min(stop, limit)
    return list(range(start, stop, tasks))


def first_id(task: int, stored: Mapping[str, Any] | None) -> int:
    """Where a task starts: its stored ``next`` offset, else its own number."""
    if stored is not None and isinstance(stored.get("next"), int):
        return int(stored["next"])
    return task


class DatagenSourceConnector(SourceConnector):
    """Splits the id space among tasks by residue: task k takes ids = k (mod n)."""

    VERSION = VERSION

    async def start(self, config: Mapping[str, str]) -> None:
        self._config = dict(config)
        CONFIG.parse(config)  # a bad value fails the start with every problem listed

    def exactly_once_support(self, config: Mapping[str, str]) -> ExactlyOnceSupport:
        """Its records are a function of the offsets a task resumes from."""
        return ExactlyOnceSupport.SUPPORTED

    def task_class(self) -> type[DatagenSourceTask]:
        return DatagenSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        name = self._config.get("name") or self.context.name
        return [
            {**self._config, "generator": name, "task.id": str(k), "tasks": str(max_tasks)}
            for k in range(max_tasks)
        ]

    def config(self) -> ConfigDef:
        return CONFIG


class DatagenSourceTask(SourceTask):
    """Generates the ids of one residue class, resuming from its stored offset."""

    VERSION = VERSION

    async def start(self, config: Mapping[str, str]) -> None:
        parsed = CONFIG.parse(config)
        self.topic: str = parsed["topic"]
        self.limit: int | None = parsed["records"]
        self.batch_size: int = parsed["batch.size"]
        self.interval_s: float = parsed["interval.ms"] / 1000
        self.tasks = int(config["tasks"])
        self.task = int(config["task.id"])
        # The task count is part of the partition: with another count each task walks another
        # residue class, and positions stored under the old count would skip ids. A new count
        # starts over instead, which repeats ids (at-least-once) but never leaves one out.
        self.partition = {"generator": config["generator"], "task": self.task, "of": self.tasks}
        self.next_id = first_id(self.task, self.context.offset_reader.offset(self.partition))
        self._polled = False

    async def poll(self) -> SourceBatch | list[Any]:
        if self.limit is not None and self.next_id >= self.limit:
            await asyncio.sleep(IDLE_POLL_S)  # finished: wait rather than spin
            return []
        if self._polled and self.interval_s:
            await asyncio.sleep(self.interval_s)
        self._polled = True
        ids = next_ids(self.next_id, self.tasks, self.limit, self.batch_size)
        if not ids:
            return []
        self.next_id = ids[-1] + self.tasks
        return SourceBatch(
            source_partition=self.partition,
            source_offset={"next": self.next_id},
            topic=self.topic,
            values=[record_value(i) for i in ids],
            keys=[str(i) for i in ids],
        )

    async def stop(self, deleted: bool = False) -> None:
        return None
