"""file-source 1.0.0: Kafka Connect's ``FileStreamSourceConnector``: one record per line of a file.

Keys, as Kafka's: ``file`` (the file to read), ``topic`` (exactly one topic) and ``batch.size``
(the most records one poll returns, default 2000). One task, whatever ``tasks.max`` says: one
file is one stream. Two differences from Kafka, both refusals: an unset ``file`` is an error
(Kafka reads standard input, which a plugin process does not have), and ``file`` must lie inside
the folders the operator allowed (``HEADRACE_FILE_ROOTS``, checked through ``context.paths``);
a relative ``file`` is taken relative to the first of them.

Records, as Kafka's: no key, the line as a string value with the STRING schema, the source
partition ``{"filename": <file as configured>}`` and the source offset ``{"position": <byte
position just after the line's terminator>}``. A poll returns its lines as one ``SourceBatch``
(the SDK's batch API) whose offset is the position after its last line: the lines are split
and checked as UTF-8 in native code, and reach Kafka without a Python step per line.

Lines end with ``\\n``, ``\\r\\n`` or ``\\r``; a last line without its terminator yet is held
back until the terminator arrives (and a ``\\r`` at the very end waits for the next byte, which
may make it ``\\r\\n``). Bytes that are not UTF-8 become U+FFFD, as Kafka's reader does. Unlike
Kafka, whose positions count characters, positions count bytes, so resuming after multi-byte
text lands where it should.

Each poll reads at most one chunk (``READ_CHUNK``) beyond what it has buffered, as Kafka's task
reads what is available, unless no line is complete yet and the file has more. The task seeks
to its stored position when it opens the file, so a restarted task neither repeats nor skips a
line; it follows the file as it grows, and waits (``IDLE_POLL_S``) while the file does not
exist yet or has nothing new. It keeps the file open once it has it, as Kafka does: a file
replaced under the same name is not noticed, and truncating the file leaves the task waiting
at its old position.

Self-contained: the plugin host imports it as ``headrace_file_source`` with this folder first on
``sys.path``; it imports nothing of headrace but ``headrace.sdk``.
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from headrace.sdk import (
    NO_DEFAULT,
    ConfigDef,
    ConfigException,
    ConfigType,
    ConfigValue,
    ConnectError,
    ExactlyOnceSupport,
    Importance,
    Range,
    Schema,
    SchemaType,
    SourceBatch,
    SourceConnector,
    SourceTask,
    non_empty_string,
    topic_name,
)
from headrace.sdk.columns import string_column

if TYPE_CHECKING:  # imported where a task makes a column: a process that only validates
    import pyarrow as pa  # configs (the config service's) never loads it, about 40 MiB

VERSION = "1.0.0"
FILENAME_FIELD = "filename"
POSITION_FIELD = "position"
DEFAULT_BATCH_SIZE = 2000
IDLE_POLL_S = 1.0
"""How long a poll waits before returning [] when nothing is new (Kafka's ``wait(1000)``)."""
READ_CHUNK = 1024 * 1024
"""Bytes per read: large, because each read is a hop to a thread and back."""
VALUE_SCHEMA = Schema(SchemaType.STRING)
_TERMINATOR = re.compile(rb"\r\n|\r|\n")  # \r\n first: it is one terminator, not two


def require_file(name: str, value: Any) -> None:
    """Refuses an unset or blank file: Kafka would read standard input, a plugin has none."""
    if value is None or not str(value).strip():
        raise ConfigException(
            f"Invalid value {value} for configuration {name}: must name the file to read "
            "(Kafka's FileStreamSource reads standard input when it is unset; headrace does not)"
        )


def single_topic(name: str, value: Any) -> None:
    """Accepts one topic name Kafka takes; a list of topics is an error, as in Kafka."""
    non_empty_string(name, value)
    if value is not None and "," in str(value):
        raise ConfigException(
            f"Invalid value {value} for configuration {name}: must be a single topic, not a list"
        )
    topic_name(name, value)


CONFIG = (
    ConfigDef()
    .define(
        "file",
        ConfigType.STRING,
        None,
        Importance.HIGH,
        validator=require_file,
        doc=(
            "Source filename. Required (headrace never reads standard input). Must lie inside "
            "one of the folders the operator allowed (HEADRACE_FILE_ROOTS); a relative name is "
            "taken relative to the first of them."
        ),
    )
    .define(
        "topic",
        ConfigType.STRING,
        NO_DEFAULT,
        Importance.HIGH,
        validator=single_topic,
        doc="The topic to publish data to.",
    )
    .define(
        "batch.size",
        ConfigType.INT,
        DEFAULT_BATCH_SIZE,
        Importance.LOW,
        validator=Range(1, None),
        doc=(
            "The maximum number of records the source task can read from the file each time "
            "it is polled."
        ),
    )
)


def split_lines(data: bytes | bytearray, limit: int) -> list[tuple[str, int]]:
    """Up to ``limit`` complete lines at the start of ``data``: each line's text and how many
    bytes of ``data`` it takes, its terminator included. Text after the last terminator is no
    line yet, nor is a line whose ``\\r`` ends ``data`` (a ``\\n`` may follow it)."""
    lines: list[tuple[str, int]] = []
    start = 0
    for match in _TERMINATOR.finditer(data):
        if len(lines) >= limit:
            break
        if match.end() == len(data) and data[match.start() :] == b"\r":
            break
        lines.append((data[start : match.start()].decode("utf-8", errors="replace"), match.end()))
        start = match.end()
    return lines


def lines_of(data: bytes | bytearray, limit: int) -> tuple[pa.Array, int]:
    """``split_lines`` as a pyarrow string column and the bytes its lines take. Text that is
    all ``\n``-terminated is split and checked in native code; a ``\r`` or bytes that are
    not UTF-8 take ``split_lines``'s way, with its U+FFFD for what does not decode."""
    import pyarrow as pa

    if b"\r" not in data:
        parts = data.split(b"\n", limit)  # at most ``limit`` lines, then the rest
        consumed = len(data) - len(parts[-1])
        try:
            return string_column(parts[:-1]), consumed
        except pa.ArrowInvalid:
            pass  # not UTF-8: decoded line by line below, as Kafka's reader replaces
    lines = split_lines(data, limit)
    texts = [text.encode() for text, _ in lines]
    return string_column(texts), lines[-1][1] if lines else 0


def stored_position(offset: Mapping[str, Any] | None) -> int:
    """Where reading starts: the stored ``position``, or 0 when none is stored."""
    position = None if offset is None else offset.get(POSITION_FIELD)
    if position is None:
        return 0
    if isinstance(position, bool) or not isinstance(position, int) or position < 0:
        raise ConnectError(f"Offset position is the incorrect type: {position!r}")
    return position


class FileStreamSourceConnector(SourceConnector):
    """Checks the config (and that ``file`` is allowed); hands one task the same config."""

    VERSION = VERSION

    async def start(self, config: Mapping[str, str]) -> None:
        parsed = CONFIG.parse(config)
        path = self.context.paths.resolve(parsed["file"], "file")
        self._config = dict(config)
        self.context.logger.info("file_source_connector_started", file=str(path))

    def exactly_once_support(self, config: Mapping[str, str]) -> ExactlyOnceSupport:
        """A task resumes at the byte position its last committed offset names, so a file that is
        only appended to gives each line once."""
        return ExactlyOnceSupport.SUPPORTED

    def task_class(self) -> type[FileStreamSourceTask]:
        return FileStreamSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self._config)]  # only one reader of one file makes sense

    def config(self) -> ConfigDef:
        return CONFIG

    def validate(self, config: Mapping[str, str]) -> list[ConfigValue]:
        """The keys' checks, and that ``file`` is in a folder the operator allowed."""
        return self.context.paths.check(super().validate(config), "file")


class FileStreamSourceTask(SourceTask):
    """Reads lines from its stored position on; ``position`` moves only as records are returned.

    ``_pending`` holds the bytes read ahead, always those just after ``_position`` in the file,
    so a poll cancelled at any await loses nothing: the next one goes on from the same place.
    """

    VERSION = VERSION

    def __init__(self) -> None:
        self._fd: int | None = None
        self._pending = bytearray()
        self._waiting_logged = False

    async def start(self, config: Mapping[str, str]) -> None:
        parsed = CONFIG.parse(config)
        self.filename: str = parsed["file"]
        self.topic: str = parsed["topic"]
        self.batch_size: int = parsed["batch.size"]
        self.path = self.context.paths.resolve(self.filename, "file")
        self.partition = {FILENAME_FIELD: self.filename}
        self._position = stored_position(self.context.offset_reader.offset(self.partition))

    async def poll(self) -> SourceBatch | list[Any]:
        if self._fd is None and not await self._open():
            await asyncio.sleep(IDLE_POLL_S)  # Kafka too waits for the file to be created
            return []
        lines, consumed = await self._lines()
        if not consumed:
            await asyncio.sleep(IDLE_POLL_S)
            return []
        # No await from here on: the batch and the position move together.
        del self._pending[:consumed]
        self._position += consumed
        return SourceBatch(
            source_partition=self.partition,
            source_offset={POSITION_FIELD: self._position},
            topic=self.topic,
            values=lines,
            value_schema=VALUE_SCHEMA,
            timestamp=int(time.time() * 1000),
        )

    async def stop(self, deleted: bool = False) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    async def _lines(self) -> tuple[pa.Array, int]:
        """Up to ``batch.size`` complete lines after the position, and the bytes they take.

        Reads a chunk first unless a chunk's worth is buffered, and goes on reading while no
        line is complete and the last read filled its chunk (a line longer than a chunk)."""
        more = True
        if len(self._pending) < READ_CHUNK:
            more = await self._read_more()
        while True:
            lines, consumed = lines_of(self._pending, self.batch_size)
            if consumed or not more:
                return lines, consumed
            more = await self._read_more()

    async def _read_more(self) -> bool:
        """Appends the next chunk of the file to ``_pending``; whether the file may have more."""
        chunk = await self._read(self._position + len(self._pending))
        self._pending += chunk
        return len(chunk) == READ_CHUNK

    async def _read(self, offset: int) -> bytes:
        assert self._fd is not None
        # pread takes its offset and leaves no file position behind: a read whose poll was
        # cancelled changes nothing.
        return await asyncio.to_thread(os.pread, self._fd, READ_CHUNK, offset)

    async def _open(self) -> bool:
        """Opens the file once it exists; False while it does not."""
        opening = asyncio.ensure_future(asyncio.to_thread(self._open_now))
        try:
            # Shielded: a poll cancelled here must not lose an opened descriptor in the thread.
            fd = await asyncio.shield(opening)
        except asyncio.CancelledError:
            opening.add_done_callback(_close_unclaimed)
            raise
        if fd is None:
            if not self._waiting_logged:
                self.context.logger.warning("file_source_waiting_for_file", file=str(self.path))
                self._waiting_logged = True
            return False
        self._fd = fd
        self.context.logger.info(
            "file_source_file_opened", file=str(self.path), position=self._position
        )
        return True

    def _open_now(self) -> int | None:
        """The file's descriptor, or None when it does not exist yet. Resolved again first: a
        symlink or folder made since ``start`` must not lead outside the allowed folders."""
        path = self.context.paths.resolve(self.filename, "file")
        try:
            return os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            return None


def _close_unclaimed(opening: asyncio.Future[int | None]) -> None:
    """Closes what an abandoned open returned."""
    if opening.cancelled() or opening.exception() is not None:
        return
    fd = opening.result()
    if fd is not None:
        os.close(fd)
