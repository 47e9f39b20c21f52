"""Validating write requests and dropping rows an earlier try already wrote."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from headrace.core.arrowipc import ipc_stream
from headrace.executor.batches import (
    InvalidRequest,
    check_format,
    check_path,
    rows_after,
    validate_write,
)
from headrace.executor.writers.layout import OffsetRange, writer_key
from headrace.sdk.paths import Paths

TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"


def table(offsets: list[int], **extra: list[Any]) -> pa.Table:
    return pa.table({"kafka_offset": pa.array(offsets, pa.int64()), "value": offsets, **extra})


# The folder the executor may write under; resolving a path in it needs no folder on disk.
ROOTS = Paths((Path("/data"),))


def request(**overrides: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "connector": "sink",
        "task": 0,
        "topic": "orders",
        "topic_id": TOPIC_ID,
        "partition": 1,
        "first_offset": 10,
        "last_offset": 19,
        "format": "parquet",
        "path": "/data/out",
        "arrow_ipc": ipc_stream(table(list(range(10, 20)))),
        "roots": ROOTS,
    }
    return fields | overrides


def refusal(**overrides: Any) -> InvalidRequest:
    with pytest.raises(InvalidRequest) as refused:
        validate_write(**request(**overrides))
    return refused.value


def test_a_good_request_becomes_a_batch() -> None:
    batch = validate_write(**request())
    assert (batch.topic, batch.partition, batch.offsets) == ("orders", 1, OffsetRange(10, 19))
    assert (batch.path, batch.writer) == ("/data/out", writer_key("sink", TOPIC_ID))
    assert batch.table.column("kafka_offset").to_pylist() == list(range(10, 20))


def test_an_empty_batch_is_valid() -> None:
    assert validate_write(**request(arrow_ipc=ipc_stream(table([])))).table.num_rows == 0


@pytest.mark.parametrize(
    ("overrides", "field", "says"),
    [
        ({"format": "avro"}, "format", "'avro' is not supported"),
        ({"format": ""}, "format", "missing"),
        ({"path": ""}, "path", "missing"),
        ({"path": "relative/out"}, "path", "not absolute"),
        ({"path": "/etc"}, "path", "/etc is outside the allowed folders (/data"),
        ({"path": "/data/../etc/cron.d"}, "path", "/etc/cron.d is outside the allowed folders"),
        ({"topic_id": ""}, "topic_id", "missing is not a Kafka topic id"),
        ({"topic_id": "orders"}, "topic_id", "'orders' is not a Kafka topic id"),
        ({"connector": ""}, "connector", "missing"),
        ({"task": -1}, "task", "negative"),
        ({"partition": -1}, "partition", "negative"),
        ({"first_offset": -1}, "first_offset", "negative"),
        ({"last_offset": 9}, "last_offset", "below first_offset"),
        ({"topic": "a/b"}, "topic", "not a valid Kafka topic name"),
        ({"topic": ".."}, "topic", "not a valid Kafka topic name"),
        ({"topic": "_schemas"}, "topic", "readers ignore"),
        ({"arrow_ipc": b""}, "arrow_ipc", "empty"),
        ({"arrow_ipc": b"\x00garbage"}, "arrow_ipc", "not a readable Arrow IPC stream"),
    ],
)
def test_a_bad_field_is_named(overrides: dict[str, Any], field: str, says: str) -> None:
    error = refusal(**overrides)
    assert error.field == field
    assert says in str(error)
    assert str(error).startswith(f"{field}: ")


def test_rows_must_carry_an_int64_kafka_offset() -> None:
    no_column = pa.table({"value": [1, 2]})
    assert "no 'kafka_offset' column" in str(refusal(arrow_ipc=ipc_stream(no_column)))
    as_int32 = pa.table({"kafka_offset": pa.array([10, 11], pa.int32())})
    assert "int32, not int64" in str(refusal(arrow_ipc=ipc_stream(as_int32)))
    with_null = pa.table({"kafka_offset": pa.array([10, None], pa.int64())})
    assert "1 nulls" in str(refusal(arrow_ipc=ipc_stream(with_null)))


@pytest.mark.parametrize("offsets", [[9, 10, 11], [18, 19, 20]])
def test_rows_outside_the_offset_range_are_refused(offsets: list[int]) -> None:
    error = refusal(arrow_ipc=ipc_stream(table(offsets)))
    assert "outside [first_offset=10, last_offset=19]" in str(error)


def test_rows_of_another_topic_or_partition_are_refused() -> None:
    other_topic = table([10, 11], kafka_topic=["orders", "payments"])
    assert "'kafka_topic' holds 'payments'" in str(refusal(arrow_ipc=ipc_stream(other_topic)))
    other_partition = table([10], kafka_partition=pa.array([2], pa.int32()))
    assert "not 1" in str(refusal(arrow_ipc=ipc_stream(other_partition)))
    dictionary = table([10], kafka_topic=pa.array(["orders"]).dictionary_encode())
    assert validate_write(**request(arrow_ipc=ipc_stream(dictionary))).table.num_rows == 1


def test_duplicate_columns_are_refused() -> None:
    doubled = pa.Table.from_arrays(
        [pa.array([10], pa.int64()), pa.array([1]), pa.array([2])],
        names=["kafka_offset", "v", "v"],
    )
    assert "duplicate columns 'v'" in str(refusal(arrow_ipc=ipc_stream(doubled)))


def test_format_and_path_checks_stand_alone_for_counting() -> None:
    assert check_format("parquet") == "parquet"
    assert check_path("/data/x/../out", ROOTS) == "/data/out"
    with pytest.raises(InvalidRequest, match="path: missing"):
        check_path("", ROOTS)


def test_without_a_watermark_every_row_is_new() -> None:
    rows = table([3, 1, 2])
    assert rows_after(rows, None) == (rows, 0)


def test_rows_at_or_below_the_watermark_are_dropped_and_counted() -> None:
    kept, skipped = rows_after(table([5, 6, 7, 8, 8, 9]), 7)
    assert kept.column("kafka_offset").to_pylist() == [8, 8, 9]
    assert skipped == 3


@given(st.lists(st.integers(0, 1000), max_size=50), st.integers(-1, 1001))
def test_filtering_splits_rows_exactly_at_the_watermark(offsets: list[int], mark: int) -> None:
    kept, skipped = rows_after(table(offsets), mark)
    assert kept.column("kafka_offset").to_pylist() == [o for o in offsets if o > mark]
    assert skipped == sum(1 for o in offsets if o <= mark)
