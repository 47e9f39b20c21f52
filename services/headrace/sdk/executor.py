"""The Spark executor as a sink task sees it: ``self.context.executor.write_table(...)``.

A sink task that writes through Spark builds one Arrow table per topic partition and hands it
over; the executor writes it to the dataset at ``path`` idempotently per offset range, so a batch
redelivered after a crash is not written twice. The table must carry each row's Kafka offset in an
int64 :data:`KAFKA_OFFSET_COLUMN` column. Where the executor runs, and which connector and task
are writing, the runtime knows: a plugin never configures either.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol

from headrace.sdk.errors import ConnectError

if TYPE_CHECKING:
    import pyarrow as pa

KAFKA_OFFSET_COLUMN = "kafka_offset"
"""The int64 column holding each row's Kafka offset in a table for the executor."""


class Executor(Protocol):
    """Writes Arrow tables through the Spark executor, on behalf of one sink task."""

    async def write_table(
        self,
        *,
        topic: str,
        partition: int,
        table: pa.Table,
        path: str,
        format: str = "parquet",
        options: Mapping[str, str] | None = None,
    ) -> tuple[int, int]:
        """Writes one topic partition's rows to the dataset at ``path``; (written, skipped).

        ``format`` is ``parquet``, ``json``, ``csv`` (files, one folder per batch) or ``delta``
        (a Delta table); ``options`` are the format's (``partition.by``: columns by commas;
        ``merge.schema``: ``true`` lets Delta add columns). ``skipped`` counts rows an earlier
        try already wrote. ``path`` must lie in a folder the operator allowed: resolve it with
        ``context.paths`` first. Raises ValueError for a table without
        :data:`KAFKA_OFFSET_COLUMN`, and the executor's refusal or failure otherwise.
        """
        ...

    async def query(self, *, table: pa.Table, sql: str) -> pa.Table:
        """Spark SQL over ``table``, which the query reads as the view ``batch``, and its
        result (``SELECT id, amount * 2 AS doubled FROM batch WHERE amount > 0``). Raises the
        executor's refusal (INVALID_ARGUMENT with Spark's reason) for a query that does not
        parse or fit the table."""
        ...


class SqlCheck(Protocol):
    """Asks the Spark executor whether a query parses, without running it: what a connector's
    ``validate()`` gets as ``context.sql`` to refuse a query before its first batch would."""

    def check(self, sql: str) -> str | None:
        """Why ``sql`` is not Spark SQL (Spark's reason), or None. RetriableError when the
        executor cannot be asked in time (down, or too slow): that is no verdict, and the config
        is neither taken nor refused (the caller is told to ask again). Only the syntax is
        checked: whether the query fits a batch (its columns) is for the batch to say."""
        ...


class NoSqlCheck:
    """The ``SqlCheck`` of a context that was not made for validation: checks nothing."""

    def check(self, sql: str) -> str | None:
        return None


class NoExecutor:
    """The executor of a context the runtime did not make: every write is a clear error."""

    async def write_table(
        self,
        *,
        topic: str,
        partition: int,
        table: pa.Table,
        path: str,
        format: str = "parquet",
        options: Mapping[str, str] | None = None,
    ) -> tuple[int, int]:
        raise _missing()

    async def query(self, *, table: pa.Table, sql: str) -> pa.Table:
        raise _missing()


def _missing() -> ConnectError:
    return ConnectError(
        "no Spark executor: this SinkTaskContext was not made by the headrace runtime; "
        "pass executor=... to SinkTaskContext to use one without it"
    )
