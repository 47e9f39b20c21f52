"""The table sinks' record -> Arrow table building (no executor involved)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from headrace.sdk import DataError, Schema, SinkRecord, Struct, TopicPartition, tablesink
from headrace.sdk.data import INT64_SCHEMA, STRING_SCHEMA


def record(offset: int, value: object, partition: int = 0) -> SinkRecord:
    return SinkRecord("orders", partition, offset, str(offset), value, timestamp=1000 + offset)


def test_value_fields_plus_kafka_columns() -> None:
    table = tablesink.build_table(
        [
            record(5, {"id": 5, "name": "record-5", "amount": 1.25}),
            record(6, {"id": 6, "name": "record-6", "amount": 1.5, "extra": True}),
        ]
    )
    assert table.schema == pa.schema(
        [
            ("id", pa.int64()),
            ("name", pa.string()),
            ("amount", pa.float64()),
            ("extra", pa.bool_()),
            ("kafka_topic", pa.string()),
            ("kafka_partition", pa.int32()),
            ("kafka_offset", pa.int64()),
            ("kafka_timestamp", pa.int64()),
        ]
    )
    assert table.to_pylist()[0] == {
        "id": 5,
        "name": "record-5",
        "amount": 1.25,
        "extra": None,
        "kafka_topic": "orders",
        "kafka_partition": 0,
        "kafka_offset": 5,
        "kafka_timestamp": 1005,
    }


def test_structs_scalars_and_tombstones_become_rows() -> None:
    schema = Schema.struct([("id", INT64_SCHEMA), ("name", STRING_SCHEMA)])
    rows = tablesink.build_table(
        [
            record(0, Struct(schema, {"id": 1, "name": "a"})),
            record(1, None),
        ]
    ).to_pylist()
    assert [(r["id"], r["name"], r["kafka_offset"]) for r in rows] == [(1, "a", 0), (None, None, 1)]
    scalars = tablesink.build_table([record(0, "text")])
    assert scalars.column("value").to_pylist() == ["text"]


def test_kafka_columns_win_over_value_fields_of_the_same_name() -> None:
    table = tablesink.build_table([record(7, {"kafka_offset": "spoofed", "x": 1})])
    assert table.column("kafka_offset").to_pylist() == [7]
    assert table.column_names.count("kafka_offset") == 1


def test_one_table_per_topic_partition() -> None:
    tables = tablesink.build_tables(
        [record(0, {"a": 1}, 0), record(0, {"a": 2}, 1), record(1, {"a": 3}, 0)]
    )
    assert set(tables) == {TopicPartition("orders", 0), TopicPartition("orders", 1)}
    assert tables[TopicPartition("orders", 0)].column("kafka_offset").to_pylist() == [0, 1]


def test_values_that_do_not_fit_one_table_are_a_clear_error() -> None:
    with pytest.raises(DataError, match="orders-0 from offset 0 to 1"):
        tablesink.build_table([record(0, {"a": 1}), record(1, {"a": "x"})])
