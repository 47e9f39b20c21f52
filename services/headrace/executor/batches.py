"""Record batches as the executor sees them: validation and offset filtering (pure; no I/O).

A batch arrives as an Arrow IPC stream whose rows carry their Kafka position in an int64
``kafka_offset`` column (and, when present, ``kafka_topic`` / ``kafka_partition``, which must agree
with the request). Everything here raises :class:`InvalidRequest` naming the offending field, so
the gRPC edge can answer INVALID_ARGUMENT with a message a caller can act on.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from headrace.core.arrowipc import read_stream
from headrace.executor.options import (
    FORMATS,
    JDBC,
    OptionError,
    WriteOptions,
    check_columns,
    parse_options,
)
from headrace.executor.writers.layout import OffsetRange, range_to_write, writer_key
from headrace.sdk.errors import ConfigException
from headrace.sdk.executor import KAFKA_OFFSET_COLUMN as OFFSET_COLUMN
from headrace.sdk.paths import Paths

TOPIC_COLUMN = "kafka_topic"
PARTITION_COLUMN = "kafka_partition"

# Kafka's own rule for topic names; anything else could also escape the dataset root as a path.
_TOPIC = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")
# A topic id as Kafka's tools print it: 16 bytes in URL-safe base64, unpadded.
_TOPIC_ID = re.compile(r"^[A-Za-z0-9_-]{22}$")


class InvalidRequest(ValueError):
    """A request the executor refuses; ``field`` names the part of the request at fault."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


@dataclass(frozen=True, eq=False)
class WriteBatch:
    """A validated write: where it goes, which offsets it covers, and its rows."""

    connector: str
    task: int
    topic: str
    topic_id: str
    partition: int
    offsets: OffsetRange
    format: str
    path: str
    table: pa.Table
    options: WriteOptions = field(default_factory=WriteOptions)

    @property
    def writer(self) -> str:
        """Whose watermark the batch is checked against (see ``layout.writer_key``)."""
        return writer_key(self.connector, self.topic_id)


@dataclass(frozen=True)
class WriteResult:
    """What a write did: rows newly committed, and rows an earlier try had committed already."""

    rows_written: int
    rows_skipped: int


def check_format(fmt: str) -> str:
    """The format if the executor can write it."""
    if fmt not in FORMATS:
        shown = repr(fmt) if fmt else "missing"
        raise InvalidRequest("format", f"{shown} is not supported; use one of {', '.join(FORMATS)}")
    return fmt


def check_path(path: str, roots: Paths) -> str:
    """The dataset root with symlinks and ``..`` resolved, if it is an absolute path inside one
    of the folders the operator allowed (``roots``, from ``HEADRACE_FILE_ROOTS``).

    Relative paths are refused because they would resolve against the executor's working
    directory, which the caller neither knows nor controls.
    """
    if not path:
        raise InvalidRequest("path", "missing; give the dataset root as an absolute path")
    if "\x00" in path:
        raise InvalidRequest("path", "contains a NUL byte")
    if not path.startswith("/"):
        raise InvalidRequest("path", f"{path!r} is not absolute")
    try:
        return str(roots.resolve(path, "path"))
    except ConfigException as exc:
        raise InvalidRequest("path", str(exc)) from None


def check_topic_id(topic_id: str) -> str:
    """The topic's Kafka id, if it looks like one."""
    if not _TOPIC_ID.match(topic_id):
        shown = repr(topic_id) if topic_id else "missing"
        raise InvalidRequest(
            "topic_id", f"{shown} is not a Kafka topic id (22 characters of URL-safe base64)"
        )
    return topic_id


def check_topic(topic: str) -> str:
    """The topic, if it is a legal Kafka topic name that readers will not skip as a folder."""
    if not _TOPIC.match(topic) or topic in (".", ".."):
        raise InvalidRequest("topic", f"{topic!r} is not a valid Kafka topic name")
    if topic[0] in "._":
        # Spark, Hadoop and pyarrow all skip folders named like this: the rows would be invisible.
        raise InvalidRequest("topic", f"{topic!r} starts with '{topic[0]}', which readers ignore")
    return topic


def decode_arrow(data: bytes) -> pa.Table:
    """The rows of an Arrow IPC stream."""
    if not data:
        raise InvalidRequest("arrow_ipc", "empty; send an Arrow IPC stream")
    try:
        return read_stream(data)
    except pa.ArrowException as exc:
        raise InvalidRequest("arrow_ipc", f"not a readable Arrow IPC stream ({exc})") from exc


def check_rows(table: pa.Table, topic: str, partition: int, offsets: OffsetRange) -> None:
    """Checks that every row says it belongs to this topic, partition and offset range."""
    names = table.column_names
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        # Parquet (and Spark) cannot hold two columns of one name.
        raise InvalidRequest("arrow_ipc", f"duplicate columns {', '.join(map(repr, duplicates))}")
    if OFFSET_COLUMN not in table.column_names:
        raise InvalidRequest("arrow_ipc", f"no {OFFSET_COLUMN!r} column")
    column = table.column(OFFSET_COLUMN)
    if column.type != pa.int64():
        raise InvalidRequest("arrow_ipc", f"{OFFSET_COLUMN!r} is {column.type}, not int64")
    if column.null_count:
        raise InvalidRequest("arrow_ipc", f"{OFFSET_COLUMN!r} has {column.null_count} nulls")
    if table.num_rows:
        low, high = pc.min(column).as_py(), pc.max(column).as_py()
        if low < offsets.first or high > offsets.last:
            raise InvalidRequest(
                "arrow_ipc",
                f"{OFFSET_COLUMN!r} spans [{low}, {high}], outside "
                f"[first_offset={offsets.first}, last_offset={offsets.last}]",
            )
    _check_constant(table, TOPIC_COLUMN, topic)
    _check_constant(table, PARTITION_COLUMN, partition)


def _check_constant(table: pa.Table, name: str, expected: str | int) -> None:
    # A mismatch means a batch was routed to the wrong partition folder; refuse it rather than
    # letting its offsets move another partition's watermark.
    if name not in table.column_names or not table.num_rows:
        return
    seen = set(pc.unique(table.column(name)).to_pylist())
    if seen != {expected}:
        others = sorted(map(repr, seen - {expected}))
        raise InvalidRequest("arrow_ipc", f"{name!r} holds {', '.join(others)}, not {expected!r}")


def validate_write(
    *,
    connector: str,
    task: int,
    topic: str,
    topic_id: str,
    partition: int,
    first_offset: int,
    last_offset: int,
    format: str,
    path: str,
    arrow_ipc: bytes,
    roots: Paths,
    options: Mapping[str, str] | None = None,
) -> WriteBatch:
    """A :class:`WriteBatch` from a request's fields, or :class:`InvalidRequest` saying why not."""
    if not connector:
        raise InvalidRequest("connector", "missing")
    if task < 0:
        raise InvalidRequest("task", f"{task} is negative")
    if partition < 0:
        raise InvalidRequest("partition", f"{partition} is negative")
    if first_offset < 0:
        raise InvalidRequest("first_offset", f"{first_offset} is negative")
    if last_offset < first_offset:
        raise InvalidRequest("last_offset", f"{last_offset} is below first_offset {first_offset}")
    offsets = OffsetRange(first_offset, last_offset)
    fmt, topic, topic_id = check_format(format), check_topic(topic), check_topic_id(topic_id)
    if fmt != JDBC:
        root = check_path(path, roots)
    elif path:
        raise InvalidRequest("path", "a jdbc job writes where options[url] says, not to a path")
    else:
        root = ""
    try:
        parsed = parse_options(fmt, options or {})
        table = decode_arrow(arrow_ipc)
        check_rows(table, topic, partition, offsets)
        if not parsed.sql:  # with a query, its result's columns are checked once it has run
            check_columns(parsed, table.column_names)
    except OptionError as exc:
        raise InvalidRequest(f"options[{exc.key}]", exc.reason) from None
    return WriteBatch(
        connector, task, topic, topic_id, partition, offsets, fmt, root, table, parsed
    )


def unwritten(batch: WriteBatch, watermark: int | None) -> tuple[pa.Table, int, OffsetRange | None]:
    """What is left of a batch above its writer's watermark: the rows, how many rows were
    dropped as written already, and the offset range to record as written (None when no row is
    left to write)."""
    rows, skipped = rows_after(batch.table, watermark)
    target = range_to_write(batch.offsets, watermark)
    return rows, skipped, target if rows.num_rows else None


def rows_after(table: pa.Table, watermark: int | None) -> tuple[pa.Table, int]:
    """The rows above the watermark, and how many were dropped as already written."""
    if watermark is None:
        return table, 0
    kept = table.filter(pc.greater(table.column(OFFSET_COLUMN), watermark))
    return kept, table.num_rows - kept.num_rows
