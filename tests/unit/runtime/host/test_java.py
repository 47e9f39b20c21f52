"""What crosses between a Java plugin's Python process and its JVM, translated without either
(``headrace.runtime.host.java``)."""

from __future__ import annotations

import itertools
import operator

from aiokafka import ConsumerRecord
from aiokafka.record.default_records import DefaultRecordBatchBuilder
from hypothesis import given
from hypothesis import strategies as st

from headrace.core.model.configinfo import ConfigInfo, ConfigInfos, KeyInfo, ValueInfo
from headrace.core.storage.fetch import Batches, Consumed, Fetched
from headrace.runtime.host.java import (
    acknowledgement,
    config_def,
    consumed_batches,
    consumed_record,
    failure_error,
    put_request,
    source_batch,
    source_record,
)
from headrace.sdk.config import Type
from headrace.sdk.records import RecordMetadata
from headrace.v1 import jvm_pb2 as pb


def test_a_produced_record_keeps_its_bytes_offsets_and_headers() -> None:
    produced = pb.ProducedRecord(
        topic="lines",
        partition=2,
        value=b"hello",
        headers=[pb.Header(key="h", value=b"v"), pb.Header(key="empty")],
        timestamp=17,
        source_partition='{"filename": "in.txt"}',
        source_offset='{"position": 42}',
        polled=5,
    )
    polled = source_record(produced)
    record = polled.record
    assert (record.topic, record.partition, record.key, record.value) == (
        "lines",
        2,
        None,
        b"hello",
    )
    assert record.headers == (("h", b"v"), ("empty", None))
    assert record.timestamp == 17
    assert record.source_partition == {"filename": "in.txt"}
    assert record.source_offset == {"position": 42}
    assert (polled.polled, polled.kept, polled.failure) == (5, True, None)


def test_a_record_without_partition_offset_or_timestamp_leaves_them_to_the_loop() -> None:
    produced = pb.ProducedRecord(topic="t", key=b"", source_partition="{}", polled=0)
    record = source_record(produced).record
    assert record.key == b""  # an empty key is a key, not none
    assert (record.partition, record.timestamp, record.value) == (None, None, None)
    assert record.source_offset == {}


def test_the_records_of_one_poll_share_each_source_partition_they_name() -> None:
    partitions: dict[str, object] = {}
    one, two, other = (
        source_record(pb.ProducedRecord(topic="t", source_partition=p), partitions).record
        for p in ('{"file": "a"}', '{"file": "a"}', '{"file": "b"}')
    )
    assert one.source_partition is two.source_partition  # read once: the loop's key is made once
    assert (one.source_partition, other.source_partition) == ({"file": "a"}, {"file": "b"})


def test_a_poll_as_columns_is_a_batch_ending_at_its_last_offset() -> None:
    batch = source_batch(
        pb.ProducedBatch(
            topic="lines",
            source_partition='{"filename": "in.txt"}',
            source_offset='{"position": 20}',
            values=[b"one", b"", b"three"],
            timestamps=[5, 6, 7],
        )
    )
    records = batch.records()
    assert [(r.value, r.key, r.timestamp, r.partition) for r in records] == [
        (b"one", None, 5, None),
        (b"", None, 6, None),  # an empty value is a value
        (b"three", None, 7, None),
    ]
    assert {r.topic for r in records} == {"lines"}
    assert batch.source_partition == {"filename": "in.txt"}
    assert batch.source_offset == {"position": 20}


def test_a_batch_keeps_its_keys_and_partition_and_leaves_no_timestamp_to_the_loop() -> None:
    batch = source_batch(
        pb.ProducedBatch(
            topic="t", partition=3, source_partition="{}", values=[b"v1", b"v2"], keys=[b"", b"k"]
        )
    )
    assert [(r.key, r.value, r.partition, r.timestamp) for r in batch.records()] == [
        (b"", b"v1", 3, None),
        (b"k", b"v2", 3, None),
    ]
    assert batch.source_offset == {}


def test_a_dropped_record_is_not_kept_and_carries_no_error() -> None:
    polled = source_record(pb.ProducedRecord(topic="t", source_partition="{}", dropped=True))
    assert not polled.kept
    assert polled.failure is None


def test_a_failed_stage_names_the_stage_topic_and_java_class() -> None:
    failure = pb.RecordFailure(
        stage="TRANSFORMATION",
        executing="org.apache.kafka.connect.transforms.Cast$Value",
        error_class="org.apache.kafka.connect.errors.DataException",
        message="Cast failed",
        trace="at Cast.apply",
        topic="lines",
    )
    polled = source_record(pb.ProducedRecord(topic="t", source_partition="{}", failure=failure))
    assert not polled.kept
    error = polled.failure
    assert error is not None
    assert error.stage == "transform"
    assert error.executing == "org.apache.kafka.connect.transforms.Cast$Value"
    assert "topic lines" in str(error) and "DataException: Cast failed" in str(error)
    assert "at Cast.apply" in str(error.cause)


def test_converter_stages_keep_their_names() -> None:
    error = failure_error(pb.RecordFailure(stage="VALUE_CONVERTER", error_class="E", message="m"))
    assert error.stage == "value converter"
    assert "its way" in str(error)  # no topic named


def test_an_acknowledgement_says_where_a_record_landed_or_that_it_did_not() -> None:
    landed = acknowledgement(3, RecordMetadata("t", 1, 99, 1234))
    assert (landed.polled, landed.written, landed.topic, landed.partition) == (3, True, "t", 1)
    assert (landed.offset, landed.timestamp) == (99, 1234)
    assert acknowledgement(3, RecordMetadata("t", 1, 99)).timestamp == -1
    dropped = acknowledgement(4, None)
    assert (dropped.polled, dropped.written, dropped.topic) == (4, False, "")


optional_bytes = st.none() | st.binary(max_size=20)


@given(
    key=optional_bytes,
    value=optional_bytes,
    timestamp=st.just(-1) | st.integers(min_value=0, max_value=2**62),
    timestamp_type=st.sampled_from([0, 1]),
    headers=st.lists(st.tuples(st.text(max_size=5), optional_bytes), max_size=4),
)
def test_a_consumed_record_crosses_as_the_bytes_it_was(
    key: bytes | None,
    value: bytes | None,
    timestamp: int,
    timestamp_type: int,
    headers: list,
) -> None:
    message = ConsumerRecord(
        "t", 3, 7, timestamp, timestamp_type, key, value, None, -1, -1, tuple(headers)
    )
    consumed = pb.ConsumedRecord.FromString(consumed_record(message).SerializeToString())
    assert (consumed.topic, consumed.partition, consumed.offset) == ("t", 3, 7)
    assert (consumed.key if consumed.HasField("key") else None) == key
    assert (consumed.value if consumed.HasField("value") else None) == value
    got = [(h.key, h.value if h.HasField("value") else None) for h in consumed.headers]
    assert got == headers
    if timestamp < 0:
        assert (consumed.timestamp, consumed.timestamp_type) == (-1, "NoTimestampType")
    else:  # as the broker stamped it: Connect's SinkRecord carries the type too
        kind = "LogAppendTime" if timestamp_type == 1 else "CreateTime"
        assert (consumed.timestamp, consumed.timestamp_type) == (timestamp, kind)


def _as_read(batch: pb.ConsumedBatch) -> list[tuple]:
    """A batch's records as the JVM reads them: no lengths, all nulls; a length of -1, one
    null; a timestamp below 0 has no type."""

    def cells(data: bytes, lengths: list[int]) -> list[bytes | None]:
        if not lengths:
            return [None] * len(batch.offsets)
        out: list[bytes | None] = []
        start = 0
        for length in lengths:
            out.append(None if length < 0 else data[start : start + length])
            start += max(length, 0)
        assert start == len(data)  # every byte is some record's
        return out

    keys = cells(batch.keys, list(batch.key_lengths))
    values = cells(batch.values, list(batch.value_lengths))
    return [
        (
            batch.topic,
            batch.partition,
            offset,
            keys[i],
            values[i],
            (-1, "NoTimestampType") if stamp < 0 else (stamp, batch.timestamp_type),
        )
        for i, (offset, stamp) in enumerate(zip(batch.offsets, batch.timestamps, strict=True))
    ]


consumed_messages = st.lists(
    st.builds(
        lambda tp, offset, stamp, kind, key, value: ConsumerRecord(
            tp[0], tp[1], offset, stamp, kind, key, value, None, -1, -1, ()
        ),
        st.sampled_from([("a", 0), ("a", 1), ("b", 0)]),
        st.integers(min_value=0, max_value=2**40),
        st.just(-1) | st.integers(min_value=0, max_value=2**42),
        st.sampled_from([0, 1]),
        optional_bytes,
        optional_bytes,
    ),
    max_size=12,
)


@given(messages=consumed_messages)
def test_consumed_messages_cross_as_columns_in_their_order(messages: list) -> None:
    batches = [
        pb.ConsumedBatch.FromString(b.SerializeToString()) for b in consumed_batches(messages)
    ]
    read = [one for batch in batches for one in _as_read(batch)]
    kinds = {0: "CreateTime", 1: "LogAppendTime"}
    assert read == [
        (
            m.topic,
            m.partition,
            m.offset,
            m.key,
            m.value,
            (-1, "NoTimestampType") if m.timestamp < 0 else (m.timestamp, kinds[m.timestamp_type]),
        )
        for m in messages
    ]
    # one batch per run of one topic-partition and timestamp type
    runs = [(m.topic, m.partition, m.timestamp_type) for m in messages]
    assert len(batches) == sum(1 for i, r in enumerate(runs) if i == 0 or runs[i - 1] != r)


@given(messages=consumed_messages)
def test_fetches_handed_over_as_columns_cross_as_the_same_batches(messages: list) -> None:
    consumed = Consumed()
    for (topic, partition), run in itertools.groupby(messages, lambda m: (m.topic, m.partition)):
        consumed.pieces.append(Fetched.of(topic, partition, run))
    fields = operator.attrgetter(
        "topic", "partition", "offset", "timestamp", "timestamp_type", "key", "value", "headers"
    )
    assert list(map(fields, consumed)) == list(map(fields, messages))
    indexed = [consumed[i] for i in range(-len(messages), len(messages))]
    assert list(map(fields, indexed)) == list(map(fields, messages * 2))
    assert consumed_batches(consumed) == consumed_batches(messages)


def test_the_java_config_def_gives_each_key_its_type() -> None:
    def info(name: str, kind: str) -> ConfigInfo:
        return ConfigInfo(KeyInfo(name=name, type=kind), ValueInfo(name=name))

    keys = ("file", "STRING"), ("batch.size", "INT"), ("secret", "PASSWORD"), ("n", "SHORT")
    definition = config_def(ConfigInfos("C", tuple(info(*k) for k in keys)))
    assert definition.keys["file"].type is Type.STRING
    assert definition.keys["batch.size"].type is Type.INT
    assert definition.keys["secret"].type is Type.PASSWORD
    assert definition.keys["n"].type is Type.STRING  # a Java type the SDK lacks reads as text


def test_record_sets_cross_last_and_failures_count_them_so() -> None:
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=0,
        is_transactional=0,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=1 << 20,
    )
    for i in range(3):
        builder.append(i, timestamp=1_700_000_000_000, key=None, value=b"set %d" % i, headers=[])
    data = bytes(builder.build())
    whole = Batches("b", 0, data, 3, 3)
    first = Fetched.of("a", 0, [ConsumerRecord("a", 0, 7, 1, 0, None, b"a7", None, -1, 2, ())])
    last = Fetched.of("c", 1, [ConsumerRecord("c", 1, 9, 1, 0, None, b"c9", None, -1, 2, ())])

    request, order = put_request("conn", 2, Consumed([first, whole, last]))

    assert (request.connector, request.task, list(request.records)) == ("conn", 2, [])
    assert [(b.topic, list(b.offsets)) for b in request.batches] == [("a", [7]), ("c", [9])]
    assert [(s.topic, s.partition, s.batches) for s in request.record_sets] == [("b", 0, data)]
    # The JVM counts the columns first, then the record sets' records.
    assert [(m.topic, m.offset, m.value) for m in order] == [
        ("a", 7, b"a7"),
        ("c", 9, b"c9"),
        ("b", 0, b"set 0"),
        ("b", 1, b"set 1"),
        ("b", 2, b"set 2"),
    ]
