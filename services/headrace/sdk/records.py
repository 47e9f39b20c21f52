"""The records that move between plugins and the runtime, as frozen dataclasses.

``SourceRecord`` is what a source task returns from ``poll``, or ``SourceBatch``, many records as
columns; ``SinkRecord`` is what a sink task receives in ``put``, and ``SinkBatch``, one
partition's records as columns, what it may receive in ``put_batch``. Headers are a tuple of
``(name, value)`` pairs (``Headers``). Timestamps are milliseconds since the epoch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from typing import TYPE_CHECKING, Any, TypeAlias, overload

from headrace.sdk.data import Schema

if TYPE_CHECKING:
    import pyarrow as pa

Headers = tuple[tuple[str, Any], ...]
"""A record's headers as ``(name, value)`` pairs, in order; a name may come more than once.

The connector's ``header.converter`` turns the values into Kafka's bytes and back. With the
default, Connect's SimpleHeaderConverter, a source task gives ``str`` (written as UTF-8),
``bytes`` (as they are), None (a null value) or another value (written as its text: ``42``,
``true``, ``[1,2]``), and a sink task is given each value's ``bytes`` as they came, or None.
With ``string`` a sink task is given ``str``, with ``json`` the decoded JSON value, with
``bytes`` the ``bytes`` (and a source task must give bytes)."""
Column: TypeAlias = "pa.Array | Sequence[Any]"
"""One value per record: a pyarrow Array, or any sequence of Python values (``ArrowRecords``
among them)."""


class ArrowRecords(Sequence[Any]):
    """Record values that a converter read straight into Arrow: one row per value, a column
    per field (``to_arrow()``), with no Python object made for them. As a sequence, it holds
    the values as Python objects, what each ``SinkRecord.value`` would hold, made from the
    messages when first read (and then kept).

    The plain JSON converter gives a sink's batch its values this way when the task asks for
    Arrow (``SinkTask.ARROW_VALUES``) and every message of the batch is a JSON object Arrow
    holds as it came; otherwise the list of values.
    """

    __slots__ = ("_decode", "_source_bytes", "_table", "_values")

    def __init__(
        self, table: pa.Table, decode: Callable[[], list[Any]], source_bytes: int = 0
    ) -> None:
        self._table = table
        self._decode: Callable[[], list[Any]] | None = decode
        self._values: list[Any] | None = None
        self._source_bytes = source_bytes

    @property
    def nbytes(self) -> int:
        """The memory the values hold: the table's, and ``source_bytes``, what ``decode`` keeps
        to make the Python values from (the messages)."""
        return int(self._table.nbytes) + self._source_bytes

    def to_arrow(self) -> pa.Table:
        """The values as one table: a row per value, a column per field."""
        return self._table

    def to_pylist(self) -> list[Any]:
        """The values as Python objects."""
        if self._values is None:
            assert self._decode is not None
            self._values, self._decode = self._decode(), None
        return self._values

    def __len__(self) -> int:
        return int(self._table.num_rows)

    @overload
    def __getitem__(self, index: int) -> Any: ...
    @overload
    def __getitem__(self, index: slice) -> list[Any]: ...
    def __getitem__(self, index: int | slice) -> Any:
        return self.to_pylist()[index]

    def __iter__(self) -> Iterator[Any]:
        return iter(self.to_pylist())


@dataclass(frozen=True, order=True)
class TopicPartition:
    """One partition of one Kafka topic."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass(frozen=True)
class SourceRecord:
    """A record read from the source system, with where it came from.

    ``source_partition`` names the stream in the source system (a file, a table) and
    ``source_offset`` the position just read in it; both must be JSON-serialisable, because the
    runtime stores the latest offset per source partition and hands it back after a restart.
    ``partition`` None lets the producer's partitioner pick one from the key.
    """

    source_partition: Mapping[str, Any]
    source_offset: Mapping[str, Any]
    topic: str
    value: Any
    key: Any = None
    partition: int | None = None
    headers: Headers = ()
    timestamp: int | None = None
    key_schema: Schema | None = None
    value_schema: Schema | None = None


@dataclass(frozen=True)
class SourceBatch:
    """Many records of one source partition, bound for one topic, as columns: the batch API.

    A source task's ``poll`` may return one instead of a list of ``SourceRecord``; the runtime
    then converts whole columns at once (a pyarrow string column to Kafka's bytes without a
    Python loop, for instance) and stores ``source_offset`` (the position after the batch's last
    record) once the whole batch is in Kafka. What is per record in ``SourceRecord`` is one value
    per column here; ``partition``, ``timestamp`` (None: the time of sending), ``headers`` and the
    schemas hold for every record of the batch. ``timestamps``, one per record, may stand
    instead of ``timestamp``.

    The batch and per-record paths put the same bytes in Kafka for the same records. If a
    column cannot be converted as a whole, the runtime falls back to ``records()``, so a bad
    record is found, named and handled by ``errors.tolerance`` exactly as on the per-record path.
    """

    source_partition: Mapping[str, Any]
    source_offset: Mapping[str, Any]
    topic: str
    values: Column
    keys: Column | None = None
    partition: int | None = None
    timestamp: int | None = None
    headers: Headers = ()
    key_schema: Schema | None = None
    value_schema: Schema | None = None
    timestamps: Column | None = None

    def __post_init__(self) -> None:
        if self.keys is not None and len(self.keys) != len(self.values):
            raise ValueError(f"{len(self.keys)} keys for {len(self.values)} values")
        if self.timestamps is not None:
            if self.timestamp is not None:
                raise ValueError("a batch has one timestamp or one per record, not both")
            if len(self.timestamps) != len(self.values):
                raise ValueError(f"{len(self.timestamps)} timestamps for {len(self.values)} values")

    def __len__(self) -> int:
        return len(self.values)

    def records(self) -> list[SourceRecord]:
        """The batch one record at a time; each carries the batch's ``source_offset``."""
        values = _python(self.values)
        keys = [None] * len(values) if self.keys is None else _python(self.keys)
        stamps = self.stamps()
        return [
            SourceRecord(
                self.source_partition,
                self.source_offset,
                self.topic,
                value,
                key=key,
                partition=self.partition,
                headers=self.headers,
                timestamp=stamp,
                key_schema=self.key_schema,
                value_schema=self.value_schema,
            )
            for key, value, stamp in zip(keys, values, stamps, strict=False)
        ]

    def stamps(self) -> Iterable[int | None]:
        """Each record's timestamp, in order (endless when the batch has one for all)."""
        if self.timestamps is None:
            return repeat(self.timestamp)
        return _python(self.timestamps)


def _python(column: Column) -> list[Any]:
    """A column's values as Python objects."""
    to_pylist = getattr(column, "to_pylist", None)
    return list(column) if to_pylist is None else list(to_pylist())


@dataclass(frozen=True)
class SinkRecord:
    """A record consumed from Kafka, after the key and value converters ran."""

    topic: str
    partition: int
    offset: int
    key: Any
    value: Any
    timestamp: int | None = None
    headers: Headers = ()
    key_schema: Schema | None = None
    value_schema: Schema | None = None

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


@dataclass(frozen=True)
class RecordMetadata:
    """Where a source record landed in Kafka; given to ``SourceTask.commit_record``."""

    topic: str
    partition: int
    offset: int
    timestamp: int | None = field(default=None)


@dataclass(frozen=True)
class SinkBatch:
    """Records of one topic-partition consumed from Kafka, as pyarrow columns: the batch API.

    What a sink task's ``put_batch`` receives, when its converters turned a whole fetch of the
    partition into columns at once: the string converter gives a pyarrow string column, the
    byte-array converter a binary one, and plain JSON the list of decoded values (what each
    ``SinkRecord.value`` would hold), or, for a task that asks for Arrow
    (``SinkTask.ARROW_VALUES``), ``ArrowRecords`` when every message is a JSON object. ``offsets``
    and ``timestamps`` are pyarrow int64 columns; the schemas hold for every record; ``headers``
    has each record's headers, or is None when no record had any. ``records()`` gives the same
    records one at a time, as ``put`` would receive them.
    """

    topic: str
    partition: int
    offsets: pa.Array
    timestamps: pa.Array
    keys: Column
    values: Column
    headers: Sequence[Headers] | None = None
    key_schema: Schema | None = None
    value_schema: Schema | None = None

    def __len__(self) -> int:
        return len(self.values)

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)

    def records(self) -> list[SinkRecord]:
        """The batch one record at a time."""
        headers = [()] * len(self) if self.headers is None else self.headers
        return [
            SinkRecord(
                self.topic,
                self.partition,
                offset,
                key,
                value,
                timestamp=timestamp,
                headers=tuple(record_headers),
                key_schema=None if key is None else self.key_schema,
                value_schema=None if value is None else self.value_schema,
            )
            for offset, timestamp, key, value, record_headers in zip(
                self.offsets.to_pylist(),
                self.timestamps.to_pylist(),
                _python(self.keys),
                _python(self.values),
                headers,
                strict=True,
            )
        ]
