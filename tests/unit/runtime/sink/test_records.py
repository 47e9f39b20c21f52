"""The pure parts of the sink loop: subscription, flush policy, records and their errors."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from aiokafka import ConsumerRecord
from aiokafka import TopicPartition as KafkaTopicPartition

from headrace.components.converters import (
    JsonConverter,
    JsonHeaderConverter,
    StringConverter,
    StringHeaderConverter,
    header_converter_for,
)
from headrace.components.errorpolicy import ErrorPolicy, RecordError, dlq_headers
from headrace.core.settings import Settings
from headrace.core.storage.fetch import Fetched
from headrace.runtime import kafka
from headrace.runtime.placement import Placement
from headrace.runtime.sink import loop as sink
from headrace.runtime.sink.prepare import Prepared
from headrace.runtime.sink.records import (
    FlushPolicy,
    as_consumed,
    subscription,
    to_sink_batch,
    to_sink_record,
)
from headrace.sdk import ConfigException, SinkRecord, SinkTask, TopicPartition

HEADERS = [("h", b"v")]


def message(
    value: bytes | None,
    key: bytes | None = b'"k"',
    headers: Sequence[tuple[str, bytes | None]] = HEADERS,
    offset: int = 42,
) -> ConsumerRecord[bytes, bytes]:
    return ConsumerRecord(
        topic="orders",
        partition=3,
        offset=offset,
        timestamp=1700000000000,
        timestamp_type=0,
        key=key,
        value=value,
        checksum=None,
        serialized_key_size=0,
        serialized_value_size=0,
        headers=list(headers),
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


TYPED_HEADERS = [("n", b"42"), ("s", b'"x"'), ("nil", None), ("n", b"[1]")]


@pytest.mark.parametrize(
    ("config", "given"),
    [
        ({}, tuple(TYPED_HEADERS)),  # SimpleHeaderConverter: the bytes as they came
        (
            {"header.converter": "string"},
            (("n", "42"), ("s", '"x"'), ("nil", None), ("n", "[1]")),
        ),
        ({"header.converter": "json"}, (("n", 42), ("s", "x"), ("nil", None), ("n", [1]))),
    ],
)
def test_the_header_converter_decides_what_the_sink_task_is_given(
    config: dict[str, str], given: tuple[tuple[str, Any], ...]
) -> None:
    plain, headers = JsonConverter({"schemas.enable": "false"}), header_converter_for(config)
    fetch = [message(b"1", headers=TYPED_HEADERS), message(b"2", headers=[], offset=43)]
    assert to_sink_record(fetch[0], plain, plain, headers).headers == given
    batch = to_sink_batch(TopicPartition("orders", 3), fetch, plain, plain, headers)
    assert batch is not None and batch.headers == [given, ()]


def test_a_header_the_converter_refuses_is_a_record_error_of_its_stage() -> None:
    plain = JsonConverter({"schemas.enable": "false"})
    bad = message(b"1", headers=[("ok", b"1"), ("trace", b"not json")])
    with pytest.raises(RecordError) as info:
        to_sink_record(bad, plain, plain, JsonHeaderConverter())
    assert str(info.value).startswith(
        "header converter failed for the record at topic orders partition 3 offset 42: "
        "header 'trace': not valid JSON"
    )
    headers = dict(dlq_headers(info.value, "orders", 3, 42, "c", 0))
    assert headers["__connect.errors.stage"] == b"HEADER_CONVERTER"
    assert headers["__connect.errors.class.name"].endswith(b"JsonHeaderConverter")
    # A fetch holding it goes record by record, so that the bad one is named.
    good = message(b"2", headers=[("ok", b"1")], offset=43)
    tp = TopicPartition("orders", 3)
    assert to_sink_batch(tp, [good, bad], plain, plain, JsonHeaderConverter()) is None


def test_a_record_reported_after_its_flush_keeps_its_headers_through_the_converter() -> None:
    plain = JsonConverter({"schemas.enable": "false"})
    record = SinkRecord("orders", 3, 42, "k", 1, headers=(("s", "é"), ("nil", None)))
    rebuilt = as_consumed(record, plain, plain, StringHeaderConverter({"encoding": "latin-1"}))
    assert rebuilt.headers == [("s", b"\xe9"), ("nil", None)]


class Consumer:
    """Stands in for AIOKafkaConsumer: assigned partition 3 of orders, fetches nothing."""

    def __init__(self, **settings: Any) -> None: ...
    async def start(self) -> None: ...
    async def stop(self) -> None: ...
    def subscribe(self, **subscription: Any) -> None: ...

    def assignment(self) -> set[KafkaTopicPartition]:
        return {KafkaTopicPartition("orders", 3)}


class Recording(SinkTask):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[SinkRecord] = []

    async def start(self, config: Mapping[str, str]) -> None: ...

    async def put(self, records: list[SinkRecord]) -> None:
        self.records += records


async def started(monkeypatch: pytest.MonkeyPatch, tolerance: str) -> sink.SinkRunner:
    monkeypatch.setattr(kafka, "AIOKafkaConsumer", Consumer)
    config = {"topics": "orders", "header.converter": "string", "errors.tolerance": tolerance}
    settings = Settings(bootstrap_servers="unused:1")
    runner = sink.SinkRunner(Placement("c", 0, config, {}, settings), Recording())
    await runner.start()
    return runner


def prepared(runner: sink.SinkRunner, fetched: dict[KafkaTopicPartition, Fetched]) -> Prepared:
    """The fetch as the runner's loop prepares it for its task, before any rebalance."""
    assert runner._preparer is not None
    return runner._preparer.prepare(fetched, runner.assignment(), 0, 0)


async def test_a_bad_header_is_skipped_under_errors_tolerance_all(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    runner = await started(monkeypatch, "all")
    fetch = [message(b"1", headers=[("h", b"\xff")]), message(b"2", offset=43)]
    fetched = {KafkaTopicPartition("orders", 3): Fetched.of("orders", 3, fetch)}
    await runner._hand_over(prepared(runner, fetched))
    assert runner.skipped == 1
    assert isinstance(runner.task, Recording)
    assert [(r.offset, r.headers) for r in runner.task.records] == [(43, (("h", "v"),))]
    await runner.close()


async def test_a_bad_header_fails_the_task_under_errors_tolerance_none(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    runner = await started(monkeypatch, "none")
    fetch = [message(b"1", headers=[("h", b"\xff")])]
    with pytest.raises(RecordError, match=r"^header converter failed .* header 'h' is not utf-8"):
        prepared(runner, {KafkaTopicPartition("orders", 3): Fetched.of("orders", 3, fetch)})
    await runner.close()


class Counting(Recording):
    """Counts every call a rebalance may make into the task."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []

    async def pre_commit(self, offsets: dict[TopicPartition, int]) -> dict[TopicPartition, int]:
        self.calls.append("pre_commit")
        return offsets

    async def open(self, partitions: set[TopicPartition]) -> None:
        self.calls.append("open")

    async def close(self, partitions: set[TopicPartition]) -> None:
        self.calls.append("close")


async def test_a_rebalance_calls_nothing_of_a_task_being_stopped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Found by the nemesis (seed 413): a rebalance's commit ran in a task whose stop was
    waiting for a write, and wrote a later range of the partition before the earlier one."""
    monkeypatch.setattr(kafka, "AIOKafkaConsumer", Consumer)
    config = {"topics": "orders"}
    settings = Settings(bootstrap_servers="unused:1")
    task = Counting()
    runner = sink.SinkRunner(Placement("c", 0, config, {}, settings), task)
    await runner.start()
    orders = TopicPartition("orders", 3)
    await runner.on_revoked({orders})
    assert task.calls == ["pre_commit", "close"]
    runner.request_stop()
    await runner.on_revoked({orders})
    await runner.on_assigned({orders})
    assert task.calls == ["pre_commit", "close"]
    await runner.close()
