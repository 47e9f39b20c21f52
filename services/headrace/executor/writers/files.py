"""Idempotent batch writes of files (Parquet, JSON lines, CSV) with Spark, and reads of them.

Protocol on disk (see layout.py): ``<root>/<topic>/<partition>/<first>-<last>-<writer>/`` is one
committed batch, a complete Spark output directory. One write per dataset root and
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
from pyspark.sql import DataFrame, SparkSession

from headrace.core.observability import log
from headrace.executor.batches import WriteBatch, WriteResult, unwritten
from headrace.executor.writers.layout import (
    TEMP_PREFIX,
    batch_dir_name,
    high_watermark,
    stale_temp_dirs,
    temp_dir_name,
)
from headrace.executor.writers.writing import Prepare, as_given, frame_of, log_skipped

# Long enough that no live write (batches are at most 64 MiB) is still running in a temp dir.
STALE_TEMP_AGE_S = 3600.0


def partition_dir(root: str, topic: str, partition: int) -> str:
    """The folder holding one Kafka partition's committed batches."""
    return os.path.join(root, topic, str(partition))


class FileWriter:
    """Writes batches into datasets of files through one SparkSession. Thread-safe."""

    def __init__(
        self,
        spark: SparkSession,
        prepare: Prepare = as_given,
        stale_temp_age_s: float = STALE_TEMP_AGE_S,
    ) -> None:
        self._spark = spark
        self._prepare = prepare
        self._stale_temp_age_s = stale_temp_age_s
        self._locks: dict[str, threading.Lock] = {}
        self._locks_guard = threading.Lock()
        self._log = log.get("headrace.executor.writers.files")

    def write(self, batch: WriteBatch) -> WriteResult:
        """Commits the batch's rows not yet in the dataset; a no-op for a batch already there."""
        folder = partition_dir(batch.path, batch.topic, batch.partition)
        with self._lock_for(folder):
            os.makedirs(folder, exist_ok=True)
            names = os.listdir(folder)
            self._remove_stale_temp_dirs(folder, names)
            watermark = high_watermark(names, batch.writer)
            rows, skipped, target = unwritten(batch, watermark)
            log_skipped(self._log, batch, watermark, skipped)
            if target is None:
                return WriteResult(rows_written=0, rows_skipped=skipped)
            temp = os.path.join(folder, temp_dir_name())
            try:
                rows = self._prepare(batch, rows)
                self._write_files(rows, temp, batch)
                _fsync_tree(temp)  # the files are on disk before the rename commits them
                os.rename(temp, os.path.join(folder, batch_dir_name(target, batch.writer)))
                _fsync_dir(folder)  # and the rename is, before the caller commits offsets
            except BaseException:
                shutil.rmtree(temp, ignore_errors=True)
                raise
            return WriteResult(rows_written=rows.num_rows, rows_skipped=skipped)

    def _write_files(self, rows: pa.Table, temp: str, batch: WriteBatch) -> None:
        # One file per batch (and partition value): many tiny files hurt every reader.
        writer = frame_of(self._spark, rows).coalesce(1).write.format(batch.format)
        if batch.format == "csv":
            writer = writer.option("header", "true")
        if batch.options.partition_by:
            writer = writer.partitionBy(*batch.options.partition_by)
        writer.save(temp)

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


def read_rows(spark: SparkSession, path: str, fmt: str = "parquet") -> DataFrame:
    """Every committed row under a dataset root, across topics, partitions and batches."""
    reader = spark.read.format(fmt).option("recursiveFileLookup", "true")
    if fmt == "csv":
        reader = reader.option("header", "true")
    return reader.load(path)


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
