"""parquet 1.0.0: a sink writing records to a Parquet dataset through the Spark executor.

Each topic partition's records are written as ``<path>/<topic>/<partition>/<first>-<last>-<writer>/
part-*.parquet``, one folder per batch, committed by one rename: a batch redelivered after a
crash is not written twice, and a reader never sees half a batch. ``partition.by`` puts the rows
of each batch in ``column=value`` folders. How records become rows, and when they are written,
is the SDK's table sink (``headrace.sdk.TableSinkTask``).

Self-contained: imported as ``headrace_parquet`` with this folder first on ``sys.path``; it
imports nothing of headrace but ``headrace.sdk``.
"""

from __future__ import annotations

from headrace.sdk import TableSinkConnector, TableSinkTask

VERSION = "1.0.0"


class ParquetSinkConnector(TableSinkConnector):
    """Every task gets the same config; the consumer group spreads the partitions."""

    VERSION = VERSION

    def task_class(self) -> type[ParquetSinkTask]:
        return ParquetSinkTask


class ParquetSinkTask(TableSinkTask):
    """Writes each partition's buffer as one Parquet file (per partition value) per batch."""

    VERSION = VERSION
    FORMAT = "parquet"
