"""The options of each format: what is taken, what is refused and why."""

from __future__ import annotations

import pytest

from headrace.executor.options import (
    FORMATS,
    OptionError,
    WriteOptions,
    check_columns,
    parse_options,
)


@pytest.mark.parametrize("fmt", [f for f in FORMATS if f != "jdbc"])  # jdbc needs a database
def test_no_options_is_the_default_for_every_format(fmt: str) -> None:
    assert parse_options(fmt, {}) == WriteOptions()


def test_partition_columns_are_taken_in_order_without_spaces() -> None:
    assert parse_options("parquet", {"partition.by": " day, region "}).partition_by == (
        "day",
        "region",
    )


def test_delta_may_merge_schemas() -> None:
    assert parse_options("delta", {"merge.schema": "TRUE"}).merge_schema
    assert not parse_options("delta", {"merge.schema": "false"}).merge_schema


@pytest.mark.parametrize(
    ("fmt", "options", "key", "says"),
    [
        ("csv", {"merge.schema": "true"}, "merge.schema", "not an option of csv"),
        ("delta", {"path": "/x"}, "path", "it takes merge.schema, partition.by"),
        ("delta", {"merge.schema": "1"}, "merge.schema", "'1' is not true or false"),
        ("json", {"partition.by": "a,,b"}, "partition.by", "names an empty column"),
        ("json", {"partition.by": "a,b,a"}, "partition.by", "a named twice"),
    ],
)
def test_what_a_format_cannot_honour_is_refused_by_key(
    fmt: str, options: dict[str, str], key: str, says: str
) -> None:
    with pytest.raises(OptionError) as refused:
        parse_options(fmt, options)
    assert refused.value.key == key
    assert says in refused.value.reason


def test_partition_columns_must_be_in_the_batch_and_leave_some_to_write() -> None:
    check_columns(WriteOptions(partition_by=("day",)), ["day", "v"])
    with pytest.raises(OptionError, match="no column region in the batch"):
        check_columns(WriteOptions(partition_by=("day", "region")), ["day", "v"])
    with pytest.raises(OptionError, match="names every column"):
        check_columns(WriteOptions(partition_by=("day", "v")), ["day", "v"])


URL = "jdbc:postgresql://db.example.com:5433/shop?user=writer&password=pw&sslmode=require"


def test_a_jdbc_target_is_read_from_its_url_and_options() -> None:
    options = parse_options(
        "jdbc", {"url": URL, "table": "sales.orders", "mode": "upsert", "key.columns": "id"}
    )
    database = options.database
    assert database is not None
    assert (database.host, database.port, database.name) == ("db.example.com", 5433, "shop")
    assert (database.table, database.mode, database.key_columns) == (
        ("sales", "orders"),
        "upsert",
        ("id",),
    )
    assert database.connection_args() == {
        "host": "db.example.com",
        "port": 5433,
        "dbname": "shop",
        "user": "writer",
        "password": "pw",
        "sslmode": "require",
    }
    assert "pw" not in repr(database)  # a password is never printed
    # What Spark's JDBC driver is given: the host, port and database checked, nothing else.
    assert database.url == "jdbc:postgresql://db.example.com:5433/shop"


@pytest.mark.parametrize(
    ("options", "key", "says"),
    [
        ({"table": "t"}, "url", "missing"),
        ({"url": "jdbc:mysql://h/d", "table": "t"}, "url", "PostgreSQL only"),
        ({"url": "jdbc:postgresql://h", "table": "t"}, "url", "does not name a host and a"),
        ({"url": "jdbc:postgresql://h:x/d", "table": "t"}, "url", "no valid port"),
        ({"url": "jdbc:postgresql://h/d#?socketFactory=x", "table": "t"}, "url", "'#'"),
        ({"url": "jdbc:postgresql://h,169.254.169.254:80/d", "table": "t"}, "url", "several"),
        ({"url": "jdbc:postgresql://[127.0.0.1]/d", "table": "t"}, "url", "brackets"),
        ({"url": "jdbc:postgresql://h/d?socketFactory=x", "table": "t"}, "url", "not supported"),
        ({"url": URL, "table": "a.b.c"}, "table", "is not a table name"),
        ({"url": URL, "table": 'x"; --'}, "table", "is not a table name"),
        ({"url": URL, "table": "t", "mode": "merge"}, "mode", "not one of insert, upsert"),
        ({"url": URL, "table": "t", "mode": "upsert"}, "key.columns", "upsert needs"),
        ({"url": URL, "table": "t", "partition.by": "a"}, "partition.by", "not an option"),
    ],
)
def test_a_jdbc_target_that_cannot_be_used_is_refused_by_key(
    options: dict[str, str], key: str, says: str
) -> None:
    with pytest.raises(OptionError) as refused:
        parse_options("jdbc", options)
    assert refused.value.key == key
    assert says in refused.value.reason
    assert "pw" not in refused.value.reason
