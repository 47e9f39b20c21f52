"""What a dataset or table holds, read back with Spark: counts and rows, for every format."""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from headrace.executor.batches import InvalidRequest
from headrace.executor.options import DELTA, JDBC
from headrace.executor.writers.delta import is_delta_table, read_table
from headrace.executor.writers.files import has_data_files, read_rows

DEFAULT_LIMIT = 10_000


def frame_at(spark: SparkSession, fmt: str, path: str) -> DataFrame | None:
    """Every committed row at ``path`` written in ``fmt``; None when nothing is there yet
    (Spark cannot infer a schema from nothing, and would raise instead)."""
    if fmt == DELTA:
        return read_table(spark, path) if is_delta_table(path) else None
    if fmt == JDBC:
        raise InvalidRequest("format", "jdbc tables are read from their database, not here")
    return read_rows(spark, path, fmt) if has_data_files(path) else None


def count(spark: SparkSession, fmt: str, path: str) -> int:
    """How many rows are at ``path``; 0 when there are none."""
    frame = frame_at(spark, fmt, path)
    return 0 if frame is None else int(frame.count())


def rows(spark: SparkSession, fmt: str, path: str, limit: int) -> tuple[pa.Table, bool]:
    """Up to ``limit`` rows at ``path`` (in no particular order), and whether there are more."""
    frame = frame_at(spark, fmt, path)
    if frame is None:
        return pa.table({}), False
    table = frame.limit(limit + 1).toArrow()
    return table.slice(0, limit), table.num_rows > limit
