"""Idempotent batch writes with Spark, and reads of what was written.

Protocol on disk (see layout.py): ``<root>/<topic>/<partition>/<first>-<last>-<writer>/`` is one
committed batch, a complete Spark parquet output directory. One write per dataset root and
partition at a time (a lock per partition folder, so the executor must be the only process writing
a root):

1. list the partition folder; the high watermark is the highest ``last`` the batch's writer (its
   connector and topic id) committed;
2. drop the rows at or below the watermark (they were written by an earlier try);
3. write the rest with Spark into a hidden ``_tmp-*`` sibling;
4. ``os.rename`` it to ``<max(first, watermark + 1)>-<last>-<writer>``: the commit.

A crash before step 4 leaves only a hidden temp dir, which readers skip and a later write to the
partition removes once it is old. A crash after it leaves a committed batch, which a retry skips.
"""

from __future__ import annotations

import os
import shutil
import threading
import time

import pyarrow as pa
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession

from headrace.core import log
from headrace.executor.batches import InvalidRequest, WriteBatch, WriteResult, rows_after
from headrace.executor.layout import (
    TEMP_PREFIX,
    batch_dir_name,
    high_watermark,
    range_to_write,
    stale_temp_dirs,
    temp_dir_name,
)

# Long enough that no live write (batches are at most 64 MiB) is still running in a temp dir.
STALE_TEMP_AGE_S = 3600.0


def partition_dir(root: str, topic: str, partition: int) -> str:
    """The folder holding one Kafka partition's committed batches."""
    return os.path.join(root, topic, str(partition))


class BatchWriter:
    """Writes batches into parquet datasets through one SparkSession. Thread-safe."""

    def __init__(self, spark: SparkSession, stale_temp_age_s: float = STALE_TEMP_AGE_S) -> None:
        self._spark = spark
        self._stale_temp_age_s = stale_temp_age_s
        self._locks: dict[str, threading.Lock] = {}
        self._locks_guard = threading.Lock()
        self._log = log.get("headrace.executor.writer")

    def write(self, batch: WriteBatch) -> WriteResult:
        """Commits the batch's rows not yet in the dataset; a no-op for a batch already there."""
        folder = partition_dir(batch.path, batch.topic, batch.partition)
        with self._lock_for(folder):
            os.makedirs(folder, exist_ok=True)
            names = os.listdir(folder)
            self._remove_stale_temp_dirs(folder, names)
            watermark = high_watermark(names, batch.writer)
            rows, skipped = rows_after(batch.table, watermark)
            if skipped:
                # Expected when a batch is retried, and only then: another connector or a
                # re-created topic is another writer, with a watermark of its own.
                self._log.warning(
                    "rows_skipped_below_watermark",
                    connector=batch.connector,
                    topic=batch.topic,
                    partition=batch.partition,
                    watermark=watermark,
                    skipped=skipped,
                )
            target = range_to_write(batch.offsets, watermark)
            if target is None or rows.num_rows == 0:
                return WriteResult(rows_written=0, rows_skipped=skipped)
            temp = os.path.join(folder, temp_dir_name())
            try:
                self._write_parquet(rows, temp)
                _fsync_tree(temp)  # the files are on disk before the rename commits them
                os.rename(temp, os.path.join(folder, batch_dir_name(target, batch.writer)))
                _fsync_dir(folder)  # and the rename is, before the caller commits offsets
            except BaseException:
                shutil.rmtree(temp, ignore_errors=True)
                raise
            return WriteResult(rows_written=rows.num_rows, rows_skipped=skipped)

    def _write_parquet(self, rows: pa.Table, temp: str) -> None:
        try:
            frame = self._spark.createDataFrame(rows)
        except (PySparkException, TypeError, ValueError) as exc:
            raise InvalidRequest("arrow_ipc", f"Spark cannot take these rows: {exc}") from exc
        # One file per batch: batches are small, and many tiny files hurt every reader.
        frame.coalesce(1).write.parquet(temp)

    def _lock_for(self, folder: str) -> threading.Lock:
        key = os.path.realpath(folder)
        with self._locks_guard:
            return self._locks.setdefault(key, threading.Lock())

    def _remove_stale_temp_dirs(self, folder: str, names: list[str]) -> None:
        entries = []
        for name in names:
            if name.startswith(TEMP_PREFIX):
                try:
                    entries.append((name, os.stat(os.path.join(folder, name)).st_mtime))
                except FileNotFoundError:
                    continue
        for name in stale_temp_dirs(entries, time.time(), self._stale_temp_age_s):
            shutil.rmtree(os.path.join(folder, name), ignore_errors=True)
            self._log.info("stale_temp_dir_removed", folder=folder, name=name)


def has_data_files(path: str) -> bool:
    """Whether a dataset root holds any file a reader would see (hidden ``_``/``.`` names aside)."""
    for _dir, dirs, files in os.walk(path):
        dirs[:] = [d for d in dirs if not d.startswith(("_", "."))]
        if any(not f.startswith(("_", ".")) for f in files):
            return True
    return False


def read_rows(spark: SparkSession, path: str) -> DataFrame:
    """Every committed row under a dataset root, across topics, partitions and batches."""
    return spark.read.option("recursiveFileLookup", "true").parquet(path)


def count_rows(spark: SparkSession, path: str) -> int:
    """How many committed rows a dataset root holds; 0 when it does not exist or is empty."""
    if not has_data_files(path):
        # Spark cannot infer a schema from nothing and would raise instead of answering 0.
        return 0
    return int(read_rows(spark, path).count())


def _fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_tree(root: str) -> None:
    for folder, _, files in os.walk(root):
        for name in files:
            fd = os.open(os.path.join(folder, name), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        _fsync_dir(folder)
