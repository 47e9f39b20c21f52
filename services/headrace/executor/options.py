"""What a write request may ask of a job beyond its rows: the options of each format (pure).

| option | formats | meaning |
| --- | --- | --- |
| ``partition.by`` | files, delta | columns, by commas, whose values name ``column=value`` folders |
| ``merge.schema`` | delta | ``true`` lets a batch add columns to the table (schema evolution) |
| ``url`` | jdbc | ``jdbc:postgresql://host[:port]/database``, maybe ``?user=&password=&sslmode=`` |
| ``table`` | jdbc | the table, ``name`` or ``schema.name``; made from the first batch if missing |
| ``mode`` | jdbc | ``insert`` (default) or ``upsert`` (one row per key: the latest offset wins) |
| ``key.columns`` | jdbc | columns, by commas, identifying a row; ``upsert`` needs them |
| ``user``, ``password`` | jdbc | credentials, when the URL has none |
| ``sql`` | all | Spark SQL over the batch (the view ``batch``), whose result is written instead |

An option a format does not take, or a value it cannot use, is refused, never ignored.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from headrace.sdk.network import BadUrl, postgresql_url, redacted

PARTITION_BY = "partition.by"
MERGE_SCHEMA = "merge.schema"
URL = "url"
TABLE = "table"
MODE = "mode"
KEY_COLUMNS = "key.columns"
USER = "user"
PASSWORD = "password"
SQL = "sql"

FILE_FORMATS = ("parquet", "json", "csv")
"""Formats written as one folder of files per batch (see ``layout.py``)."""
DELTA = "delta"
JDBC = "jdbc"
FORMATS = (*FILE_FORMATS, DELTA, JDBC)
MODES = ("insert", "upsert")

_TAKES: dict[str, frozenset[str]] = {
    **{f: frozenset({PARTITION_BY, SQL}) for f in FILE_FORMATS},
    DELTA: frozenset({PARTITION_BY, MERGE_SCHEMA, SQL}),
    JDBC: frozenset({URL, TABLE, MODE, KEY_COLUMNS, USER, PASSWORD, SQL}),
}
# A table as SQL names it, unquoted: a name, or a schema and a name. Anything else (quotes,
# spaces, semicolons) could be read as more SQL than a name.
_TABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}(\.[A-Za-z_][A-Za-z0-9_]{0,62})?$")
_URL_PARAMS = {"user": USER, "password": PASSWORD, "sslmode": "sslmode"}
_BOOLEANS = {"true": True, "false": False}


class OptionError(ValueError):
    """An option the format does not take, or a value it cannot use; ``key`` names it."""

    def __init__(self, key: str, reason: str) -> None:
        super().__init__(f"{key}: {reason}")
        self.key = key
        self.reason = reason


@dataclass(frozen=True)
class WriteOptions:
    """A job's options, checked."""

    partition_by: tuple[str, ...] = ()
    merge_schema: bool = False
    database: Database | None = None  # jdbc only
    sql: str = ""  # a query over the batch, whose result is written; empty: the batch as it is


@dataclass(frozen=True)
class Database:
    """Where a jdbc job writes, and how."""

    url: str  # host, port and database alone, for Spark's JDBC writer; the rest are properties
    host: str
    port: int
    name: str
    table: tuple[str, ...]  # (name,) or (schema, name)
    mode: str
    key_columns: tuple[str, ...]
    user: str | None
    password: str | None = field(default=None, repr=False)
    sslmode: str | None = None

    def connection_args(self) -> dict[str, str | int]:
        """What a PostgreSQL client connects with."""
        args: dict[str, str | int] = {"host": self.host, "port": self.port, "dbname": self.name}
        if self.user is not None:
            args["user"] = self.user
        if self.password is not None:
            args["password"] = self.password
        if self.sslmode is not None:
            args["sslmode"] = self.sslmode
        return args


def parse_options(fmt: str, raw: Mapping[str, str]) -> WriteOptions:
    """The options of a write in ``fmt`` (one of :data:`FORMATS`), or OptionError."""
    takes = _TAKES[fmt]
    for key in sorted(raw):
        if key not in takes:
            allowed = ", ".join(sorted(takes))
            raise OptionError(key, f"not an option of {fmt} (it takes {allowed})")
    partition_by = _columns(raw.get(PARTITION_BY, ""), PARTITION_BY)
    merge = raw.get(MERGE_SCHEMA, "false").strip().lower()
    if merge not in _BOOLEANS:
        raise OptionError(MERGE_SCHEMA, f"{raw[MERGE_SCHEMA]!r} is not true or false")
    database = parse_database(raw) if fmt == JDBC else None
    query = raw.get(SQL, "")
    if SQL in raw and not query.strip():
        raise OptionError(SQL, "empty; give a query over the view batch, or leave sql out")
    return WriteOptions(
        partition_by=partition_by, merge_schema=_BOOLEANS[merge], database=database, sql=query
    )


def parse_database(raw: Mapping[str, str]) -> Database:
    """The target of a jdbc job: a PostgreSQL table, reached by a ``jdbc:postgresql:`` URL."""
    url = raw.get(URL, "")
    if not url:
        raise OptionError(URL, "missing; give jdbc:postgresql://host:port/database")
    if not url.startswith("jdbc:postgresql:"):
        raise OptionError(URL, f"{redacted(url)} is not a jdbc:postgresql:// URL (PostgreSQL only)")
    try:
        parsed = postgresql_url(url)
    except BadUrl as exc:
        raise OptionError(URL, str(exc)) from None
    params: dict[str, str] = {}
    for key, value in parsed.params.items():
        if key not in _URL_PARAMS:
            allowed = ", ".join(sorted(_URL_PARAMS))
            raise OptionError(URL, f"parameter {key} is not supported (only {allowed})")
        params[_URL_PARAMS[key]] = value
    table = raw.get(TABLE, "")
    if not _TABLE.match(table):
        raise OptionError(TABLE, f"{table!r} is not a table name (name or schema.name)")
    mode = raw.get(MODE, "insert").strip().lower()
    if mode not in MODES:
        raise OptionError(MODE, f"{raw[MODE]!r} is not one of {', '.join(MODES)}")
    keys = _columns(raw.get(KEY_COLUMNS, ""), KEY_COLUMNS)
    if mode == "upsert" and not keys:
        raise OptionError(KEY_COLUMNS, "upsert needs the columns that identify a row")
    return Database(
        url=parsed.jdbc(),
        host=parsed.host,
        port=parsed.port,
        name=parsed.database,
        table=tuple(table.split(".")),
        mode=mode,
        key_columns=keys,
        user=raw.get(USER, params.get(USER)),
        password=raw.get(PASSWORD, params.get(PASSWORD)),
        sslmode=params.get("sslmode"),
    )


def _columns(raw: str, key: str) -> tuple[str, ...]:
    if not raw.strip():
        return ()
    names = [name.strip() for name in raw.split(",")]
    if any(not name for name in names):
        raise OptionError(key, f"{raw!r} names an empty column")
    doubled = sorted({n for n in names if names.count(n) > 1})
    if doubled:
        raise OptionError(key, f"{', '.join(doubled)} named twice")
    return tuple(names)


def check_columns(options: WriteOptions, columns: list[str]) -> None:
    """Checks that the partition (or key) columns are among the batch's (or, with a query, its
    result's), and leave some to write."""
    if options.database is not None:
        missing = [c for c in options.database.key_columns if c not in columns]
        if missing:
            raise OptionError(KEY_COLUMNS, f"no column {', '.join(missing)} in the batch")
    missing = [c for c in options.partition_by if c not in columns]
    if missing:
        raise OptionError(PARTITION_BY, f"no column {', '.join(missing)} in the batch")
    if options.partition_by and len(options.partition_by) == len(columns):
        raise OptionError(PARTITION_BY, "names every column; files would hold none")
