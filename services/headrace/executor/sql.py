"""The SQL transform: Spark SQL over one batch, which the query sees as the view ``batch``, and
nothing else: a query that is not one over the batch alone (``sqlguard``: a command, DDL, a
table, a file, a function that reaches the JVM) is refused, at validation and again here,
before it runs.

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
from pyspark.sql import DataFrame, SparkSession

from headrace.executor import sqlguard
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
        self._builtins: frozenset[str] | None = None

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

    def check(self, query: str, field: str = "sql") -> None:
        """Refuses ``query`` unless it parses and is a query over the batch alone (see
        ``sqlguard``), without running it; InvalidRequest naming ``field`` says why."""
        check(self._spark, query, field, self.builtins())

    def builtins(self) -> frozenset[str]:
        """Spark's own function names, asked once."""
        if self._builtins is None:
            self._builtins = builtin_functions(self._spark)
        return self._builtins

    def run(self, rows: pa.Table, query: str, field: str = FIELD) -> pa.Table:
        """The query's result over ``rows``; InvalidRequest naming ``field`` when it does not
        parse, is not a query over the batch alone, or does not fit it. Checked on its parsed
        plan before it is planned over the batch, and on its analysed plan before it runs."""
        if not query.strip():
            raise InvalidRequest(field, "empty; give a query over the view batch")
        builtins = self.builtins()
        session = self._spark if self._shared else self._spark.newSession()
        turn: AbstractContextManager[object] = self._turns if self._shared else nullcontext()
        with turn:
            frame_of(session, rows).createOrReplaceTempView(VIEW)
            try:
                check(session, query, field, builtins)
                frame = session.sql(query)  # a query, not a command: nothing runs yet
                _refuse(analysed_facts(session, frame, query), field)
                return frame.toArrow()
            except ParseException as exc:
                raise InvalidRequest(field, f"not valid Spark SQL: {_reason(exc)}") from None
            except AnalysisException as exc:
                raise InvalidRequest(field, f"does not fit the batch: {_reason(exc)}") from None
            finally:
                session.catalog.dropTempView(VIEW)


def check(
    spark: SparkSession, query: str, field: str = "sql", builtins: frozenset[str] | None = None
) -> None:
    """Parses ``query`` without running it, and refuses it unless it is a query over the batch
    alone (``sqlguard``, on the parsed plan); InvalidRequest naming ``field`` says why. Whether
    its columns fit a batch is not checked (see the module's docstring)."""
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
    _refuse(parsed_facts(spark, query), field, builtins)


def _refuse(facts: sqlguard.PlanFacts, field: str, builtins: frozenset[str] | None = None) -> None:
    refused = sqlguard.refusal(facts, builtins)
    if refused is not None:
        raise InvalidRequest(field, f"refused: the query {refused}")


def parsed_facts(spark: SparkSession, query: str) -> sqlguard.PlanFacts:
    """The facts of the query's parsed plan: Spark's parser's own tree on a classic session,
    its EXPLAIN EXTENDED drawing on Spark Connect. Nothing runs."""
    if not is_connect(spark):
        parser = spark._jsparkSession.sessionState().sqlParser()
        return sqlguard.jvm_facts(parser.parsePlan(query))
    return sqlguard.text_facts(_explained(spark, query).get("Parsed Logical Plan", ()))


def analysed_facts(spark: SparkSession, frame: DataFrame, query: str) -> sqlguard.PlanFacts:
    """The facts of the query's analysed plan over the batch, before it runs."""
    if not is_connect(spark):
        plan = frame._jdf.queryExecution().analyzed()
        return sqlguard.jvm_facts(plan)
    analysed = _explained(spark, query).get("Analyzed Logical Plan", ())
    return sqlguard.analysed_text_facts(analysed)


def _explained(spark: SparkSession, query: str) -> dict[str, list[str]]:
    rows = spark.sql(f"EXPLAIN EXTENDED {query}").collect()
    return sqlguard.explained_sections(str(rows[0][0]) if rows else "")


def builtin_functions(spark: SparkSession) -> frozenset[str]:
    """The names of Spark's built-in functions (``SHOW SYSTEM FUNCTIONS``), lower case."""
    return frozenset(str(row[0]).lower() for row in spark.sql("SHOW SYSTEM FUNCTIONS").collect())


def _reason(exc: Exception) -> str:
    return str(exc).strip()[:_MAX_REASON_CHARS]
