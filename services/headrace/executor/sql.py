"""The SQL transform: Spark SQL over one batch, which the query sees as the view ``batch``.

A write may name a query (``options[sql]``); its result is what the job writes. ``Query`` runs one
and sends the result back to the caller. A query that does not parse, or does not fit the batch
(a column it lacks), is INVALID_ARGUMENT with Spark's reason.

Each run registers the view in a session of its own (``newSession``: the same Spark, temp views
apart), so concurrent runs never see each other's batch. A Spark Connect session has no
``newSession``; there, runs take turns. The result is collected as Arrow: batches are bounded by
the executor's admission, and the writers take Arrow.

``CheckSql`` parses a query without running it, so that a sink's ``sql`` is refused when its
config is validated rather than on its first batch (:func:`check`). It asks Spark for the plan of
``EXPLAIN <query>``: the parser reads the query whole and fails on a syntax error, but EXPLAIN
neither runs the query (a ``DROP TABLE`` given as a query stays undone) nor fails on what analysis
finds (an unknown column or view): a query's fit depends on the batch it will see, which no
check made before the first batch can know. The same works on a classic session and on Spark
Connect, which has no handle on the session's parser. A query whose first word is one of
EXPLAIN's own (``EXTENDED``, ``CODEGEN``, ``COST``, ``FORMATTED``) is read as that mode and the
rest checked; it fails on its first batch instead.
"""

from __future__ import annotations

import re
import threading
from contextlib import AbstractContextManager, nullcontext

import pyarrow as pa
from pyspark.errors import AnalysisException, ParseException
from pyspark.sql import SparkSession

from headrace.executor.batches import InvalidRequest, WriteBatch
from headrace.executor.options import OptionError, check_columns
from headrace.executor.writers.writing import frame_of

VIEW = "batch"
"""The name a query reads the batch by."""
FIELD = "options[sql]"
_MAX_REASON_CHARS = 600
# Where in the EXPLAIN statement Spark found the error: 8 characters off the query's own.
_POSITION = re.compile(r"\s*\(line \d+, pos \d+\)")


def is_connect(spark: SparkSession) -> bool:
    """Whether the session is a Spark Connect client (no JVM of its own, no ``newSession``)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


class SqlRunner:
    """Runs queries over batches through one SparkSession. Thread-safe."""

    def __init__(self, spark: SparkSession) -> None:
        self._spark = spark
        self._shared = is_connect(spark)
        self._turns = threading.Lock()

    def prepare(self, batch: WriteBatch, rows: pa.Table) -> pa.Table:
        """What a job writes of ``rows``: its query's result if it has one, the rows if not."""
        if not batch.options.sql:
            return rows
        result = self.run(rows, batch.options.sql)
        try:
            check_columns(batch.options, result.column_names)
        except OptionError as exc:
            raise InvalidRequest(f"options[{exc.key}]", f"{exc.reason} (the sql result)") from None
        return result

    def run(self, rows: pa.Table, query: str, field: str = FIELD) -> pa.Table:
        """The query's result over ``rows``; InvalidRequest naming ``field`` when it does not
        parse or fit."""
        if not query.strip():
            raise InvalidRequest(field, "empty; give a query over the view batch")
        session = self._spark if self._shared else self._spark.newSession()
        turn: AbstractContextManager[object] = self._turns if self._shared else nullcontext()
        with turn:
            frame_of(session, rows).createOrReplaceTempView(VIEW)
            try:
                return session.sql(query).toArrow()
            except ParseException as exc:
                raise InvalidRequest(field, f"not valid Spark SQL: {_reason(exc)}") from None
            except AnalysisException as exc:
                raise InvalidRequest(field, f"does not fit the batch: {_reason(exc)}") from None
            finally:
                session.catalog.dropTempView(VIEW)


def check(spark: SparkSession, query: str, field: str = "sql") -> None:
    """Parses ``query`` without running it; InvalidRequest naming ``field`` when it is empty or
    not Spark SQL. What it reads or what its columns are is not checked (see the module's
    docstring)."""
    if not query.strip():
        raise InvalidRequest(field, "empty; give a query over the view batch")
    try:
        spark.sql(f"EXPLAIN {query}")
    except ParseException as exc:
        # Only the first line: the rest quotes the EXPLAIN statement, not what the user wrote.
        first = str(exc).strip().splitlines()[0]
        reason = _POSITION.sub("", first)[:_MAX_REASON_CHARS]
        raise InvalidRequest(field, f"not valid Spark SQL: {reason}") from None
    except AnalysisException:
        pass  # it parsed; whether it fits is for the batch to say


def _reason(exc: Exception) -> str:
    return str(exc).strip()[:_MAX_REASON_CHARS]
