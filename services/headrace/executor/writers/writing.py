"""What the executor's three writers (files, Delta, JDBC) share: the transform a job applies to a
batch's new rows before they are written (``Prepare``; the SQL transform's is
``sql.SqlRunner.prepare``), the rows as a Spark DataFrame, and the log line for rows an earlier
try already wrote."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession

from headrace.executor.batches import InvalidRequest, WriteBatch

Prepare = Callable[[WriteBatch, pa.Table], pa.Table]
"""What a job writes of a batch's new rows (``sql.SqlRunner.prepare``: its query's result)."""


def as_given(batch: WriteBatch, rows: pa.Table) -> pa.Table:
    """A :data:`Prepare` that writes the rows as they came."""
    return rows


def frame_of(spark: SparkSession, rows: pa.Table) -> DataFrame:
    """The rows as a Spark DataFrame; InvalidRequest when Spark cannot hold them."""
    try:
        return spark.createDataFrame(rows)
    except (PySparkException, TypeError, ValueError) as exc:
        raise InvalidRequest("arrow_ipc", f"Spark cannot take these rows: {exc}") from exc


def log_skipped(logger: Any, batch: WriteBatch, watermark: int | None, skipped: int) -> None:
    """Says that rows of a batch were dropped as written already, if any were."""
    if skipped:
        # Expected when a batch is retried, and only then: another connector or a re-created
        # topic is another writer, with a watermark of its own.
        logger.warning(
            "rows_skipped_below_watermark",
            connector=batch.connector,
            topic=batch.topic,
            partition=batch.partition,
            watermark=watermark,
            skipped=skipped,
        )
