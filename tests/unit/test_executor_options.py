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


@pytest.mark.parametrize("fmt", FORMATS)
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
