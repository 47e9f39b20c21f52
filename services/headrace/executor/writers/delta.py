"""Exactly-once batch writes into Delta Lake tables.

Each (connector, topic id, partition) is one Delta application (``txnAppId``, see
:func:`app_id`), and a batch's ``txnVersion`` is the last offset it covers. A write:

1. reads the app's last committed version from the table's log (``deltalog.py``): the highest
   offset of this partition already in the table;
2. drops the rows at or below it (a retried batch rarely covers exactly the offsets of the try
   that committed);
3. appends the rest with ``txnAppId`` and ``txnVersion`` in one Delta commit, which Delta itself
   refuses to make twice: a retry racing the first try, or a second executor, writes nothing.

The rows and the app's version land in the same commit, so a crash leaves either both or
neither. One write per app at a time in this process (a lock per table and app).
"""

from __future__ import annotations

import threading
from contextlib import AbstractContextManager, nullcontext

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession

from headrace.core.observability import log
from headrace.executor.batches import InvalidRequest, WriteBatch, WriteResult, unwritten
from headrace.executor.writers.deltalog import app_versions, has_commits
from headrace.executor.writers.writing import Prepare, as_given, frame_of, log_skipped

# What Delta says when a batch's columns differ from the table's.
_SCHEMA_MISMATCH = {"DELTA_METADATA_MISMATCH", "_LEGACY_ERROR_TEMP_DELTA_0007"}


def app_id(batch: WriteBatch) -> str:
    """The Delta application a batch's partition writes as: its connector, topic (by name and
    id, which a topic created again does not keep) and partition."""
    return f"headrace/{batch.connector}/{batch.topic}/{batch.topic_id}/{batch.partition}"


class DeltaWriter:
    """Appends batches to Delta tables through one SparkSession. Thread-safe."""

    def __init__(self, spark: SparkSession, prepare: Prepare = as_given) -> None:
        self._spark = spark
        self._prepare = prepare
        self._locks: dict[tuple[str, str], threading.Lock] = {}
        self._locks_guard = threading.Lock()
        self._log = log.get("headrace.executor.writers.delta")

    def write(self, batch: WriteBatch) -> WriteResult:
        """Commits the batch's rows not yet in the table; a no-op for a batch already there."""
        app = app_id(batch)
        with self._creating(batch.path), self._lock_for(batch.path, app):
            committed = app_versions(batch.path).get(app)
            rows, skipped, target = unwritten(batch, committed)
            log_skipped(self._log, batch, committed, skipped)
            if target is None:
                return WriteResult(rows_written=0, rows_skipped=skipped)
            rows = self._prepare(batch, rows)
            writer = (
                frame_of(self._spark, rows)
                .coalesce(1)
                .write.format("delta")
                .mode("append")
                .option("txnAppId", app)
                .option("txnVersion", str(target.last))
            )
            if batch.options.merge_schema:
                writer = writer.option("mergeSchema", "true")
            if batch.options.partition_by:
                writer = writer.partitionBy(*batch.options.partition_by)
            try:
                writer.save(batch.path)
            except AnalysisException as exc:
                if exc.getCondition() not in _SCHEMA_MISMATCH:
                    raise
                raise InvalidRequest(
                    "arrow_ipc",
                    f"the rows do not fit the table's schema ({exc.getCondition()}); "
                    "merge.schema=true lets a batch add columns",
                ) from exc
            return WriteResult(rows_written=rows.num_rows, rows_skipped=skipped)

    def _lock_for(self, path: str, app: str) -> threading.Lock:
        with self._locks_guard:
            return self._locks.setdefault((path, app), threading.Lock())

    def _creating(self, path: str) -> AbstractContextManager[object]:
        """While a table does not exist yet, one write at a time creates it: two first commits
        at once would both try to create it, and one would fail."""
        if is_delta_table(path):
            return nullcontext()
        return self._lock_for(path, "")


def is_delta_table(path: str) -> bool:
    """Whether a Delta table has been committed at ``path``."""
    return has_commits(path)


def read_table(spark: SparkSession, path: str) -> DataFrame:
    """The current version of the Delta table at ``path``."""
    return spark.read.format("delta").load(path)
