"""word-count 1.0.0: a sink that counts the words of the lines it consumes, into JSON files.

The example plugin of ``docs/writing-a-connector.md``, the other half of ``text-lines``. Each
record's text (a string value, or the ``text`` field of a struct or a JSON object) is split into
words, and each topic partition's counts are kept in a file of their own in the folder
``output``: ``counts-<topic>-<partition>.json``, holding::

    {"topic": "lines", "partition": 0, "next_offset": 42, "records": 41,
     "words": {"cat": 2, "the": 5, ...}}

``next_offset`` is the offset of the first record the counts do not hold yet. The file is
replaced whole, atomically, at each flush, so its counts and that offset always agree. When a
partition is opened the task reads its file back and tells the framework to go on consuming
from ``next_offset`` (``context.offset``): a record is counted once, even when the consumer
group's committed offset lags behind the file, or was reset.

A record without text is handed to ``context.errant_record_reporter``: it fails the task under
``errors.tolerance=none`` (the default), and is skipped (and sent to the dead letter queue, when
there is one) under ``errors.tolerance=all``.

The connector claims the folder, in ``_owner.json``, so two connectors never count into one
folder; deleting the connector (``stop(deleted=True)``) gives the claim up and leaves the counts.

Self-contained: the plugin host imports it as ``word_count`` with this folder first on
``sys.path``; it imports nothing of headrace but ``headrace.sdk``.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from headrace.sdk import (
    ConfigDef,
    ConfigException,
    ConfigType,
    DataError,
    Importance,
    Range,
    SinkConnector,
    SinkRecord,
    SinkTask,
    Struct,
    TopicPartition,
    non_empty_string,
)

VERSION = "1.0.0"
OWNER_FILE = "_owner.json"
WORD = re.compile(r"\w+(?:'\w+)*")
"""A word: letters, digits or underscores, with inner apostrophes (don't, o'clock)."""

CONFIG = (
    ConfigDef()
    .define(
        "output",
        ConfigType.STRING,
        importance=Importance.HIGH,
        validator=non_empty_string,
        doc=(
            "The folder the counts are written to, created if missing. It must lie inside the "
            "folders the operator allowed (HEADRACE_FILE_ROOTS); a relative name is taken "
            "against the first of them."
        ),
        display_name="Output folder",
    )
    .define(
        "lowercase",
        ConfigType.BOOLEAN,
        True,
        Importance.MEDIUM,
        "Whether words are counted without regard to case (The and the are one word).",
    )
    .define(
        "min.word.length",
        ConfigType.INT,
        1,
        Importance.LOW,
        "Words shorter than this are not counted.",
        validator=Range(1, 1000),
    )
)


@dataclass(frozen=True)
class CountConfig:
    """The parsed configuration, typed."""

    output: str
    lowercase: bool
    min_length: int

    @classmethod
    def parse(cls, config: Mapping[str, str]) -> CountConfig:
        parsed = CONFIG.parse(config)
        return cls(parsed["output"], parsed["lowercase"], parsed["min.word.length"])


def text_of(value: Any) -> str | None:
    """The text of a record value: a string, or the ``text`` field of a struct or a JSON
    object; None when it has none."""
    if isinstance(value, Struct):
        has_text = any(f.name == "text" for f in value.schema.fields)
        value = value.get("text") if has_text else None
    elif isinstance(value, dict):
        value = value.get("text")
    return value if isinstance(value, str) else None


def words_of(text: str, config: CountConfig) -> list[str]:
    """The words of ``text`` as they are counted."""
    words = WORD.findall(text.lower() if config.lowercase else text)
    return [w for w in words if len(w) >= config.min_length]


@dataclass
class PartitionCounts:
    """The counts of one topic partition, and the offset they reach."""

    next_offset: int = 0
    records: int = 0
    words: Counter[str] = field(default_factory=Counter)

    def to_json(self, tp: TopicPartition) -> dict[str, Any]:
        return {
            "topic": tp.topic,
            "partition": tp.partition,
            "next_offset": self.next_offset,
            "records": self.records,
            "words": dict(sorted(self.words.items())),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PartitionCounts:
        return cls(int(data["next_offset"]), int(data["records"]), Counter(data["words"]))


def counts_file(folder: Path, tp: TopicPartition) -> Path:
    """Where one topic partition's counts are (topic names cannot hold a path separator)."""
    return folder / f"counts-{tp.topic}-{tp.partition}.json"


def read_json(path: Path) -> Any:
    """The JSON in ``path``, or None when there is no such file; never through a symlink.
    Blocking."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    with os.fdopen(fd, "rb") as stream:
        return json.load(stream)


def write_json(path: Path, data: Any) -> None:
    """Replaces ``path`` with ``data`` atomically: a reader, or a task that crashed halfway,
    sees the old file or the new one, never a mix. Durable once it returns. Blocking."""
    temporary = path.with_name(f".{path.name}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
    with os.fdopen(os.open(temporary, flags, 0o644), "wb") as out:
        out.write(json.dumps(data, indent=1).encode() + b"\n")
        out.flush()
        os.fsync(out.fileno())
    os.replace(temporary, path)


class WordCountSinkConnector(SinkConnector):
    """Claims the output folder; every task gets the same config (the consumer group spreads
    the partitions over them)."""

    VERSION = VERSION

    async def start(self, config: Mapping[str, str]) -> None:
        settings = CountConfig.parse(config)
        folder = self.context.paths.resolve(settings.output, "output")
        await asyncio.to_thread(self._claim, folder, settings.output)
        self._config = dict(config)
        self._owner = folder / OWNER_FILE

    def _claim(self, folder: Path, raw: str) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        owner = read_json(folder / OWNER_FILE)
        if owner is not None and owner.get("connector") != self.context.name:
            raise ConfigException(
                f"Invalid value {raw} for configuration output: the folder holds the counts "
                f"of connector {owner.get('connector')!r}"
            )
        write_json(folder / OWNER_FILE, {"connector": self.context.name})

    def task_class(self) -> type[WordCountSinkTask]:
        return WordCountSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self._config) for _ in range(max_tasks)]

    async def stop(self, deleted: bool = False) -> None:
        # A restart, a rebalance or a pause keeps the claim; only a deletion gives it up.
        owner = getattr(self, "_owner", None)  # None when start failed before claiming
        if deleted and owner is not None:
            await asyncio.to_thread(owner.unlink, missing_ok=True)

    def config(self) -> ConfigDef:
        return CONFIG


class WordCountSinkTask(SinkTask):
    """Counts in memory in ``put``, writes the files of what changed in ``flush``, and keeps
    its position in those files rather than trusting the consumer group's alone."""

    VERSION = VERSION

    async def start(self, config: Mapping[str, str]) -> None:
        self.settings = CountConfig.parse(config)
        self.folder = self.context.paths.resolve(self.settings.output, "output")
        self.counts: dict[TopicPartition, PartitionCounts] = {}
        self.changed: set[TopicPartition] = set()

    async def open(self, partitions: set[TopicPartition]) -> None:
        for tp in sorted(partitions):
            stored = await asyncio.to_thread(read_json, counts_file(self.folder, tp))
            counts = PartitionCounts() if stored is None else PartitionCounts.from_json(stored)
            self.counts[tp] = counts
            if stored is not None:
                # Go on after what the file holds: no record is counted twice, whatever the
                # group committed.
                self.context.offset(tp, counts.next_offset)
        self.context.logger.info("word_count_opened", partitions=sorted(map(str, partitions)))

    async def put(self, records: list[SinkRecord]) -> None:
        for record in records:
            counts = self.counts[record.topic_partition]
            if record.offset < counts.next_offset:
                continue  # counted already: a put tried again, or a record read again
            text = text_of(record.value)
            if text is None:
                error = DataError(f"a value without text: {type(record.value).__name__}")
                await self.context.errant_record_reporter.report(record, error)
            else:
                counts.words.update(words_of(text, self.settings))
                counts.records += 1
            counts.next_offset = record.offset + 1
            self.changed.add(record.topic_partition)

    async def flush(self, offsets: dict[TopicPartition, int]) -> None:
        # Resolved again: a link made since start must not lead the writes outside the roots.
        self.folder = self.context.paths.resolve(self.settings.output, "output")
        for tp in sorted(self.changed):
            path = counts_file(self.folder, tp)
            await asyncio.to_thread(write_json, path, self.counts[tp].to_json(tp))
        self.changed.clear()

    async def pre_commit(self, offsets: dict[TopicPartition, int]) -> dict[TopicPartition, int]:
        """Writes what changed, then answers the offsets the files hold: those are safe."""
        await self.flush(offsets)
        return {
            tp: self.counts[tp].next_offset
            for tp in offsets
            if tp in self.counts and self.counts[tp].next_offset > 0
        }

    async def close(self, partitions: set[TopicPartition]) -> None:
        # The framework flushed and committed them first; their new owner reads the files.
        for tp in partitions:
            self.counts.pop(tp, None)
            self.changed.discard(tp)

    async def stop(self, deleted: bool = False) -> None:
        return None  # each flush opens and closes its files: nothing is held
