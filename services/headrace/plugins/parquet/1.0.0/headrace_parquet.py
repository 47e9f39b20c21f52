"""parquet 1.0.0: a sink writing records to a Parquet dataset through the Spark executor.

``put`` buffers; ``flush`` turns the buffer into one Arrow table per topic partition and hands
each to the executor (``context.executor.write_table``), which writes
``<path>/<topic>/<partition>/<first>-<last>/part-*.parquet`` idempotently per offset range, so a
batch redelivered after a crash is not written twice. The host supplies the executor's address
(its own ``HEADRACE_EXECUTOR_ADDR``) and which connector and task are writing.

Columns: the value's fields (a dict from the JSON converter, or a Struct), plus ``kafka_topic``
(string), ``kafka_partition`` (int32), ``kafka_offset`` (int64) and ``kafka_timestamp`` (int64,
ms); these win over value fields of the same name. A value that is not a record becomes a
``value`` column; a null value (tombstone) a row of nulls.

Provisioning, so that deletion is observable: the connector's ``start`` creates
``<path>/_provisioned/connector-<name>``, each task's ``start`` creates
``<path>/_provisioned/<name>-task-<n>``, and ``stop(deleted=True)`` removes its own marker
(``stop(deleted=False)`` leaves it). Names starting with ``_`` are ignored by dataset readers.

Self-contained: imported as ``headrace_parquet`` with this folder first on ``sys.path``; it
imports nothing of headrace but ``headrace.sdk``.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from headrace.sdk import (
    KAFKA_OFFSET_COLUMN,
    ConfigDef,
    ConfigType,
    DataError,
    Importance,
    SinkConnector,
    SinkRecord,
    SinkTask,
    Struct,
    TopicPartition,
    non_empty_string,
)

VERSION = "1.0.0"
META_FIELDS = pa.schema(
    [
        ("kafka_topic", pa.string()),
        ("kafka_partition", pa.int32()),
        (KAFKA_OFFSET_COLUMN, pa.int64()),
        ("kafka_timestamp", pa.int64()),
    ]
)

FLUSH_DEFAULTS = {"flush.max.records": "20000", "offset.flush.interval.ms": "1000"}

CONFIG = (
    ConfigDef()
    .define(
        "path",
        ConfigType.STRING,
        importance=Importance.HIGH,
        validator=non_empty_string,
        doc="The dataset folder (relative to the plugin process's working directory).",
    )
    .define("topics", ConfigType.LIST, None, Importance.HIGH, doc="Topics to consume.")
    .define(
        "topics.regex",
        ConfigType.STRING,
        None,
        Importance.HIGH,
        doc="A pattern of topics to consume, instead of topics.",
    )
)


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


def build_table(records: Sequence[SinkRecord]) -> pa.Table:
    """One Arrow table from the records of one topic partition, in offset order."""
    rows = [value_fields(r.value) for r in records]
    names = list(dict.fromkeys(n for row in rows for n in row if n not in META_FIELDS.names))
    try:
        fields = pa.Table.from_pylist([{n: row.get(n) for n in names} for row in rows])
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        first = records[0]
        raise DataError(
            f"records of {first.topic}-{first.partition} from offset {first.offset} "
            f"to {records[-1].offset} do not fit one table: {exc}"
        ) from exc
    meta = pa.table(
        [
            pa.array([r.topic for r in records], pa.string()),
            pa.array([r.partition for r in records], pa.int32()),
            pa.array([r.offset for r in records], pa.int64()),
            pa.array([r.timestamp for r in records], pa.int64()),
        ],
        schema=META_FIELDS,
    )
    if not names:
        return meta
    return pa.Table.from_arrays(fields.columns + meta.columns, names=names + META_FIELDS.names)


def build_tables(records: Sequence[SinkRecord]) -> dict[TopicPartition, pa.Table]:
    """One table per topic partition."""
    grouped: defaultdict[TopicPartition, list[SinkRecord]] = defaultdict(list)
    for r in records:
        grouped[r.topic_partition].append(r)
    return {tp: build_table(rs) for tp, rs in grouped.items()}


class ParquetSinkConnector(SinkConnector):
    """Every task gets the same config; the consumer group spreads the partitions."""

    VERSION = VERSION

    async def start(self, config: Mapping[str, str]) -> None:
        self._config = dict(config)
        self._name = config.get("name") or self.context.name
        parsed = CONFIG.parse(config)
        self._marker = marker(parsed["path"], f"connector-{self._name}")
        _provision(self._marker)

    def task_class(self) -> type[ParquetSinkTask]:
        return ParquetSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        # Each flush is a Spark job and a Parquet file: write larger, rarer batches unless the
        # user chose otherwise.
        return [{**FLUSH_DEFAULTS, **self._config} for _ in range(max_tasks)]

    async def stop(self, deleted: bool = False) -> None:
        provisioned = getattr(self, "_marker", None)  # None when start failed before it
        if deleted and provisioned is not None:
            provisioned.unlink(missing_ok=True)

    def config(self) -> ConfigDef:
        return CONFIG


class ParquetSinkTask(SinkTask):
    """Buffers in ``put``; writes one batch per topic partition in ``flush``."""

    VERSION = VERSION

    async def start(self, config: Mapping[str, str]) -> None:
        parsed = CONFIG.parse(config)
        self.path: str = parsed["path"]
        self.buffer: list[SinkRecord] = []
        # Where each buffered record came from: a record handed over twice is buffered once.
        self._buffered: set[tuple[TopicPartition, int]] = set()
        self._marker = marker(self.path, f"{self.context.connector}-task-{self.context.task}")
        _provision(self._marker)

    async def put(self, records: list[SinkRecord]) -> None:
        # A consumer can hand a task that got its partition back in a rebalance the records it
        # fetched just before, then the same ones again from the group's commit. One offset is
        # one record, so a repeat is dropped here: the executor's watermark drops what an
        # earlier batch wrote, but cannot tell a repeat within one batch from a real row.
        repeats = 0
        for r in records:
            where = (r.topic_partition, r.offset)
            if where in self._buffered:
                repeats += 1
                continue
            self._buffered.add(where)
            self.buffer.append(r)
        if repeats:
            self.context.logger.warning("repeated_records_dropped", repeats=repeats)

    async def flush(self, offsets: dict[TopicPartition, int]) -> None:
        if not self.buffer:
            return
        # Building Arrow tables from many records is CPU work: off the loop that runs the tasks.
        tables = await asyncio.to_thread(build_tables, self.buffer)
        results = await asyncio.gather(
            *(
                self.context.executor.write_table(
                    topic=tp.topic,
                    partition=tp.partition,
                    table=table,
                    path=self.path,
                )
                for tp, table in tables.items()
            )
        )
        self.buffer = []
        self._buffered.clear()
        written = sum(w for w, _ in results)
        skipped = sum(s for _, s in results)
        self.context.logger.info(
            "parquet_batch_written", rows=written, skipped=skipped, path=self.path
        )

    async def close(self, partitions: set[TopicPartition]) -> None:
        # Their records were flushed before the close; anything left would belong to the new owner.
        self.buffer = [r for r in self.buffer if r.topic_partition not in partitions]
        self._buffered = {(r.topic_partition, r.offset) for r in self.buffer}

    async def stop(self, deleted: bool = False) -> None:
        # The executor's connection is the host's: it closes it once the task has stopped.
        provisioned = getattr(self, "_marker", None)  # None when start failed before it
        if deleted and provisioned is not None:
            provisioned.unlink(missing_ok=True)
