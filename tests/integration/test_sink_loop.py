"""The sink loop against the real broker: a task with the batch API (``put_batch``) receives the
same records, the same number of times, as a task with ``put`` alone, and a message its
converter refuses is found, named and handled record by record. What a task asks through its
context is honoured: a record it reports as errant is skipped into the dead letter queue or fails
it, ``offset`` rewinds or skips ahead, ``pause`` holds one partition back while others flow.
``topics.regex`` takes what Connect's takes: topics whose whole name matches, created later too."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pyarrow as pa
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka import TopicPartition as KafkaTopicPartition
from aiokafka.errors import KafkaError
from structlog.testing import capture_logs

from headrace.core.settings import Settings
from headrace.core.storage.topics import ensure_topic
from headrace.runtime.lifecycle import format_trace
from headrace.runtime.placement import Placement
from headrace.runtime.sink.loop import SUBSCRIPTION_REFRESH_MS, SinkRunner
from headrace.sdk import (
    ConnectError,
    RetriableError,
    SinkBatch,
    SinkRecord,
    SinkTask,
    TopicPartition,
)
from tests.support import consume, describe_topic, eventually

pytestmark = pytest.mark.kafka

STRING = {"key.converter": "string", "value.converter": "string"}


class RecordSink(SinkTask):
    """Keeps every record ``put`` gives it, as (partition, offset, key, value, headers)."""

    def __init__(self) -> None:
        self.seen: list[tuple[Any, ...]] = []
        self.batches = 0

    async def start(self, config: Mapping[str, str]) -> None:
        pass

    async def put(self, records: list[SinkRecord]) -> None:
        self.seen += [
            (r.partition, r.offset, r.key, r.value, r.headers, r.timestamp) for r in records
        ]


class ColumnSink(RecordSink):
    """The same, through the batch API."""

    async def put_batch(self, batch: SinkBatch) -> None:
        self.batches += 1
        assert isinstance(batch.offsets, pa.Array) and len(batch.values) == len(batch)
        await self.put(batch.records())


async def fill(kafka: str, topic: str, messages: Sequence[tuple[int, Any, Any, Any]]) -> None:
    """Produces the messages, each partition's in order, and waits until all are stored."""
    producer = AIOKafkaProducer(bootstrap_servers=kafka)
    await producer.start()
    try:
        sent = [
            await producer.send(topic, value=value, key=key, partition=partition, headers=headers)
            for partition, key, value, headers in messages
        ]
        await asyncio.gather(*sent)
    finally:
        await producer.stop()


async def run_until(runner: SinkRunner, done: Callable[[], bool]) -> None:
    loop = await run_to(runner, done)
    assert loop.exception() is None


async def run_to(runner: SinkRunner, done: Callable[[], bool]) -> asyncio.Task[None]:
    """Runs the loop until ``done`` or its end, then stops it as a unit does; the loop."""
    await runner.start()
    loop = asyncio.create_task(runner.run())
    try:
        await eventually("the records are delivered", lambda: done() or loop.done())
    finally:
        runner.request_stop()
        await asyncio.wait({loop}, timeout=30)
        await runner.finish()
        await runner.task.stop()
        await runner.close()
    return loop


async def committed(kafka: str, group: str, topic: str, partition: int) -> int | None:
    """The offset ``group`` committed for one partition, None if none."""
    consumer = AIOKafkaConsumer(bootstrap_servers=kafka, group_id=group, enable_auto_commit=False)
    await consumer.start()
    try:
        found: int | None = await consumer.committed(KafkaTopicPartition(topic, partition))
        return found
    finally:
        await consumer.stop()


def runner_for(
    kafka: str, cluster: str, name: str, topic: str, task: SinkTask, **config: str
) -> SinkRunner:
    settings = Settings(bootstrap_servers=kafka, cluster=cluster)
    connector_config = {"name": name, "topics": topic, **STRING, **config}
    return SinkRunner(Placement(name, 0, connector_config, {}, settings), task)


MESSAGES = [
    (0, b"k1", b"plain", None),
    (1, None, "grüße ✓".encode(), [("h", b"\x00v")]),
    (0, b"k2", None, None),  # a tombstone
    (1, b"k1", b"", None),
    (0, None, b"x" * 5000, [("a", b"1"), ("a", b"2")]),
]


async def test_the_batch_api_gets_the_records_put_gets(kafka: str, cluster: str) -> None:
    topic = f"{cluster}-in"
    await ensure_topic(kafka, topic, 2)
    await fill(kafka, topic, MESSAGES)
    by_batch, by_record = ColumnSink(), RecordSink()
    for name, task in (("by-batch", by_batch), ("by-record", by_record)):
        runner = runner_for(kafka, cluster, name, topic, task)
        await run_until(runner, lambda t=task: len(t.seen) >= len(MESSAGES))  # type: ignore[misc]

    assert by_batch.batches > 0
    assert sorted(by_batch.seen, key=repr) == sorted(by_record.seen, key=repr)
    assert len(by_batch.seen) == len(MESSAGES)  # each record once
    values = {value for _, _, _, value, _, _ in by_batch.seen}
    assert values == {"plain", "grüße ✓", None, "", "x" * 5000}


async def test_a_message_that_is_not_text_is_named_and_skipped_alone(
    kafka: str, cluster: str
) -> None:
    topic = f"{cluster}-in"
    await ensure_topic(kafka, topic, 1)
    await fill(
        kafka, topic, [(0, None, b"a", None), (0, None, b"\xff\xfe", None), (0, None, b"c", None)]
    )
    task = ColumnSink()
    runner = runner_for(kafka, cluster, "snk", topic, task, **{"errors.tolerance": "all"})
    await run_until(runner, lambda: len(task.seen) >= 2)

    assert [(offset, value) for _, offset, _, value, _, _ in task.seen] == [(0, "a"), (2, "c")]
    assert runner.skipped == 1 and task.batches == 0  # that fetch went record by record


async def test_plain_json_reaches_the_batch_api_as_put_sees_it(kafka: str, cluster: str) -> None:
    topic = f"{cluster}-json"
    await ensure_topic(kafka, topic, 1)
    documents = [b'{"id": 1, "tags": ["a"]}', b"null", b"2.5", b'"text"', b"[1, {}]"]
    await fill(kafka, topic, [(0, b'"k"', d, None) for d in documents] + [(0, b"1", None, None)])
    by_batch, by_record = ColumnSink(), RecordSink()
    for name, task in (("by-batch", by_batch), ("by-record", by_record)):
        runner = runner_for(kafka, cluster, name, topic, task, **{"value.converter": "json"})
        runner.connector_config.update({"value.converter.schemas.enable": "false"})
        runner.connector_config.pop("key.converter")  # the default: plain JSON too
        await run_until(runner, lambda t=task: len(t.seen) >= 6)  # type: ignore[misc]

    assert by_batch.batches > 0 and by_batch.seen == by_record.seen
    assert [value for _, _, _, value, _, _ in by_batch.seen] == [
        {"id": 1, "tags": ["a"]},
        None,
        2.5,
        "text",
        [1, {}],
        None,
    ]


class SlowFlushSink(RecordSink):
    """Takes a while to flush, and notes whether put and flush ever ran at once."""

    def __init__(self) -> None:
        super().__init__()
        self.busy = ""
        self.overlaps = 0
        self.flushes = 0

    async def _enter(self, what: str) -> None:
        if self.busy:
            self.overlaps += 1
        self.busy = what
        await asyncio.sleep(0.05 if what == "flush" else 0)
        self.busy = ""

    async def put(self, records: list[SinkRecord]) -> None:
        await self._enter("put")
        await super().put(records)

    async def flush(self, offsets: dict[TopicPartition, int]) -> None:
        await self._enter("flush")
        self.flushes += 1


async def test_a_slow_flush_never_overlaps_put_and_every_record_arrives_once(
    kafka: str, cluster: str
) -> None:
    topic = f"{cluster}-slow"
    await ensure_topic(kafka, topic, 1)
    await fill(kafka, topic, [(0, None, str(i).encode(), None) for i in range(400)])
    task = SlowFlushSink()
    runner = runner_for(
        kafka, cluster, "snk", topic, task, **{"consumer.override.max.poll.records": "7"}
    )
    await run_until(runner, lambda: len(task.seen) >= 400)

    assert task.overlaps == 0 and task.flushes > 1
    assert [value for _, _, _, value, _, _ in task.seen] == [str(i) for i in range(400)]


async def test_no_record_is_lost_when_a_second_task_joins_mid_stream(
    kafka: str, cluster: str
) -> None:
    topic = f"{cluster}-shared"
    await ensure_topic(kafka, topic, 2)
    await fill(kafka, topic, [(i % 2, None, str(i).encode(), None) for i in range(2000)])
    first, second = SlowFlushSink(), SlowFlushSink()
    small = {"consumer.override.max.poll.records": "50"}
    runners = [runner_for(kafka, cluster, "snk", topic, t, **small) for t in (first, second)]
    loops = []
    try:
        await runners[0].start()
        loops.append(asyncio.create_task(runners[0].run()))
        await eventually("the first task is under way", lambda: len(first.seen) >= 200)
        await runners[1].start()  # same connector, same group: a rebalance mid-stream
        loops.append(asyncio.create_task(runners[1].run()))

        def every_value() -> bool:
            seen = {v for t in (first, second) for _, _, _, v, _, _ in t.seen}
            return seen == {str(i) for i in range(2000)}

        await eventually("every record reached a task", every_value)
    finally:
        for runner in runners:
            runner.request_stop()
        await asyncio.wait(loops, timeout=30)
        for runner in runners:
            await runner.finish()
            await runner.task.stop()
            await runner.close()
    assert all(loop.exception() is None for loop in loops)
    assert first.overlaps == second.overlaps == 0


@pytest.mark.parametrize("log_enable", [False, True])
async def test_a_tolerated_error_is_logged_only_when_errors_log_enable_says_so(
    kafka: str, cluster: str, log_enable: bool
) -> None:
    topic = f"{cluster}-in"
    await ensure_topic(kafka, topic, 1)
    await fill(
        kafka, topic, [(0, None, b"a", None), (0, b"k", b"\xff\xfe", None), (0, None, b"c", None)]
    )
    errors = {
        "errors.tolerance": "all",
        "errors.log.enable": str(log_enable).lower(),
        "errors.log.include.messages": "true",
    }
    with capture_logs() as logs:
        task = RecordSink()
        runner = runner_for(kafka, cluster, "snk", topic, task, **errors)
        await run_until(runner, lambda: len(task.seen) >= 2)

    assert runner.skipped == 1  # counted either way
    skipped = [e for e in logs if e["event"] == "record_skipped"]
    if not log_enable:
        assert skipped == []
        return
    [entry] = skipped
    assert entry["log_level"] == "error"
    assert {k: entry[k] for k in ("stage", "topic", "partition", "offset", "key", "value")} == {
        "stage": "VALUE_CONVERTER",
        "topic": topic,
        "partition": 0,
        "offset": 1,
        "key": "k",
        "value": "\\xff\\xfe",
    }
    assert entry["executing"] == "headrace.components.converters.simple.StringConverter"


class Unwritable(Exception):
    """What the sink's own system says of a record it refuses."""


class ErrantSink(RecordSink):
    """Reports every record whose value is in ``errant`` instead of keeping it, and catches
    what ``report`` raises (which must not save it under ``errors.tolerance=none``)."""

    def __init__(self, errant: set[str]) -> None:
        super().__init__()
        self.errant = errant
        self.reported: list[asyncio.Future[None]] = []
        self.raised: list[ConnectError] = []
        self.unacknowledged_at_pre_commit = 0

    async def put(self, records: list[SinkRecord]) -> None:
        for record in records:
            if record.value in self.errant:
                await self._report(record)
        await super().put([r for r in records if r.value not in self.errant])

    async def _report(self, record: SinkRecord) -> None:
        try:
            raise Unwritable(f"cannot write {record.value}")
        except Unwritable as exc:
            try:
                self.reported.append(await self.context.errant_record_reporter.report(record, exc))
            except ConnectError as failure:
                self.raised.append(failure)

    async def pre_commit(self, offsets: dict[TopicPartition, int]) -> dict[TopicPartition, int]:
        self.unacknowledged_at_pre_commit += sum(not f.done() for f in self.reported)
        return await super().pre_commit(offsets)


async def test_a_reported_record_goes_to_the_dead_letter_queue_before_its_offset_is_committed(
    kafka: str, cluster: str
) -> None:
    topic, dlq = f"{cluster}-in", f"{cluster}-dlq"
    await ensure_topic(kafka, topic, 1)
    await fill(
        kafka, topic, [(0, f"k{i}".encode(), str(i).encode(), [("h", b"v")]) for i in range(1000)]
    )
    errors = {
        "errors.tolerance": "all",
        "errors.log.enable": "true",
        "errors.deadletterqueue.topic.name": dlq,
        "errors.deadletterqueue.context.headers.enable": "true",
        "consumer.override.max.poll.records": "100",
    }
    task = ErrantSink({"500"})
    with capture_logs() as logs:
        runner = runner_for(kafka, cluster, "snk", topic, task, **errors)
        await run_until(runner, lambda: len(task.seen) >= 999)

    values = [value for _, _, _, value, _, _ in task.seen]
    assert (
        len(values) == 999
        and "500" not in values
        and set(values) == {str(i) for i in range(1000) if i != 500}
    )
    assert runner.skipped == 1 and task.raised == [] and len(task.reported) == 1
    assert task.unacknowledged_at_pre_commit == 0
    assert await committed(kafka, f"{cluster}-connect-snk", topic, 0) == 1000

    [dead] = await consume(kafka, dlq, 1)
    assert (dead.key, dead.value) == (b"k500", b"500")  # the bytes as consumed
    headers = dict(dead.headers)
    assert headers["h"] == b"v"
    assert {k: headers[f"__connect.errors.{k}"].decode() for k in CONTEXT_KEYS} == {
        "topic": topic,
        "partition": "0",
        "offset": "500",
        "connector.name": "snk",
        "task.id": "0",
        "stage": "TASK_PUT",
        "class.name": f"{__name__}.ErrantSink",
        "exception.class.name": f"{__name__}.Unwritable",
        "exception.message": "cannot write 500",
    }
    trace = headers["__connect.errors.exception.stacktrace"].decode()
    assert trace.startswith("Traceback") and f"{__name__}.Unwritable: cannot write 500" in trace
    [entry] = [e for e in logs if e["event"] == "record_skipped"]
    assert entry["log_level"] == "error" and entry["stage"] == "TASK_PUT"
    assert "offset" not in entry and "value" not in entry  # errors.log.include.messages=false


CONTEXT_KEYS = (
    "topic",
    "partition",
    "offset",
    "connector.name",
    "task.id",
    "stage",
    "class.name",
    "exception.class.name",
    "exception.message",
)


async def test_without_tolerance_a_reported_record_fails_the_task_even_if_it_catches_that(
    kafka: str, cluster: str
) -> None:
    topic = f"{cluster}-in"
    await ensure_topic(kafka, topic, 1)
    await fill(kafka, topic, [(0, None, str(i).encode(), None) for i in range(10)])
    task = ErrantSink({"5"})
    runner = runner_for(kafka, cluster, "snk", topic, task)
    loop = await run_to(runner, lambda: False)

    error = loop.exception()
    assert error is not None and len(task.raised) == 1
    trace = format_trace(error)
    assert f"task put failed for the record at topic {topic} partition 0 offset 5" in trace
    assert "Unwritable: cannot write 5" in trace
    offset = await committed(kafka, f"{cluster}-connect-snk", topic, 0)
    assert offset is None or offset <= 5  # nothing past the record is marked consumed


class RewindingSink(RecordSink):
    """Asks, once, to go on from offset ``to`` when it is handed offset ``at``; or, with
    ``at`` None, to start from ``to`` when its partitions are opened."""

    def __init__(self, at: int | None, to: int) -> None:
        super().__init__()
        self.at, self.to = at, to

    async def open(self, partitions: set[TopicPartition]) -> None:
        if self.at is None:
            self.context.offset(dict.fromkeys(partitions, self.to))

    async def put(self, records: list[SinkRecord]) -> None:
        await super().put(records)
        for record in records:
            if record.offset == self.at:
                self.at = -1
                self.context.offset(record.topic_partition, self.to)


@pytest.mark.parametrize(
    ("at", "expected"), [(9, [*range(10), *range(3, 10)]), (None, [*range(3, 10)])]
)
async def test_the_task_rewinds_or_skips_ahead_with_context_offset(
    kafka: str, cluster: str, at: int | None, expected: list[int]
) -> None:
    topic = f"{cluster}-in"
    await ensure_topic(kafka, topic, 1)
    await fill(kafka, topic, [(0, None, f"v{i}".encode(), None) for i in range(10)])
    task = RewindingSink(at, 3)
    runner = runner_for(kafka, cluster, "snk", topic, task)
    await run_until(runner, lambda: len(task.seen) >= len(expected))

    assert [(offset, value) for _, offset, _, value, _, _ in task.seen] == [
        (i, f"v{i}") for i in expected
    ]


class PausingSink(RecordSink):
    """Pauses one partition when its partitions are first opened; keeps (topic, partition,
    value) of what it is handed, and counts the times it is opened."""

    def __init__(self, paused: TopicPartition) -> None:
        super().__init__()
        self.paused = paused
        self.opened = 0
        self.got: list[tuple[str, int, str]] = []

    async def open(self, partitions: set[TopicPartition]) -> None:
        self.opened += 1
        if self.opened == 1:
            self.context.pause(self.paused)

    async def put(self, records: list[SinkRecord]) -> None:
        self.got += [(r.topic, r.partition, r.value) for r in records]

    def values(self, topic: str, partition: int) -> list[str]:
        return [v for t, p, v in self.got if (t, p) == (topic, partition)]


async def test_a_paused_partition_waits_across_a_rebalance_while_others_flow(
    kafka: str, cluster: str
) -> None:
    first, second = f"{cluster}-in-a", f"{cluster}-in-b"
    await ensure_topic(kafka, first, 2)
    await fill(kafka, first, [(i % 2, None, f"{i % 2}-{i // 2}".encode(), None) for i in range(20)])
    task = PausingSink(TopicPartition(first, 0))
    runner = runner_for(kafka, cluster, "snk", first, task, **{"topics.regex": f"{cluster}-in-.*"})
    runner.connector_config.pop("topics")
    await runner.start()
    loop = asyncio.create_task(runner.run())
    try:
        await eventually("partition 1", lambda: len(task.values(first, 1)) == 10 or loop.done())
        # A new topic the pattern matches: a rebalance that keeps both partitions.
        await ensure_topic(kafka, second, 1)
        await fill(kafka, second, [(0, None, b"b", None)])
        await eventually("the new topic", lambda: task.values(second, 0) or loop.done())
        await fill(kafka, first, [(1, None, b"1-late", None), (0, None, b"0-late", None)])
        await eventually("partition 1 still", lambda: "1-late" in task.values(first, 1))
        assert task.opened == 2 and task.values(first, 0) == []

        task.context.resume(TopicPartition(first, 0))
        await eventually("partition 0", lambda: len(task.values(first, 0)) == 11 or loop.done())
    finally:
        runner.request_stop()
        await asyncio.wait({loop}, timeout=30)
        await runner.finish()
        await runner.task.stop()
        await runner.close()
    assert loop.exception() is None
    assert task.values(first, 0) == [*(f"0-{i}" for i in range(10)), "0-late"]
    assert task.values(first, 1) == [*(f"1-{i}" for i in range(10)), "1-late"]


class TopicSink(RecordSink):
    """Keeps (topic, partition, key, value) of every record it is handed."""

    def __init__(self) -> None:
        super().__init__()
        self.got: list[tuple[str, int, str, str]] = []

    async def put(self, records: list[SinkRecord]) -> None:
        self.got += [(r.topic, r.partition, r.key, r.value) for r in records]


async def test_topics_regex_takes_a_topic_created_later_only_if_its_whole_name_matches(
    kafka: str, cluster: str
) -> None:
    """As in Connect, the regex must match the whole topic name: aiokafka alone would also
    consume a topic whose name only starts with a match. A topic created while the task runs
    is found by the next metadata refresh."""
    first, later, longer = (f"{cluster}-orders-{n}" for n in ("1", "7", "7-archive"))
    await ensure_topic(kafka, first, 1)
    await fill(kafka, first, [(0, b"k0", b"first", None)])
    task = TopicSink()
    regex = {"topics.regex": f"{cluster}-orders-[0-9]+"}
    runner = runner_for(kafka, cluster, "snk", first, task, **regex)
    runner.connector_config.pop("topics")
    await runner.start()
    loop = asyncio.create_task(runner.run())
    try:
        await eventually("the group is joined", lambda: task.got or loop.done())
        # The longer name first: the refresh that finds the later topic has seen both.
        await ensure_topic(kafka, longer, 1)
        await fill(kafka, longer, [(0, b"k9", b"archived", None)])
        await ensure_topic(kafka, later, 2)
        await fill(
            kafka, later, [(i % 2, f"k{i}".encode(), f"v{i}".encode(), None) for i in range(6)]
        )
        await eventually(
            "the later topic's records",
            lambda: len(task.got) >= 7 or loop.done(),
            within=SUBSCRIPTION_REFRESH_MS / 1000 + 20,
        )
        assert {tp.topic for tp in runner.assignment()} == {first, later}
    finally:
        runner.request_stop()
        await asyncio.wait({loop}, timeout=30)
        await runner.finish()
        await runner.task.stop()
        await runner.close()
    assert loop.exception() is None
    assert sorted(task.got) == [
        (first, 0, "k0", "first"),
        *sorted((later, i % 2, f"k{i}", f"v{i}") for i in range(6)),
    ]


@pytest.mark.parametrize("factor", ["1", "3"])
async def test_the_dead_letter_queue_is_created_with_the_replication_factor_asked_for(
    kafka: str, cluster: str, factor: str
) -> None:
    topic, dlq = f"{cluster}-in", f"{cluster}-dlq"
    await ensure_topic(kafka, topic, 1)
    errors = {
        "errors.deadletterqueue.topic.name": dlq,
        "errors.deadletterqueue.topic.replication.factor": factor,
    }
    runner = runner_for(kafka, cluster, "snk", topic, RecordSink(), **errors)
    try:
        if factor == "3":  # more than the one broker there is: the broker's refusal, named
            with pytest.raises(
                KafkaError, match=f"dead letter queue topic {dlq} with replication factor 3"
            ):
                await runner.start()
        else:
            await runner.start()
            assert await replicas(kafka, dlq) == 1
    finally:
        await runner.close()


async def replicas(kafka: str, topic: str) -> int:
    [partition] = (await describe_topic(kafka, topic))["partitions"]
    return len(partition["replicas"])


class FlakySink(RecordSink):
    """Refuses its first ``failures`` puts with a RetriableError, as a busy target would."""

    def __init__(self, failures: int) -> None:
        super().__init__()
        self.failures = failures

    async def put(self, records: list[SinkRecord]) -> None:
        if self.failures and records:
            self.failures -= 1
            raise RetriableError("the target is busy, try again")
        await super().put(records)


async def test_a_retriable_put_is_tried_again_with_the_same_records(
    kafka: str, cluster: str
) -> None:
    topic = f"{cluster}-in"
    await ensure_topic(kafka, topic, 2)
    await fill(kafka, topic, MESSAGES)
    task = FlakySink(failures=2)
    retry = {"errors.retry.timeout": "10000", "errors.retry.delay.max.ms": "50"}
    runner = runner_for(kafka, cluster, "flaky", topic, task, **retry)
    await run_until(runner, lambda: len(task.seen) >= len(MESSAGES))
    assert task.failures == 0 and len(task.seen) == len(MESSAGES)  # each record once


async def test_a_put_still_failing_when_the_retry_time_is_up_fails_the_task(
    kafka: str, cluster: str
) -> None:
    topic = f"{cluster}-in"
    await ensure_topic(kafka, topic, 1)
    await fill(kafka, topic, MESSAGES[:1])
    task = FlakySink(failures=1000)
    retry = {"errors.retry.timeout": "400", "errors.retry.delay.max.ms": "100"}
    loop = await run_to(runner_for(kafka, cluster, "busy", topic, task, **retry), lambda: False)
    assert isinstance(loop.exception(), RetriableError)
    assert 1000 - task.failures == 5  # tried at once, then after 100, 100, 100 and 100 ms
