"""The sink loop against the real broker: a task with the batch API (``put_batch``) receives the
same records, the same number of times, as a task with ``put`` alone, and a message its
converter refuses is found, named and handled record by record."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

import pyarrow as pa
import pytest
from aiokafka import AIOKafkaProducer

from headrace.core.settings import Settings
from headrace.core.topics import ensure_topic
from headrace.runtime.placement import Placement
from headrace.runtime.sink import SinkRunner
from headrace.sdk import SinkBatch, SinkRecord, SinkTask, TopicPartition
from tests.support import eventually

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


async def fill(kafka: str, topic: str, messages: list[tuple[int, Any, Any, Any]]) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=kafka)
    await producer.start()
    try:
        for partition, key, value, headers in messages:
            await producer.send_and_wait(
                topic, value=value, key=key, partition=partition, headers=headers
            )
    finally:
        await producer.stop()


async def run_until(runner: SinkRunner, done: Callable[[], bool]) -> None:
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
    assert loop.exception() is None


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
