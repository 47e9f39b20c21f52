"""Sinks that write through the Spark executor: what the Parquet, Delta and file sinks share.

A table sink buffers each topic partition's records as columns and, from ``pre_commit``, hands
each buffer in the background to the executor as one Arrow table
(``context.executor.write_table``), which writes it idempotently per offset range: a batch
redelivered after a crash is not written twice. Offsets are committed only once the executor has
acknowledged the write. A plugin names its format and the options its config gives the job::

    class DeltaSinkTask(TableSinkTask):
        FORMAT = "delta"

        def write_options(self, config):
            return {**super().write_options(config), "merge.schema": config["merge.schema"]}

Columns of every table: the value's fields (a dict from the JSON converter, or a Struct), plus
``kafka_topic`` (string), ``kafka_partition`` (int32), ``kafka_offset`` (int64) and
``kafka_timestamp`` (int64, ms); these win over value fields of the same name. A value that is not
a record becomes a ``value`` column; a null value (tombstone) a row of nulls.

Provisioning, so that deletion is observable: the connector's ``start`` creates
``<path>/_provisioned/connector-<name>``, each task's ``start`` creates
``<path>/_provisioned/<name>-task-<n>``, and ``stop(deleted=True)`` removes its own marker
(``stop(deleted=False)`` leaves it). Names starting with ``_`` are ignored by dataset readers.

``path`` must lie in a folder the operator allowed (``context.paths``): ``validate`` refuses any
other, and so does ``start``. ``validate`` also refuses a ``sql`` that is not Spark SQL, with
Spark's reason, when the executor answers in time (``context.sql``); when it does not, the
query is checked by its first batch.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa

from headrace.sdk.columns import int64_column
from headrace.sdk.config import ConfigDef, ConfigValue, Importance, non_empty_string
from headrace.sdk.config import Type as ConfigType
from headrace.sdk.connector import SinkConnector
from headrace.sdk.data import Struct
from headrace.sdk.errors import ConnectError, DataError
from headrace.sdk.executor import KAFKA_OFFSET_COLUMN, SqlCheck
from headrace.sdk.records import ArrowRecords, SinkBatch, SinkRecord, TopicPartition
from headrace.sdk.task import SinkTask

META_FIELDS = pa.schema(
    [
        ("kafka_topic", pa.string()),
        ("kafka_partition", pa.int32()),
        (KAFKA_OFFSET_COLUMN, pa.int64()),
        ("kafka_timestamp", pa.int64()),
    ]
)

FLUSH_DEFAULTS = {"flush.max.records": "20000", "offset.flush.interval.ms": "1000"}
MAX_BUFFERED_FACTOR = 4
"""How many flushes' worth of records given as Python values (``put``, or JSON that Arrow does
not read as it came) a partition may buffer while its previous write is still running."""
MAX_BUFFERED_ARROW_FACTOR = 16
"""The same for records whose values came in Arrow, which take half the memory or less:
larger writes while Spark is behind, and so fewer. Spark's fixed cost of a job is about a
tenth of a second on two cores: a million rows in writes of 80,000 went at 450,000 rows a
second, in writes of 320,000 at 870,000."""
MAX_BUFFERED_BYTES = 32 * 1024 * 1024
"""And at most this many bytes of Arrow values and the messages they were read from, however
many records that is."""

PARTITION_BY = "partition.by"
PATH = "path"
SQL = "sql"

TOPICS_CONFIG = (
    ConfigDef()
    .define("topics", ConfigType.LIST, None, Importance.HIGH, doc="Topics to consume.")
    .define(
        "topics.regex",
        ConfigType.STRING,
        None,
        Importance.HIGH,
        doc="A pattern of topics to consume, instead of topics.",
    )
    .define(
        SQL,
        ConfigType.STRING,
        None,
        Importance.MEDIUM,
        doc="Spark SQL run over each batch, which it reads as the view batch (SELECT id, "
        "upper(name) AS name FROM batch WHERE amount > 0); its result is written instead.",
    )
)
"""The keys every table sink takes: what it consumes, and a query over each batch. A sink
writing to a database adds its own to these."""

TABLE_SINK_CONFIG = TOPICS_CONFIG.define(
    PATH,
    ConfigType.STRING,
    importance=Importance.HIGH,
    validator=non_empty_string,
    doc="Where the rows go. It must lie in one of the folders the operator allowed "
    "(HEADRACE_FILE_ROOTS); a relative name is taken relative to the first of them.",
).define(
    PARTITION_BY,
    ConfigType.LIST,
    "",
    Importance.MEDIUM,
    doc="Columns whose values become column=value folders (Hive-style partitioning).",
)
"""The keys of a table sink writing files or Delta under ``path``; a plugin adds its own with
``TABLE_SINK_CONFIG.define``."""


def marker(path: str, name: str) -> Path:
    """The provisioning marker file called ``name`` under ``path``."""
    return Path(path) / "_provisioned" / name


def _provision(target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    target.touch()


def value_fields(value: Any) -> dict[str, Any]:
    """A record value as a row's fields."""
    if value is None:
        return {}
    if isinstance(value, Struct):
        return value.to_dict()
    if isinstance(value, dict):
        return dict(value)
    return {"value": value}


@dataclass
class Pending:
    """One topic partition's buffered records, as columns, in offset order.

    Records come in chunks: a batch's columns as they came (values read into Arrow, offsets and
    timestamps as Arrow arrays), or records' values, offsets and timestamps as Python lists,
    which ``put`` extends one record at a time."""

    topic: str
    partition: int
    chunks: list[Chunk] = field(default_factory=list)
    count: int = 0
    first: int = -1
    """The first offset buffered (-1 while none is)."""
    last: int = -1
    """The last offset buffered (-1 while none is)."""
    python_count: int = 0
    """How many of the records have Python values."""
    arrow_bytes: int = 0
    """How many bytes the values in Arrow take, with the messages they were read from."""

    def add(self, values: Any, offsets: Sequence[int] | pa.Array, timestamps: Any) -> int:
        """Appends the records after the last buffered offset; how many were repeats.

        A consumer can hand a task that got its partition back in a rebalance the records it
        fetched just before, then the same ones again from the group's commit. One offset is
        one record, and a partition's offsets only grow, so whatever is not past the last
        buffered offset is a repeat, and dropped here: the executor's watermark drops what an
        earlier batch wrote, but cannot tell a repeat within one batch from a real row."""
        if isinstance(offsets, pa.Array):
            numbers = offsets.to_numpy()
            start = int(np.searchsorted(numbers, self.last, side="right")) if self.count else 0
        else:
            numbers = offsets
            start = bisect.bisect_right(offsets, self.last) if self.count else 0
        if start == len(numbers):
            return start
        if self.first < 0:
            self.first = int(numbers[start])
        self.last = int(numbers[-1])
        self.count += len(numbers) - start
        if isinstance(offsets, pa.Array):
            self._add_columns(Chunk(values, offsets, timestamps, start))
        else:
            self._add_python(values[start:], offsets[start:], timestamps[start:])
        return start

    def _add_columns(self, chunk: Chunk) -> None:
        """A batch's columns, kept as they came."""
        self.chunks.append(chunk)
        values = chunk.values
        self.arrow_bytes += (
            values.nbytes if isinstance(values, ArrowRecords) else chunk.fields().nbytes
        )

    def _add_python(self, values: Sequence[Any], offsets: Sequence[int], stamps: Any) -> None:
        """Records' Python values, appended to the last chunk when it holds such values."""
        self.python_count += len(offsets)
        last = self.chunks[-1] if self.chunks else None
        if last is None or not isinstance(last.values, list):
            last = Chunk([], [], [])
            self.chunks.append(last)
        last.values.extend(values)
        last.offsets.extend(offsets)
        last.timestamps.extend(stamps)

    def full(self, flush_records: int) -> bool:
        """Whether the buffer holds all it may while a write is in flight: its Python values
        ``MAX_BUFFERED_FACTOR`` times ``flush_records``, all its records
        ``MAX_BUFFERED_ARROW_FACTOR`` times, or ``MAX_BUFFERED_BYTES`` of Arrow values."""
        return (
            self.python_count >= MAX_BUFFERED_FACTOR * flush_records
            or self.count >= MAX_BUFFERED_ARROW_FACTOR * flush_records
            or self.arrow_bytes >= MAX_BUFFERED_BYTES
        )

    def table(self) -> pa.Table:
        """The buffered records as one Arrow table: value fields, then the Kafka columns."""
        try:
            parts = [chunk.fields() for chunk in self.chunks]
            fields = (
                parts[0]
                if len(parts) == 1
                else pa.concat_tables(parts, promote_options="permissive")
            )
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            # Chunks whose types Arrow does not merge: the values of them all in one table, as
            # if every record had been put, or that table's error.
            try:
                fields = _python_fields([v for chunk in self.chunks for v in chunk.python()])
            except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
                raise DataError(
                    f"records of {self.topic}-{self.partition} from offset {self.first} "
                    f"to {self.last} do not fit one table: {exc}"
                ) from exc
        names = [n for n in fields.column_names if n not in META_FIELDS.names]
        meta = [
            pa.repeat(pa.scalar(self.topic, pa.string()), self.count),
            pa.repeat(pa.scalar(self.partition, pa.int32()), self.count),
            pa.chunked_array([chunk.offset_column() for chunk in self.chunks], pa.int64()),
            pa.chunked_array([chunk.timestamp_column() for chunk in self.chunks], pa.int64()),
        ]
        columns = [fields.column(n) for n in names] + meta
        return pa.Table.from_arrays(columns, names=names + META_FIELDS.names)


@dataclass
class Chunk:
    """Records buffered together: a batch's columns, or Python values of records put one by
    one, with their offsets and timestamps."""

    values: Any
    """Values read into Arrow (``ArrowRecords``), an Arrow column of values, or a list of
    Python values."""
    offsets: Any
    timestamps: Any
    start: int = 0
    """Where the records of the chunk begin in its columns: those before it were repeats."""

    def fields(self) -> pa.Table:
        """The values' fields as a table with a row per record."""
        values = self.values
        if isinstance(values, ArrowRecords):
            return values.to_arrow()[self.start :]
        if isinstance(values, pa.Array):
            values = values[self.start :]
            if pa.types.is_struct(values.type):
                return pa.Table.from_struct_array(values)
            if values.null_count == len(values):  # tombstones: rows of nulls, as from put
                return _no_fields(len(values))
            return pa.table({"value": values})
        return _python_fields(values)

    def python(self) -> list[Any]:
        """The values as Python objects, as ``put`` would have been given them."""
        values = self.values
        if isinstance(values, list):
            return values
        return list(values.to_pylist()[self.start :])

    def offset_column(self) -> pa.Array:
        offsets = self.offsets
        return offsets[self.start :] if isinstance(offsets, pa.Array) else int64_column(offsets)

    def timestamp_column(self) -> pa.Array:
        stamps = self.timestamps
        return (
            stamps[self.start :] if isinstance(stamps, pa.Array) else pa.array(stamps, pa.int64())
        )


def _python_fields(values: list[Any]) -> pa.Table:
    """Python record values as a table of their fields: a dict's keys, a Struct's fields, or
    ``value`` for anything else; a column per name, in order of first appearance."""
    if _one_shape(values) and values[0]:
        return pa.Table.from_pylist(values)  # the common case: no row is copied
    rows = [value_fields(v) for v in values]
    names = list(dict.fromkeys(n for row in rows for n in row))
    if not names:
        return _no_fields(len(rows))
    return pa.Table.from_pylist([{n: row.get(n) for n in names} for row in rows])


def _no_fields(rows: int) -> pa.Table:
    """A table of ``rows`` rows and no column."""
    return pa.table({"_": pa.nulls(rows)}).drop_columns("_")


def _one_shape(values: Sequence[Any]) -> bool:
    """Whether every value is a dict with the same keys (in any order: rows are read by key)."""
    if not values or type(values[0]) is not dict:
        return False
    keys = values[0].keys()
    return all(type(v) is dict and v.keys() == keys for v in values)


def pending_of(records: Sequence[SinkRecord]) -> dict[TopicPartition, Pending]:
    """The records, grouped by topic partition."""
    grouped: dict[TopicPartition, Pending] = {}
    for r in records:
        tp = r.topic_partition
        pending = grouped.get(tp)
        if pending is None:
            pending = grouped[tp] = Pending(tp.topic, tp.partition)
        pending.add([r.value], [r.offset], [r.timestamp])
    return grouped


def build_table(records: Sequence[SinkRecord]) -> pa.Table:
    """One Arrow table from the records of one topic partition, in offset order."""
    [pending] = pending_of(records).values()
    return pending.table()


def build_tables(records: Sequence[SinkRecord]) -> dict[TopicPartition, pa.Table]:
    """One table per topic partition."""
    return {tp: pending.table() for tp, pending in pending_of(records).items()}


def check_sql(results: list[ConfigValue], sql: SqlCheck) -> list[ConfigValue]:
    """``results`` with what ``sql`` says of the ``sql`` key's query added to its errors, when
    it has one and no error yet. RetriableError when the executor could not check it in time:
    a query is never taken unchecked."""
    for result in results:
        if result.name == SQL and result.value and not result.errors:
            reason = sql.check(str(result.value))
            if reason is not None:
                result.errors.append(
                    f"Invalid value {result.value} for configuration {SQL}: {reason}"
                )
    return results


class TableSinkConnector(SinkConnector):
    """Every task gets the same config; the consumer group spreads the partitions. A plugin
    sets ``CONFIG`` when it takes keys of its own, and returns its task class."""

    CONFIG: ClassVar[ConfigDef] = TABLE_SINK_CONFIG

    async def start(self, config: Mapping[str, str]) -> None:
        self._config = dict(config)
        self._name = config.get("name") or self.context.name
        parsed = self.CONFIG.parse(config)
        if PATH in self.CONFIG.keys:
            path = self.context.paths.resolve(parsed[PATH], PATH)
            self._marker = marker(str(path), f"connector-{self._name}")
            _provision(self._marker)

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        # Each flush is a Spark job and a file or a commit: write larger, rarer batches unless
        # the user chose otherwise.
        return [{**FLUSH_DEFAULTS, **self._config} for _ in range(max_tasks)]

    async def stop(self, deleted: bool = False) -> None:
        provisioned = getattr(self, "_marker", None)  # None when start failed before it
        if deleted and provisioned is not None:
            provisioned.unlink(missing_ok=True)

    def config(self) -> ConfigDef:
        return self.CONFIG

    def validate(self, config: Mapping[str, str]) -> list[ConfigValue]:
        """The keys' checks, that ``path`` (if the sink has one) is in a folder the operator
        allowed, and that ``sql`` parses, as the executor says (``context.sql``)."""
        results = super().validate(config)
        if PATH in self.CONFIG.keys:
            results = self.context.paths.check(results, PATH)
        return check_sql(results, self.context.sql)


class TableSinkTask(SinkTask):
    """Writes through the executor in the format :meth:`write_format` draws from the config
    (``FORMAT``: ``parquet``, ``json``, ``csv`` or ``delta``), with the options
    :meth:`write_options` draws from it.

    Buffers in ``put``; writes each topic partition's buffer in the background from
    ``pre_commit``, and tells the runtime to commit only what is written.

    At most one write per partition is in flight, so a partition's batches reach the executor in
    offset order (its watermark would drop an earlier batch that arrived after a later one).
    While a partition's write runs, its buffer keeps growing, and goes whole into the next
    write: Spark's jobs grow to the pace Spark keeps. Once a buffer is full (``Pending.full``:
    ``MAX_BUFFERED_FACTOR`` times ``flush.max.records`` of records put, more of records in
    Arrow), the partition is paused (the runtime fetches no more of it) until its write is done:
    no call into the task ever waits on the executor, which may be busy or restarting for longer
    than a plugin call may take. A write that failed fails the next ``pre_commit``, before
    anything more is committed.
    """

    FORMAT: ClassVar[str] = "parquet"
    CONFIG: ClassVar[ConfigDef] = TABLE_SINK_CONFIG
    ARROW_VALUES = True

    def write_format(self, config: Mapping[str, Any]) -> str:
        """The format to write in, from the parsed config: ``FORMAT`` unless a plugin lets its
        user choose."""
        return self.FORMAT

    def write_options(self, config: Mapping[str, Any]) -> dict[str, str]:
        """The options of the executor's job, from the parsed config: ``partition.by`` here;
        a plugin adds those of its format."""
        columns = config.get(PARTITION_BY) or []
        return {PARTITION_BY: ",".join(columns)} if columns else {}

    def options_for(self, topic: str) -> dict[str, str]:
        """The options of the job writing ``topic``'s records: :meth:`write_options`' unless a
        plugin names its target after the topic."""
        return self.options

    async def start(self, config: Mapping[str, str]) -> None:
        parsed = self.CONFIG.parse(config)
        has_path = PATH in self.CONFIG.keys
        self.path = str(self.context.paths.resolve(parsed[PATH], PATH)) if has_path else ""
        self.format = self.write_format(parsed)
        self.options = self.write_options(parsed)
        if parsed.get(SQL):
            self.options[SQL] = str(parsed[SQL])
        self.buffer: dict[TopicPartition, Pending] = {}
        self._writing: dict[TopicPartition, asyncio.Task[tuple[int, int]]] = {}
        self._written: dict[TopicPartition, int] = {}  # next offset after what is written
        self._held: set[TopicPartition] = set()  # paused until their write in flight is done
        self._lost: set[TopicPartition] = set()  # a write failed: they take nothing more here
        flush_records = int(config.get("flush.max.records") or FLUSH_DEFAULTS["flush.max.records"])
        self._flush_records = max(flush_records, 1)
        if self.path:
            self._marker = marker(self.path, f"{self.context.connector}-task-{self.context.task}")
            _provision(self._marker)

    async def put(self, records: list[SinkRecord]) -> None:
        repeats = 0
        for r in records:
            if r.topic_partition in self._lost:
                continue
            repeats += self._pending(r.topic_partition).add([r.value], [r.offset], [r.timestamp])
        self._log_repeats(repeats)
        self._hold_back({r.topic_partition for r in records})

    async def put_batch(self, batch: SinkBatch) -> None:
        """The batch API: the batch's columns are appended as they are, with no SinkRecord made
        per record; ``flush`` builds the same table from them as from ``put``'s records. Values
        in Arrow (``ARROW_VALUES``) stay in Arrow to the executor."""
        if batch.topic_partition in self._lost:
            return
        values = batch.values
        if isinstance(values, (pa.Array, ArrowRecords)):
            repeats = self._pending(batch.topic_partition).add(
                values, batch.offsets, batch.timestamps
            )
        else:
            repeats = self._pending(batch.topic_partition).add(
                values, batch.offsets.to_pylist(), batch.timestamps.to_pylist()
            )
        self._log_repeats(repeats)
        self._hold_back({batch.topic_partition})

    def _hold_back(self, partitions: set[TopicPartition]) -> None:
        """Pauses the partitions whose buffer is full while their write is still in flight."""
        full = {
            tp
            for tp in partitions - self._held
            if tp in self.buffer and self.buffer[tp].full(self._flush_records) and self._busy(tp)
        }
        if full:
            self.context.pause(*full)
            self._held |= full

    def _busy(self, tp: TopicPartition) -> bool:
        running = self._writing.get(tp)
        return running is not None and not running.done()

    def _pending(self, tp: TopicPartition) -> Pending:
        pending = self.buffer.get(tp)
        if pending is None:
            pending = self.buffer[tp] = Pending(tp.topic, tp.partition)
        return pending

    def _log_repeats(self, repeats: int) -> None:
        if repeats:
            self.context.logger.warning("repeated_records_dropped", repeats=repeats)

    async def pre_commit(self, offsets: dict[TopicPartition, int]) -> dict[TopicPartition, int]:
        """Starts writing each partition's buffer whose last write is done; the offsets of what
        is written, for the group. Never waits for a write."""
        self._log_finished_writes()
        for tp, pending in list(self.buffer.items()):
            if self._busy(tp):
                continue  # written whole once the write in flight is done
            await self._settle(tp)  # done: logs it, or raises what it failed with
            self._start_write(tp, pending)
        return {tp: min(o, self._written[tp]) for tp, o in offsets.items() if tp in self._written}

    async def flush(self, offsets: dict[TopicPartition, int]) -> None:
        """Writes everything buffered and waits until it is written."""
        results = []
        for tp in list(self.buffer):
            results.append(await self._settle(tp, log=False))
            pending = self.buffer.get(tp)
            if pending is not None and not self._busy(tp):  # none started meanwhile
                self._start_write(tp, pending)
        results += [await self._settle(tp, log=False) for tp in list(self._writing)]
        done = [r for r in results if r is not None]
        if done:
            self._log_written(sum(w for w, _ in done), sum(s for _, s in done))

    def _start_write(self, tp: TopicPartition, pending: Pending) -> None:
        del self.buffer[tp]
        assert not self._busy(tp) and tp not in self._lost, f"{tp}: a write out of turn"
        if pending.count:  # every record a repeat: nothing to write
            self._writing[tp] = asyncio.create_task(self._write(tp, pending))

    async def _write(self, tp: TopicPartition, pending: Pending) -> tuple[int, int]:
        # Building an Arrow table from many records is CPU work: off the loop that runs tasks.
        table = await asyncio.to_thread(pending.table)
        result = await self.context.executor.write_table(
            topic=tp.topic,
            partition=tp.partition,
            table=table,
            path=self.path,
            format=self.format,
            options=self.options_for(tp.topic),
        )
        self._written[tp] = pending.last + 1
        if tp in self._held:  # its buffer may grow again: the next write takes it
            self._held.discard(tp)
            with contextlib.suppress(ConnectError):  # revoked meanwhile: nothing to resume
                self.context.resume(tp)
        # Its offsets may be committed now, and a buffer held back while it ran written: ask
        # for a pre_commit, which no new record might bring otherwise.
        self.context.request_commit()
        return result

    async def _settle(self, tp: TopicPartition, log: bool = True) -> tuple[int, int] | None:
        """Waits for the partition's write in flight, if any: its (written, skipped) rows. The
        write stays the partition's in flight until it is done, whoever waits for it: a caller
        that gives up the wait (a stop that ran out of time) neither cancels the write nor lets
        the partition's next one start before it (found by the nemesis, seed 413: a stop's
        wait, cancelled, cancelled the write of offsets 1411 to 3856, and a commit called
        meanwhile had written 3858 to 5218 already; the executor's watermark then skipped the
        first range when it came again, and its offsets were committed unwritten)."""
        running = self._writing.get(tp)
        if running is None:
            return None
        if not running.done():  # one that is done is taken without yielding to another call
            await asyncio.wait({running})
        return self._finished(tp, running, log)

    def _log_finished_writes(self) -> None:
        """Logs the writes that are done; raises the error of one that failed."""
        for tp, running in list(self._writing.items()):
            if running.done():
                self._finished(tp, running)

    def _finished(
        self, tp: TopicPartition, running: asyncio.Task[tuple[int, int]], log: bool = True
    ) -> tuple[int, int]:
        """A write that is done: its (written, skipped) rows, logged. One that failed, or was
        cancelled, raises: its partition takes no more records here, and nothing after them is
        written, for what it failed to write would be a gap (the partition's next owner reads
        them all again from its last commit)."""
        if self._writing.get(tp) is running:
            del self._writing[tp]
        if running.cancelled() or running.exception() is not None:
            self._lost.add(tp)
            self.buffer.pop(tp, None)
            self._held.discard(tp)
        if running.cancelled():
            raise ConnectError(f"the write of {tp} was cancelled: it takes nothing more here")
        written, skipped = running.result()  # a failed write raises here
        if log:
            self._log_written(written, skipped)
        return written, skipped

    def _log_written(self, written: int, skipped: int) -> None:
        self.context.logger.info(
            "batch_written", rows=written, skipped=skipped, format=self.format, path=self.path
        )

    async def close(self, partitions: set[TopicPartition]) -> None:
        # As Connect's asynchronous sinks do: what is still buffered is dropped, and the write in
        # flight finishes first, so the new owner's writes of the partition come after it. The
        # offsets of both were not committed: the new owner reads those records again, and the
        # executor's watermark skips what the finished write already holds.
        for tp in partitions:
            self.buffer.pop(tp, None)
            try:
                await self._settle(tp)
            finally:
                self._written.pop(tp, None)
                self._held.discard(tp)
                self._lost.discard(tp)  # its next owner, here or elsewhere, reads it again

    async def stop(self, deleted: bool = False) -> None:
        # Nothing of this task may run after it stopped: writes in flight finish (or fail) now.
        for tp in list(getattr(self, "_writing", {})):
            try:
                await self._settle(tp)
            except Exception as exc:  # noqa: BLE001 - stopping goes on; its offsets stay uncommitted
                self.context.logger.error("batch_write_failed", error=str(exc), partition=str(tp))
        # The executor's connection is the host's: it closes it once the task has stopped.
        provisioned = getattr(self, "_marker", None)  # None when start failed before it
        if deleted and provisioned is not None:
            provisioned.unlink(missing_ok=True)
