"""The pure parts of the sink loop: subscription, flush policy, records and their errors."""

from __future__ import annotations

import pytest
from aiokafka import ConsumerRecord

from headrace.runtime.converters import JsonConverter, StringConverter
from headrace.runtime.errors import ErrorPolicy, RecordError, dlq_headers
from headrace.runtime.sinkrecords import FlushPolicy, subscription, to_sink_batch, to_sink_record
from headrace.sdk import ConfigException, SinkRecord, TopicPartition


def message(value: bytes | None, key: bytes | None = b'"k"') -> ConsumerRecord[bytes, bytes]:
    return ConsumerRecord(
        topic="orders",
        partition=3,
        offset=42,
        timestamp=1700000000000,
        timestamp_type=0,
        key=key,
        value=value,
        checksum=None,
        serialized_key_size=0,
        serialized_value_size=0,
        headers=[("h", b"v")],
    )


def test_a_message_becomes_a_sink_record() -> None:
    record = to_sink_record(
        message(b'{"id": 1}'),
        JsonConverter({"schemas.enable": "false"}),
        JsonConverter({"schemas.enable": "false"}),
    )
    assert record == SinkRecord(
        topic="orders",
        partition=3,
        offset=42,
        key="k",
        value={"id": 1},
        timestamp=1700000000000,
        headers=(("h", b"v"),),
    )


@pytest.mark.parametrize(
    ("key", "value", "stage"),
    [
        (b'"k"', b"{broken", "value converter"),
        (b"\xff", b"{}", "key converter"),
    ],
)
def test_malformed_records_name_their_topic_partition_and_offset(
    key: bytes, value: bytes, stage: str
) -> None:
    with pytest.raises(RecordError) as info:
        to_sink_record(
            message(value, key), StringConverter(), JsonConverter({"schemas.enable": "false"})
        )
    assert str(info.value).startswith(
        f"{stage} failed for the record at topic orders partition 3 offset 42: "
    )
    headers = dict(dlq_headers(info.value, "orders", 3, 42, "c", 0))
    assert headers["__connect.errors.offset"] == b"42"
    assert headers["__connect.errors.stage"] == stage.upper().replace(" ", "_").encode()


def test_subscription_needs_exactly_one_of_topics_and_regex() -> None:
    assert subscription({"topics": "a, b,"}) == (["a", "b"], None)
    assert subscription({"topics.regex": "orders-.*"}) == ([], "orders-.*")
    for bad in ({}, {"topics": "a", "topics.regex": "b"}, {"topics.regex": "("}):
        with pytest.raises(ConfigException):
            subscription(bad)


def test_flush_after_every_non_empty_batch_by_default() -> None:
    policy = FlushPolicy.from_config({})
    assert policy.due(pending=1, since_flush_ms=0)
    assert not policy.due(pending=0, since_flush_ms=10_000)
    assert policy.due(pending=0, since_flush_ms=0, requested=True)


def test_flush_by_count_or_interval_when_configured() -> None:
    policy = FlushPolicy.from_config(
        {"flush.max.records": "100", "offset.flush.interval.ms": "500"}
    )
    assert not policy.due(pending=99, since_flush_ms=499)
    assert policy.due(pending=100, since_flush_ms=0)
    assert policy.due(pending=1, since_flush_ms=500)
    with pytest.raises(ConfigException):
        FlushPolicy.from_config({"flush.max.records": "-1"})


def test_error_policy_reads_connects_keys() -> None:
    assert ErrorPolicy.from_config({}) == ErrorPolicy()
    policy = ErrorPolicy.from_config(
        {
            "errors.tolerance": "all",
            "errors.deadletterqueue.topic.name": "dlq",
            "errors.deadletterqueue.context.headers.enable": "true",
        }
    )
    assert policy.tolerate_all and policy.dlq_topic == "dlq" and policy.dlq_context_headers
    with pytest.raises(ConfigException, match=r"errors\.tolerance"):
        ErrorPolicy.from_config({"errors.tolerance": "some"})


def test_a_fetch_becomes_a_batch_of_the_records_it_would_give_one_by_one() -> None:
    plain = JsonConverter({"schemas.enable": "false"})
    fetch = [message(b'{"id": 1}'), message(None, key=None), message(b"[2]", key=b'"j"')]
    batch = to_sink_batch(TopicPartition("orders", 3), fetch, plain, plain)
    assert batch is not None and len(batch) == 3
    expected = [to_sink_record(m, plain, plain) for m in fetch]
    assert [(r.key, r.value, r.headers, r.timestamp) for r in batch.records()] == [
        (r.key, r.value, r.headers, r.timestamp) for r in expected
    ]


def test_a_fetch_a_converter_cannot_take_whole_goes_one_by_one() -> None:
    text, tp = StringConverter(), TopicPartition("orders", 3)
    assert to_sink_batch(tp, [message(b"ok"), message(b"\xff")], text, text) is None
    enveloped = JsonConverter()  # schemas.enable=true: no column form
    assert to_sink_batch(tp, [message(b"1")], text, enveloped) is None
