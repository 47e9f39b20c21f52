"""file-sink 1.0.0: Kafka Connect's ``FileStreamSinkConnector``: each record's value as a line.

Keys: ``file`` (the file to append to), and the framework's ``topics`` / ``topics.regex``. Every
task gets the same config, as in Kafka, so with ``tasks.max`` above 1 several tasks append to one
file (each ``put`` is written in one piece, but lines of different tasks interleave). Two
differences from Kafka, both refusals: an unset ``file`` is an error (Kafka writes to standard
output, which nobody reads in a plugin process), and ``file`` must lie inside the folders the
operator allowed (``HEADRACE_FILE_ROOTS``, checked through ``context.paths``); a relative
``file`` is taken relative to the first of them.

Output, as Kafka's ``PrintStream.println(value)``, from ``put`` or, for a string column, from the
batch API's ``put_batch`` in one join: the value as text (``str(value)`` for what is
not a string, ``null`` for a null value) and ``\\n``, in UTF-8 (unencodable characters become
``?``). The file is created if missing (its folder must exist) and opened for appending at
``start``, closed at ``stop``; ``flush`` hands what ``put`` wrote to the operating system, and,
as in Kafka, does not fsync.

Self-contained: the plugin host imports it as ``headrace_file_sink`` with this folder first on
``sys.path``; it imports nothing of headrace but ``headrace.sdk``.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from headrace.sdk import (
    ConfigDef,
    ConfigException,
    ConfigType,
    ConfigValue,
    ConnectError,
    Importance,
    SinkBatch,
    SinkConnector,
    SinkRecord,
    SinkTask,
    TopicPartition,
)
from headrace.sdk.columns import int64_column, is_arrow, string_column

if TYPE_CHECKING:  # imported where a task meets a column: a process that only validates
    import pyarrow as pa  # configs (the config service's) never loads it, about 40 MiB

VERSION = "1.0.0"
_TEXT = ("string", "large_string")  # the names of pyarrow's text types
_APPEND = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC


def require_file(name: str, value: Any) -> None:
    """Refuses an unset or blank file: Kafka would write to standard output."""
    if value is None or not str(value).strip():
        raise ConfigException(
            f"Invalid value {value} for configuration {name}: must name the file to write "
            "(Kafka's FileStreamSink writes to standard output when it is unset; headrace "
            "does not)"
        )


CONFIG = ConfigDef().define(
    "file",
    ConfigType.STRING,
    None,
    Importance.HIGH,
    validator=require_file,
    doc=(
        "Destination filename, appended to. Required (headrace never writes to standard "
        "output). Must lie inside one of the folders the operator allowed "
        "(HEADRACE_FILE_ROOTS); a relative name is taken relative to the first of them."
    ),
)


def line_of(value: Any) -> str:
    """A record value as Kafka's sink prints it (``String.valueOf``), without the newline."""
    if value is None:
        return "null"
    return value if isinstance(value, str) else str(value)


def lines_of(values: pa.Array) -> pa.Buffer:
    """A string column as its lines in UTF-8, joined by ``\n`` in native code (without the
    last line's), a null as ``null``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    null, newline = string_column([b"null", b"\n"]).cast(values.type)  # large text too
    if values.null_count:
        values = values.fill_null(null)
    whole = pa.LargeListArray.from_arrays(int64_column([0, len(values)]), values)
    return pc.binary_join(whole, newline)[0].as_buffer()


def open_for_append(path: Path) -> TextIO:
    """``path`` opened for appending UTF-8 text, created if missing; never through a symlink
    made after the path was checked."""
    try:
        fd = os.open(path, _APPEND, 0o666)
    except OSError as exc:
        raise ConnectError(
            f"Couldn't find or create file '{path}' for FileStreamSinkTask: {exc}"
        ) from exc
    return os.fdopen(fd, "a", encoding="utf-8", errors="replace", newline="")


class FileStreamSinkConnector(SinkConnector):
    """Checks the config (and that ``file`` is allowed); every task gets the same config."""

    VERSION = VERSION

    async def start(self, config: Mapping[str, str]) -> None:
        parsed = CONFIG.parse(config)
        path = self.context.paths.resolve(parsed["file"], "file")
        self._config = dict(config)
        self.context.logger.info("file_sink_connector_started", file=str(path))

    def task_class(self) -> type[FileStreamSinkTask]:
        return FileStreamSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self._config) for _ in range(max_tasks)]

    def config(self) -> ConfigDef:
        return CONFIG

    def validate(self, config: Mapping[str, str]) -> list[ConfigValue]:
        """The keys' checks, and that ``file`` is in a folder the operator allowed."""
        return self.context.paths.check(super().validate(config), "file")


class FileStreamSinkTask(SinkTask):
    """Appends one line per record; the file stays open from ``start`` to ``stop``."""

    VERSION = VERSION

    def __init__(self) -> None:
        self._out: TextIO | None = None

    async def start(self, config: Mapping[str, str]) -> None:
        parsed = CONFIG.parse(config)
        self.path = self.context.paths.resolve(parsed["file"], "file")
        self._out = await asyncio.to_thread(open_for_append, self.path)
        self.context.logger.info("file_sink_file_opened", file=str(self.path))

    async def put(self, records: list[SinkRecord]) -> None:
        if not records:
            return
        text = "".join(f"{line_of(r.value)}\n" for r in records)
        await asyncio.to_thread(self._writer().write, text)

    async def put_batch(self, batch: SinkBatch) -> None:
        """The batch API: a string column's lines are joined without a Python step per record
        (a null is ``null``, as ``put`` writes it); any other column goes value by value."""
        if not len(batch):
            return
        values = batch.values
        if is_arrow(values) and str(values.type) in _TEXT:
            await asyncio.to_thread(self._write_lines, lines_of(values))
            return
        python = values.to_pylist() if is_arrow(values) else values
        text = "\n".join(line_of(v) for v in python) + "\n"
        await asyncio.to_thread(self._writer().write, text)

    def _write_lines(self, lines: pa.Buffer) -> None:
        """Appends ``lines_of``'s lines, and the last one's newline, after what ``put`` wrote
        as text."""
        out = self._writer()
        out.flush()
        out.buffer.write(lines)
        out.buffer.write(b"\n")

    async def flush(self, offsets: dict[TopicPartition, int]) -> None:
        await asyncio.to_thread(self._writer().flush)

    async def stop(self, deleted: bool = False) -> None:
        out, self._out = self._out, None
        if out is not None:
            await asyncio.to_thread(out.close)  # close flushes what put wrote

    def _writer(self) -> TextIO:
        if self._out is None:
            raise ConnectError("the file sink task is not started")
        return self._out
