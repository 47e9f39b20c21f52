"""recording sink 2.0.0: as 1.0.0, and each record line carries ``"version": "2.0.0"``.

``<path>/records.jsonl``: one line per record (topic, partition, offset, key, value, task), with
the pid of the process that got it and the time (``at_ms``).
``<path>/lifecycle.jsonl``: one line per call (unit connector|task, event, deleted, version, pid,
at_ms). ``<path>/task_configs.jsonl``: the task count of each ``task_configs`` answer (pid, at_ms).
"""

from __future__ import annotations

import base64
import json
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from headrace.sdk import (
    ConnectError,
    SinkConnector,
    SinkRecord,
    SinkTask,
    Struct,
    TopicPartition,
)

VERSION = "2.0.0"
TAG_RECORDS = True  # what 1.0.0 does not do


def _jsonable(value: Any) -> Any:
    if isinstance(value, bytes | bytearray):
        return {"$bytes": base64.b64encode(bytes(value)).decode()}
    if isinstance(value, Struct):
        return value.to_dict()
    raise TypeError(f"cannot record {type(value).__name__}")


def _append(path: Path, entries: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as out:
        out.write("".join(json.dumps(e, default=_jsonable) + "\n" for e in entries))


def _lifecycle(folder: str, **entry: Any) -> None:
    # The process and the time of each call: who ran a unit when (a unit on two processes at
    # once is what a nemesis looks for).
    where = {"pid": os.getpid(), "at_ms": time.time_ns() // 1_000_000}
    _append(Path(folder) / "lifecycle.jsonl", [{**entry, "version": VERSION, **where}])


class RecordingSinkConnector(SinkConnector):
    VERSION = VERSION

    async def start(self, config: Mapping[str, str]) -> None:
        self.path = config["path"]
        self.name = config.get("name") or self.context.name
        self._config = dict(config)
        _lifecycle(self.path, unit="connector", connector=self.name, event="start")

    def task_class(self) -> type[RecordingSinkTask]:
        return RecordingSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        # How many tasks it asked for, and when: the units a later deletion must stop.
        entry = {"tasks": max_tasks, "pid": os.getpid(), "at_ms": time.time_ns() // 1_000_000}
        _append(Path(self.path) / "task_configs.jsonl", [entry])
        return [dict(self._config) for _ in range(max_tasks)]

    async def stop(self, deleted: bool = False) -> None:
        _lifecycle(self.path, unit="connector", connector=self.name, event="stop", deleted=deleted)

    def alter_offsets(
        self, config: Mapping[str, str], offsets: Mapping[tuple[str, int], int | None]
    ) -> bool:
        """KIP-875, as ``alter.offsets`` says: ``handle`` (True), ``refuse`` (a ConnectError),
        ``unsupported`` (NotImplementedError), else the default (False); each call recorded
        with the offsets it was given."""
        given = {f"{topic}/{partition}": offset for (topic, partition), offset in offsets.items()}
        _lifecycle(config["path"], unit="connector", connector=config.get("name", ""),
                   event="alter_offsets", offsets=given)  # fmt: skip
        answer = config.get("alter.offsets", "")
        if answer == "refuse":
            raise ConnectError("the recording sink keeps its offsets to itself")
        if answer == "unsupported":
            raise NotImplementedError
        return answer == "handle"


class RecordingSinkTask(SinkTask):
    VERSION = VERSION

    async def start(self, config: Mapping[str, str]) -> None:
        self.path = config["path"]
        # fail.put.task=N: task N raises in every put, to test what a failed sink commits.
        self.fail_put = config.get("fail.put.task") == str(self.context.task)
        self._log(event="start", label=config.get("label", ""))

    def _log(self, **entry: Any) -> None:
        _lifecycle(
            self.path,
            unit="task",
            connector=self.context.connector,
            task=self.context.task,
            **entry,
        )

    async def put(self, records: list[SinkRecord]) -> None:
        if self.fail_put:
            raise RuntimeError("failing on purpose in put")
        pid, at_ms = os.getpid(), time.time_ns() // 1_000_000
        lines = [
            {
                "topic": r.topic,
                "partition": r.partition,
                "offset": r.offset,
                "key": r.key,
                "value": r.value,
                "task": self.context.task,
                "pid": pid,
                "at_ms": at_ms,
                **({"version": VERSION} if TAG_RECORDS else {}),
            }
            for r in records
        ]
        _append(Path(self.path) / "records.jsonl", lines)

    async def open(self, partitions: set[TopicPartition]) -> None:
        self._log(event="open", partitions=sorted(str(p) for p in partitions))

    async def close(self, partitions: set[TopicPartition]) -> None:
        self._log(event="close", partitions=sorted(str(p) for p in partitions))

    async def stop(self, deleted: bool = False) -> None:
        self._log(event="stop", deleted=deleted)
