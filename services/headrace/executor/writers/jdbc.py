"""Exactly-once batch writes into a PostgreSQL table: Spark's JDBC writer, then one transaction.

A write:

1. has Spark write the batch's rows into a staging table of their own (Spark's JDBC data
   source, with the PostgreSQL driver: Spark maps the types and does the bulk insert);
2. in one database transaction, locks the row of :data:`OFFSETS_TABLE` that records the last
   offset this (connector, topic id, partition) wrote to this table, copies the staged rows above
   it into the
   target table (inserted, or upserted by the key columns with the latest offset winning), and
   moves that offset to the batch's last;
3. drops the staging table.

The rows and the offset that says they were written commit together, so a batch retried after
any crash (the executor's, Spark's or the database's) writes only what the last commit lacks,
and two tries racing each other wait on the lock: this is an exactly-once sink. A staging table
a crash left behind is dropped by a later write once it is an hour old.

The target table is made from the first batch's columns if it does not exist (with a unique
index on the key columns, for upserts). The executor talks to the database itself (psycopg) for
step 2, since Spark's JDBC writer cannot run other statements in its transaction.
"""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import psycopg
import pyarrow as pa
from psycopg import sql
from psycopg.conninfo import make_conninfo
from pyspark.sql import SparkSession

from headrace.core.observability import log
from headrace.executor.batches import InvalidRequest, WriteBatch, WriteResult, unwritten
from headrace.executor.options import Database
from headrace.executor.writers.writing import Prepare, as_given, frame_of, log_skipped
from headrace.sdk.executor import KAFKA_OFFSET_COLUMN
from headrace.sdk.network import unsafe_host

OFFSETS_TABLE = "headrace_offsets"
STAGING_PREFIX = "headrace_stage_"
STALE_STAGING_S = 3600
_CONNECT_TIMEOUT_S = 10

_CREATE_OFFSETS = sql.SQL(
    "CREATE TABLE IF NOT EXISTS {} ("
    " target text NOT NULL, connector text NOT NULL, topic text NOT NULL,"
    " topic_id text NOT NULL, kafka_partition integer NOT NULL, last_offset bigint NOT NULL,"
    " PRIMARY KEY (target, connector, topic_id, kafka_partition))"
).format(sql.Identifier(OFFSETS_TABLE))


class JdbcWriter:
    """Writes batches into PostgreSQL tables through one SparkSession. Thread-safe."""

    def __init__(self, spark: SparkSession, prepare: Prepare = as_given) -> None:
        self._spark = spark
        self._prepare = prepare
        self._log = log.get("headrace.executor.writers.jdbc")
        self._set_up_in: set[tuple[str, int, str]] = set()  # databases with OFFSETS_TABLE
        self._guard = threading.Lock()

    def write(self, batch: WriteBatch) -> WriteResult:
        """Commits the batch's rows not yet in the table; a no-op for a batch already there."""
        database = batch.options.database
        assert database is not None, "a jdbc batch names its database"
        unsafe = unsafe_host(database.host)  # resolved now, just before connecting
        if unsafe is not None:
            raise InvalidRequest("options[url]", f"refused: {unsafe}")
        with _connect(database) as conn:
            self._set_up(conn, database)
            last = _last_offset(conn, _key(database, batch))
            rows, skipped, target = unwritten(batch, last)
            log_skipped(self._log, batch, last, skipped)
            if target is None:
                return WriteResult(rows_written=0, rows_skipped=skipped)
            rows = self._prepare(batch, rows)
            if KAFKA_OFFSET_COLUMN not in rows.column_names:
                raise InvalidRequest(
                    "options[sql]",
                    f"its result must keep {KAFKA_OFFSET_COLUMN}: the table's rows"
                    " are matched to the offsets they were written for by it",
                )
            staging = f"{STAGING_PREFIX}{int(time.time())}_{uuid.uuid4().hex[:12]}"
            properties = {"driver": "org.postgresql.Driver", "stringtype": "unspecified"}
            properties |= {k: v for k, v in _credentials(database).items() if v is not None}
            try:
                frame_of(self._spark, rows).write.jdbc(
                    database.url, staging, mode="overwrite", properties=properties
                )
                with conn.transaction():
                    written = _commit(conn, database, batch, rows, staging, target.last)
            finally:
                conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(staging)))
            # Rows another try committed while this one staged them were skipped too (an upsert
            # also folds rows of one key into one, which skips nothing).
            raced = rows.num_rows - written if database.mode == "insert" else 0
            return WriteResult(rows_written=written, rows_skipped=skipped + raced)

    def _set_up(self, conn: psycopg.Connection[Any], database: Database) -> None:
        """Makes the offsets table once per database, and drops stale staging tables."""
        where = (database.host, database.port, database.name)
        with self._guard:
            if where in self._set_up_in:
                return
        conn.execute(_CREATE_OFFSETS)
        for (name,) in conn.execute(
            "SELECT tablename FROM pg_tables WHERE tablename LIKE %s",
            (STAGING_PREFIX.replace("_", r"\_") + "%",),
        ).fetchall():
            stamp = name.removeprefix(STAGING_PREFIX).split("_", 1)[0]
            if stamp.isdecimal() and time.time() - int(stamp) > STALE_STAGING_S:
                conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(name)))
                self._log.info("stale_staging_table_dropped", table=name)
        with self._guard:
            self._set_up_in.add(where)


def _connect(database: Database) -> psycopg.Connection[Any]:
    try:
        args = {**database.connection_args(), "connect_timeout": _CONNECT_TIMEOUT_S}
        conninfo = make_conninfo("", **args)
        return psycopg.connect(conninfo, autocommit=True)
    except psycopg.OperationalError as exc:
        # Unreachable or refused: the executor cannot tell a typo from an outage, so the caller
        # retries as for any failed write, and its error names the database.
        raise ConnectionError(
            f"cannot connect to {database.host}:{database.port}/{database.name}: {exc}"
        ) from exc


def _credentials(database: Database) -> dict[str, str | None]:
    """What the JDBC driver takes beside the URL: the URL carries no parameter, so the driver
    reads exactly the host, port and database checked here."""
    return {"user": database.user, "password": database.password, "sslmode": database.sslmode}


def _key(database: Database, batch: WriteBatch) -> tuple[str, str, str, int]:
    """Whose last offset a batch is checked against: its table, connector, topic id and
    partition."""
    return ".".join(database.table), batch.connector, batch.topic_id, batch.partition


_WHERE_KEY = " WHERE target = %s AND connector = %s AND topic_id = %s AND kafka_partition = %s"


def _last_offset(conn: psycopg.Connection[Any], key: tuple[str, str, str, int]) -> int | None:
    query = sql.SQL("SELECT last_offset FROM {}" + _WHERE_KEY).format(sql.Identifier(OFFSETS_TABLE))
    row = conn.execute(query, key).fetchone()
    return None if row is None else int(row[0])


def _commit(
    conn: psycopg.Connection[Any],
    database: Database,
    batch: WriteBatch,
    rows: pa.Table,
    staging: str,
    last: int,
) -> int:
    """Step 2, inside the caller's transaction: the rows the target took."""
    offsets = sql.Identifier(OFFSETS_TABLE)
    key = _key(database, batch)
    conn.execute(
        sql.SQL(
            "INSERT INTO {} (target, connector, topic_id, kafka_partition, topic, last_offset)"
            " VALUES (%s, %s, %s, %s, %s, -1) ON CONFLICT DO NOTHING"
        ).format(offsets),
        (*key, batch.topic),
    )
    locked = conn.execute(
        sql.SQL("SELECT last_offset FROM {}" + _WHERE_KEY + " FOR UPDATE").format(offsets),
        key,
    ).fetchone()
    assert locked is not None
    written_up_to = int(locked[0])  # another try may have committed since the first look
    table = sql.Identifier(*database.table)
    conn.execute(
        sql.SQL("CREATE TABLE IF NOT EXISTS {} (LIKE {})").format(table, sql.Identifier(staging))
    )
    columns = rows.column_names
    names = sql.SQL(", ").join(map(sql.Identifier, columns))
    above = sql.SQL("FROM {} WHERE {} > %s").format(
        sql.Identifier(staging), sql.Identifier(KAFKA_OFFSET_COLUMN)
    )
    if database.mode == "upsert":
        keys = sql.SQL(", ").join(map(sql.Identifier, database.key_columns))
        index = sql.Identifier(f"{database.table[-1]}_headrace_key"[:63])
        conn.execute(
            sql.SQL("CREATE UNIQUE INDEX IF NOT EXISTS {} ON {} ({})").format(index, table, keys)
        )
        updates = sql.SQL(", ").join(
            sql.SQL("{} = EXCLUDED.{}").format(sql.Identifier(c), sql.Identifier(c))
            for c in columns
            if c not in database.key_columns
        )
        statement = sql.SQL(
            "INSERT INTO {table} ({names}) SELECT DISTINCT ON ({keys}) {names} {above}"
            " ORDER BY {keys}, {offset} DESC ON CONFLICT ({keys}) DO UPDATE SET {updates}"
        ).format(
            table=table,
            names=names,
            keys=keys,
            above=above,
            offset=sql.Identifier(KAFKA_OFFSET_COLUMN),
            updates=updates,
        )
    else:
        statement = sql.SQL("INSERT INTO {} ({}) SELECT {} {}").format(table, names, names, above)
    try:
        taken = conn.execute(statement, (written_up_to,)).rowcount
    except psycopg.errors.DataError as exc:
        raise InvalidRequest("arrow_ipc", f"the rows do not fit {database.table}: {exc}") from exc
    except psycopg.errors.UndefinedColumn as exc:
        raise InvalidRequest(
            "arrow_ipc", f"the rows have columns table {'.'.join(database.table)} lacks: {exc}"
        ) from exc
    conn.execute(
        sql.SQL("UPDATE {} SET last_offset = %s" + _WHERE_KEY).format(offsets),
        (max(last, written_up_to), *key),
    )
    return taken
