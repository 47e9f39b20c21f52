"""text-lines 1.0.0: a source that emits one record per line of the text files in a folder.

The example plugin of ``docs/writing-a-connector.md``. The connector lists the files in
``directory`` that match ``file.pattern`` and spreads them over at most ``tasks.max`` tasks; it
looks at the folder again every ``directory.poll.interval.ms`` and asks for new task configs when
the set of files changed. A task reads its files from where the last committed offsets left them:
each file is one source partition, ``{"directory": <directory as configured>, "file": <name>}``,
with the offset ``{"position": <byte after the line>, "line": <its number>}``. Lines end with
``\\n`` (a ``\\r`` before it is dropped); a last line without its ``\\n`` yet waits for it, so a
file may grow while it is read. Bytes that are not UTF-8 become U+FFFD.

Records have the file name as key. With ``value.format=struct`` (the default) the value is a
``Struct`` of the ``Line`` schema (file, line number, text, and the time it was read as a
Connect Timestamp); with ``value.format=text`` it is the line's text alone, and a poll returns
its lines as one ``SourceBatch``, the SDK's batch API.

Every path goes through ``context.paths``, so the folder must lie inside the folders the operator
allowed (``HEADRACE_FILE_ROOTS``); a relative ``directory`` is taken against the first of them.

Self-contained: the plugin host imports it as ``text_lines`` with this folder first on
``sys.path``; it imports nothing of headrace but ``headrace.sdk``.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path, PurePath
from typing import Any

from headrace.sdk import (
    TIMESTAMP_SCHEMA,
    ConfigDef,
    ConfigException,
    ConfigType,
    ConfigValue,
    ConnectError,
    ConnectorTransactionBoundaries,
    ExactlyOnceSupport,
    Importance,
    Range,
    Schema,
    SchemaBuilder,
    SourceBatch,
    SourceConnector,
    SourceRecord,
    SourceTask,
    Struct,
    ValidString,
    Width,
    non_empty_string,
    topic_name,
)
from headrace.sdk.data import INT64_SCHEMA, STRING_SCHEMA

VERSION = "1.0.0"
TASK_FILES = "task.files"
"""The key a task config carries its files under, as a JSON list of names."""
IDLE_POLL_S = 0.5
"""How long a poll that found no new line waits before it returns []."""
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def name_pattern(name: str, value: Any) -> None:
    """Accepts a glob for file names in one folder: no separator, so no way out of it."""
    non_empty_string(name, value)
    if value is not None and ("/" in str(value) or "\\" in str(value)):
        raise ConfigException(
            f"Invalid value {value} for configuration {name}: a pattern of file names in "
            "directory, without / or \\"
        )


class ShownForStructs:
    """The recommender of ``struct.name``: the key matters only when values are structs."""

    def valid_values(self, name: str, parsed: Mapping[str, Any]) -> list[Any]:
        return []

    def visible(self, name: str, parsed: Mapping[str, Any]) -> bool:
        return parsed.get("value.format") != "text"


CONFIG = (
    ConfigDef()
    .define(
        "directory",
        ConfigType.STRING,
        importance=Importance.HIGH,
        validator=non_empty_string,
        doc=(
            "The folder whose files are read. It must lie inside the folders the operator "
            "allowed (HEADRACE_FILE_ROOTS); a relative name is taken against the first of them."
        ),
        group="Input",
        order_in_group=1,
        width=Width.LONG,
        display_name="Input folder",
    )
    .define(
        "file.pattern",
        ConfigType.STRING,
        "*.txt",
        Importance.MEDIUM,
        "Which files of the folder are read: a glob of file names.",
        validator=name_pattern,
        group="Input",
        order_in_group=2,
        width=Width.SHORT,
        display_name="File name pattern",
    )
    .define(
        "directory.poll.interval.ms",
        ConfigType.LONG,
        5000,
        Importance.LOW,
        "How often the connector looks for files that appeared or went; 0 never looks again.",
        validator=Range(0, None),
        group="Input",
        order_in_group=3,
        display_name="Folder poll interval",
    )
    .define(
        "topic",
        ConfigType.STRING,
        importance=Importance.HIGH,
        validator=topic_name,
        doc="The topic every line is written to.",
        group="Output",
        order_in_group=1,
        width=Width.MEDIUM,
        display_name="Topic",
    )
    .define(
        "value.format",
        ConfigType.STRING,
        "struct",
        Importance.MEDIUM,
        "struct: a Line struct (file, line, text, read_at); text: the line's text alone.",
        validator=ValidString(("struct", "text"), case_sensitive=True),
        recommended_values=("struct", "text"),
        group="Output",
        order_in_group=2,
        width=Width.SHORT,
        display_name="Value format",
        dependents=("struct.name",),
    )
    .define(
        "struct.name",
        ConfigType.STRING,
        "headrace.example.Line",
        Importance.LOW,
        "The name of the Line schema, which schema-aware converters write with each value.",
        validator=non_empty_string,
        group="Output",
        order_in_group=3,
        display_name="Struct schema name",
        recommender=ShownForStructs(),
    )
    .define(
        "batch.size",
        ConfigType.INT,
        500,
        Importance.LOW,
        "The most lines one poll returns.",
        validator=Range(1, None),
    )
)


@dataclass(frozen=True)
class LinesConfig:
    """The parsed configuration, typed."""

    directory: str
    pattern: str
    poll_interval_s: float
    topic: str
    value_format: str
    struct_name: str
    batch_size: int

    @classmethod
    def parse(cls, config: Mapping[str, str]) -> LinesConfig:
        """ConfigException listing every problem, as ``ConfigDef.parse`` does."""
        parsed = CONFIG.parse(config)
        return cls(
            directory=parsed["directory"],
            pattern=parsed["file.pattern"],
            poll_interval_s=parsed["directory.poll.interval.ms"] / 1000,
            topic=parsed["topic"],
            value_format=parsed["value.format"],
            struct_name=parsed["struct.name"],
            batch_size=parsed["batch.size"],
        )


def line_schema(name: str) -> Schema:
    """The schema of a struct value: where the line is, what it says, and when it was read."""
    return (
        SchemaBuilder.struct()
        .name(name)
        .version(1)
        .field("file", STRING_SCHEMA)
        .field("line", INT64_SCHEMA)
        .field("text", STRING_SCHEMA)
        .field("read_at", TIMESTAMP_SCHEMA)
        .build()
    )


def list_files(folder: Path, pattern: str) -> list[str]:
    """The names of the regular files in ``folder`` matching ``pattern``, sorted. Symlinks are
    left out: a file is read where it is, never through a link. Blocking."""
    if not folder.is_dir():
        raise ConnectError(f"directory {folder} is not a folder (any more)")
    return sorted(p.name for p in folder.glob(pattern) if p.is_file() and not p.is_symlink())


def split(files: Sequence[str], max_tasks: int) -> list[list[str]]:
    """The files dealt out to at most ``max_tasks`` tasks, round robin; no task without one."""
    count = min(max_tasks, len(files))
    return [list(files[k::count]) for k in range(count)]


def read_lines(path: Path, position: int, limit: int) -> tuple[list[tuple[str, int]], bool]:
    """Up to ``limit`` complete lines of ``path`` from byte ``position`` on, each with the
    position just after it; and whether they reach the end of the complete lines the file holds
    now. A missing file holds none. Blocking: call it in a thread."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return [], True
    lines: list[tuple[str, int]] = []
    with os.fdopen(fd, "rb") as stream:
        stream.seek(position)
        for raw in stream:
            if not raw.endswith(b"\n"):
                break  # still being written: it is read once its newline is there
            if len(lines) == limit:
                return lines, False
            position += len(raw)
            text = raw[:-1].removesuffix(b"\r").decode("utf-8", errors="replace")
            lines.append((text, position))
    return lines, True


def resume_point(offset: Mapping[str, Any] | None) -> tuple[int, int]:
    """The (position, line number) a stored offset says reading goes on from; (0, 0) without
    one. An offset someone altered into another shape is refused rather than guessed at."""
    if offset is None:
        return 0, 0
    position, line = offset.get("position"), offset.get("line")
    for value in (position, line):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ConnectError(f"stored offset {dict(offset)} is not a position and a line")
    assert isinstance(position, int) and isinstance(line, int)
    return position, line


def millis_now() -> tuple[int, datetime]:
    """Now, as Kafka's milliseconds and as the datetime a Timestamp holds (whole ms)."""
    millis = time.time_ns() // 1_000_000
    return millis, _EPOCH + timedelta(milliseconds=millis)


class TextLinesSourceConnector(SourceConnector):
    """Lists the files, deals them out to tasks, and watches the folder for changes."""

    VERSION = VERSION

    def __init__(self) -> None:
        self._files: list[str] = []
        self._watch: asyncio.Task[None] | None = None

    def config(self) -> ConfigDef:
        return CONFIG

    def validate(self, config: Mapping[str, str]) -> list[ConfigValue]:
        """The ConfigDef's checks of each key, then one across keys."""
        results = super().validate(config)
        if config.get("value.format") == "text" and "struct.name" in config:
            struct_name = next(r for r in results if r.name == "struct.name")
            struct_name.errors.append("struct.name applies only with value.format=struct")
        return results

    def exactly_once_support(self, config: Mapping[str, str]) -> ExactlyOnceSupport:
        """A task resumes at the byte its last committed offset names: a file that is only
        appended to gives each line once."""
        return ExactlyOnceSupport.SUPPORTED

    def can_define_transaction_boundaries(
        self, config: Mapping[str, str]
    ) -> ConnectorTransactionBoundaries:
        """With ``transaction.boundary=connector`` a task commits when it caught up with a file."""
        return ConnectorTransactionBoundaries.SUPPORTED

    async def start(self, config: Mapping[str, str]) -> None:
        self._config = dict(config)
        self._settings = LinesConfig.parse(config)
        folder = self._folder()
        if not await asyncio.to_thread(folder.is_dir):
            raise ConfigException(
                f"Invalid value {self._settings.directory} for configuration directory: "
                f"{folder} is not a folder"
            )
        self._files = await asyncio.to_thread(list_files, folder, self._settings.pattern)
        self.context.logger.info("text_lines_started", folder=str(folder), files=len(self._files))
        if self._settings.poll_interval_s > 0:
            self._watch = asyncio.create_task(self._watch_folder(), name="text-lines-watch")

    def task_class(self) -> type[TextLinesSourceTask]:
        return TextLinesSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        groups = split(self._files, max_tasks)
        return [{**self._config, TASK_FILES: json.dumps(files)} for files in groups]

    async def stop(self, deleted: bool = False) -> None:
        # Nothing was provisioned outside this process, so a deletion has nothing to clean up.
        watch, self._watch = self._watch, None
        if watch is not None:
            watch.cancel()
            await asyncio.wait({watch})

    def _folder(self) -> Path:
        return self.context.paths.resolve(self._settings.directory, "directory")

    async def _watch_folder(self) -> None:
        """Asks for new task configs whenever the set of files changes; fails the connector
        when the folder cannot be listed any more."""
        while True:
            await asyncio.sleep(self._settings.poll_interval_s)
            try:
                files = await asyncio.to_thread(list_files, self._folder(), self._settings.pattern)
            except (OSError, ConnectError) as exc:
                self.context.raise_error(exc)
                return
            if files != self._files:
                self.context.logger.info("text_lines_files_changed", files=len(files))
                self._files = files
                self.context.request_task_reconfiguration()


@dataclass
class Cursor:
    """Where a task stands in one of its files: the byte after the last line it returned,
    and that line's number (0 before the first)."""

    name: str
    partition: dict[str, str]
    position: int = 0
    line: int = 0

    def offset(self) -> dict[str, int]:
        return {"position": self.position, "line": self.line}


class TextLinesSourceTask(SourceTask):
    """Reads its files in turn, each from its stored offset; stays on a file until it has
    caught up with it, then moves to the next."""

    VERSION = VERSION

    async def start(self, config: Mapping[str, str]) -> None:
        self.settings = LinesConfig.parse(config)
        self.schema = line_schema(self.settings.struct_name)
        names: list[str] = json.loads(config[TASK_FILES])
        partitions = [{"directory": self.settings.directory, "file": n} for n in names]
        # One read of the offset store for every file, rather than one per file.
        stored = self.context.offset_reader.offsets(partitions)
        self.cursors = [
            Cursor(name, partition, *resume_point(offset))
            for name, partition, (_, offset) in zip(names, partitions, stored, strict=True)
        ]
        self._turn = 0
        self.context.logger.info("text_lines_task_started", files=names)

    async def poll(self) -> list[SourceRecord] | SourceBatch:
        for _ in self.cursors:
            cursor = self.cursors[self._turn]
            lines, caught_up = await asyncio.to_thread(self._read, cursor)
            # No await from here on: a cancelled poll must not have moved any cursor.
            if caught_up:
                self._turn = (self._turn + 1) % len(self.cursors)
            if lines:
                first = cursor.line + 1
                cursor.position, cursor.line = lines[-1][1], cursor.line + len(lines)
                if caught_up and self.context.transaction_context is not None:
                    self.context.transaction_context.commit_transaction()
                return self._records(cursor, first, lines)
        await asyncio.sleep(IDLE_POLL_S)
        return []

    async def stop(self, deleted: bool = False) -> None:
        return None  # every read opens and closes its file: nothing is held between polls

    def _read(self, cursor: Cursor) -> tuple[list[tuple[str, int]], bool]:
        # Resolved again before each read: a link made since must not lead outside the roots.
        raw = str(PurePath(self.settings.directory) / cursor.name)
        path = self.context.paths.resolve(raw, "directory")
        return read_lines(path, cursor.position, self.settings.batch_size)

    def _records(
        self, cursor: Cursor, first: int, lines: list[tuple[str, int]]
    ) -> list[SourceRecord] | SourceBatch:
        millis, read_at = millis_now()
        if self.settings.value_format == "text":
            return SourceBatch(
                source_partition=cursor.partition,
                source_offset=cursor.offset(),
                topic=self.settings.topic,
                values=[text for text, _ in lines],
                keys=[cursor.name] * len(lines),
                timestamp=millis,
                key_schema=STRING_SCHEMA,
                value_schema=STRING_SCHEMA,
            )
        return [
            SourceRecord(
                source_partition=cursor.partition,
                source_offset={"position": position, "line": number},
                topic=self.settings.topic,
                value=Struct(self.schema)
                .put("file", cursor.name)
                .put("line", number)
                .put("text", text)
                .put("read_at", read_at),
                key=cursor.name,
                timestamp=millis,
                key_schema=STRING_SCHEMA,
                value_schema=self.schema,
            )
            for number, (text, position) in enumerate(lines, start=first)
        ]
