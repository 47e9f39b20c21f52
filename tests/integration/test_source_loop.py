"""The source loop against the real broker: where each polled record lands, what the task is told
of it (``commit_record``, ``commit``), what becomes of a record naming a partition the topic
does not have, and what the transactions promise: a batch lands whole or not at all, and a
fenced zombie instance of a task writes nothing once its replacement started."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

import immutables
import pyarrow as pa
import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

from headrace.components.errorpolicy import RecordError, TaskFenced
from headrace.core.model.offsets import Marker
from headrace.core.settings import Settings
from headrace.core.storage.stores import OffsetStore
from headrace.core.storage.topics import ensure_topic
from headrace.runtime import kafka as kafka_clients
from headrace.runtime.placement import Placement
from headrace.runtime.source.loop import SourceRunner
from headrace.runtime.source.pending import committed as pending_outcome
from headrace.sdk import RecordMetadata, RetriableError, SourceBatch, SourceRecord, SourceTask
from tests.support import committed, consume, eventually

pytestmark = pytest.mark.kafka

PARTITION = {"stream": "s"}
STRING = {"key.converter": "string", "value.converter": "string"}


class ListSource(SourceTask):
    """Returns its records in one poll, then nothing; remembers what the runtime told it."""

    def __init__(self, records: list[SourceRecord]) -> None:
        self.pending = records
        self.committed: list[tuple[SourceRecord, RecordMetadata | None]] = []
        self.commits = 0
        self.stored_at_commit: dict[str, Any] | None = None

    async def start(self, config: Mapping[str, str]) -> None:
        pass

    async def poll(self) -> list[SourceRecord]:
        polled, self.pending = self.pending, []
        if not polled:
            await asyncio.sleep(0.05)
        return polled

    async def commit_record(self, record: SourceRecord, metadata: RecordMetadata | None) -> None:
        self.committed.append((record, metadata))

    async def commit(self) -> None:
        self.commits += 1
        self.stored_at_commit = self.context.offset_reader.offset(PARTITION)


def record(topic: str, i: int, *, key: str | None = None, partition: int | None = None) -> Any:
    return SourceRecord(PARTITION, {"n": i}, topic, f"v{i}", key=key, partition=partition)


async def run_until(runner: SourceRunner, done: Callable[[], bool]) -> BaseException | None:
    """Starts the runner, waits until ``done`` or the loop ends; stops it; the loop's error."""
    await runner.start()
    loop = asyncio.create_task(runner.run())
    try:
        await eventually("the batch is handled", lambda: done() or loop.done())
    finally:
        runner.request_stop()
        await asyncio.wait({loop}, timeout=30)
        await runner.task.stop()
        await runner.close()
    return loop.exception()


def runner_for(
    kafka: str,
    cluster: str,
    task: SourceTask,
    config: Mapping[str, str] | None = None,
    converters: Mapping[str, str] = STRING,
    worker: Mapping[str, str] | None = None,
) -> SourceRunner:
    settings = Settings(bootstrap_servers=kafka, cluster=cluster)
    if worker:  # the worker config's keys
        settings = dataclasses.replace(settings, worker_config=immutables.Map(worker))
    connector_config = {"name": "src", **converters, **(config or {})}
    return SourceRunner(Placement("src", 0, connector_config, {}, settings), task)


async def stored(kafka: str, cluster: str) -> dict[str, Any] | None:
    store = OffsetStore(Settings(bootstrap_servers=kafka, cluster=cluster), "src")
    try:
        await store.load()
        return store.offset(PARTITION)
    finally:
        await store.close()


async def test_the_task_learns_where_each_record_landed(kafka: str, cluster: str) -> None:
    topic = f"{cluster}-three"
    await ensure_topic(kafka, topic, 3)
    polled = [
        record(topic, 0, partition=2),
        record(topic, 1, key="user-1"),
        record(topic, 2),
        record(topic, 3, key="user-2"),
        record(topic, 4),
        record(topic, 5, partition=2),
    ]
    task = ListSource(list(polled))
    error = await run_until(runner_for(kafka, cluster, task), lambda: task.commits > 0)
    assert error is None

    consumed = {(r.partition, r.offset): r for r in await consume(kafka, topic, len(polled))}
    assert [r for r, _ in task.committed] == polled  # each record once, in poll order
    for polled_record, meta in task.committed:
        assert meta is not None and meta.topic == topic
        landed = consumed[(meta.partition, meta.offset)]
        assert landed.value == polled_record.value.encode()
        assert landed.timestamp == meta.timestamp
    where = {r.value: m.partition for r, m in task.committed if m is not None}
    assert where["v0"] == where["v5"] == 2  # named partitions are kept
    assert where["v2"] == where["v4"]  # unkeyed records of one poll stick together
    # commit() comes once the batch's offset is stored, and the store holds the last one.
    assert task.commits == 1 and task.stored_at_commit == {"n": 5}
    assert await stored(kafka, cluster) == {"n": 5}


async def end_offset(kafka: str, topic: str) -> int:
    """Where the next record of the topic's one partition would go: its records, plus a marker
    for each transaction that ended in it."""
    consumer = AIOKafkaConsumer(bootstrap_servers=kafka, isolation_level="read_uncommitted")
    await consumer.start()
    try:
        partition = TopicPartition(topic, 0)
        return int((await consumer.end_offsets([partition]))[partition])
    finally:
        await consumer.stop()


@pytest.mark.parametrize(("support", "markers"), [("disabled", 0), ("enabled", 1)])
async def test_without_exactly_once_support_records_then_offsets_are_written_plainly(
    kafka: str, cluster: str, support: str, markers: int
) -> None:
    """``exactly.once.source.support=disabled`` in the worker config: the same records and
    offsets, and what the task is told, with no transaction around them."""
    topic = f"{cluster}-plain-{support}"
    await ensure_topic(kafka, topic, 1)
    polled = [record(topic, i) for i in range(5)]
    task = ListSource(list(polled))
    worker = {"exactly.once.source.support": support}
    runner = runner_for(kafka, cluster, task, worker=worker)
    assert await run_until(runner, lambda: task.commits > 0) is None
    assert [r.value for r in await consume(kafka, topic, 5)] == [b"v0", b"v1", b"v2", b"v3", b"v4"]
    assert [r for r, _ in task.committed] == polled
    assert task.commits == 1 and task.stored_at_commit == {"n": 4}
    assert await stored(kafka, cluster) == {"n": 4}
    # A transaction's end takes an offset of its own in the topic: none without one.
    assert await end_offset(kafka, topic) == len(polled) + markers


async def test_a_record_for_a_partition_that_does_not_exist_fails_the_task(
    kafka: str, cluster: str
) -> None:
    topic = f"{cluster}-one"
    await ensure_topic(kafka, topic, 1)
    task = ListSource([record(topic, 0), record(topic, 1, partition=4)])
    error = await run_until(runner_for(kafka, cluster, task), lambda: False)

    assert isinstance(error, RecordError)
    assert "partition 4 does not exist (the topic has 1)" in str(error)
    assert f"to topic {topic}" in str(error)
    assert task.committed == [] and await stored(kafka, cluster) is None  # nothing half done


async def test_with_errors_tolerated_that_record_alone_is_skipped(kafka: str, cluster: str) -> None:
    topic = f"{cluster}-one"
    await ensure_topic(kafka, topic, 1)
    polled = [record(topic, 0), record(topic, 1, partition=4), record(topic, 2)]
    task = ListSource(list(polled))
    runner = runner_for(kafka, cluster, task, {"errors.tolerance": "all"})
    error = await run_until(runner, lambda: task.commits > 0)

    assert error is None and runner.skipped == 1
    assert [r.value for r in await consume(kafka, topic, 2)] == [b"v0", b"v2"]
    assert [(r.value, m is None) for r, m in task.committed] == [
        ("v0", False),
        ("v1", True),  # told it was not produced
        ("v2", False),
    ]
    assert await stored(kafka, cluster) == {"n": 2}  # the skipped record moved the position


@pytest.mark.parametrize(
    ("header_converter", "written"),
    [
        ({}, [b"x", b"42", None]),  # Connect's SimpleHeaderConverter
        ({"header.converter": "json"}, [b'"x"', b"42", None]),  # a null value stays null
    ],
)
async def test_header_values_are_written_as_the_header_converter_says(
    kafka: str, cluster: str, header_converter: dict[str, str], written: list[bytes | None]
) -> None:
    topic = f"{cluster}-headers"
    await ensure_topic(kafka, topic, 1)
    headed = dataclasses.replace(record(topic, 0), headers=(("a", "x"), ("b", 42), ("c", None)))
    task = ListSource([headed])
    error = await run_until(
        runner_for(kafka, cluster, task, header_converter), lambda: task.commits > 0
    )

    assert error is None
    [produced] = await consume(kafka, topic, 1)
    assert list(produced.headers) == list(zip("abc", written, strict=True))


async def test_a_header_its_converter_refuses_is_a_record_error(kafka: str, cluster: str) -> None:
    topic = f"{cluster}-headers"
    await ensure_topic(kafka, topic, 1)
    refused = dataclasses.replace(record(topic, 1), headers=(("text", "not bytes"),))
    task = ListSource([record(topic, 0), refused, record(topic, 2)])
    config = {"header.converter": "bytes", "errors.tolerance": "all"}
    error = await run_until(runner_for(kafka, cluster, task, config), lambda: task.commits > 0)

    assert error is None and runner_skipped(task) == ["v1"]
    assert [r.value for r in await consume(kafka, topic, 2)] == [b"v0", b"v2"]


def runner_skipped(task: ListSource) -> list[str]:
    """The records the task was told were not produced."""
    return [r.value for r, where in task.committed if where is None]


class BatchSource(ListSource):
    """Returns one SourceBatch, then nothing."""

    def __init__(self, batch: SourceBatch) -> None:
        super().__init__([])
        self.batch: SourceBatch | None = batch

    async def poll(self) -> Any:
        polled, self.batch = self.batch, None
        if polled is None:
            await asyncio.sleep(0.05)
            return []
        return polled


def batch_to(topic: str, values: Any, keys: Any = None) -> SourceBatch:
    return SourceBatch(
        PARTITION,
        {"n": 99},
        topic,
        values,
        keys=keys,
        headers=(("origin", "batch"), ("raw", b"\x00\x01")),
        timestamp=1_700_000_000_000,
    )


async def kafka_view(kafka: str, topic: str, count: int) -> list[tuple[Any, ...]]:
    """Each record's bytes, headers and timestamp, and its partition where the key decides it
    (an unkeyed record's partition is chosen at random), in partition and offset order."""
    records = sorted(await consume(kafka, topic, count), key=lambda r: (r.partition, r.offset))
    return [
        (r.partition if r.key is not None else None, r.key, r.value, list(r.headers), r.timestamp)
        for r in records
    ]


@pytest.mark.parametrize("converters", [STRING, {}], ids=["string", "json-default"])
async def test_a_batch_puts_the_same_bytes_in_kafka_as_its_records_one_by_one(
    kafka: str, cluster: str, converters: dict[str, str]
) -> None:
    values = pa.array(["plain", "", None, "grüße ✓", "x" * 3000], pa.string())
    keys = ["k1", "k2", None, "k1", "k3"]
    by_batch, by_record = f"{cluster}-by-batch", f"{cluster}-by-record"
    for topic in (by_batch, by_record):
        await ensure_topic(kafka, topic, 3)
    batch_task = BatchSource(batch_to(by_batch, values, keys))
    records = batch_to(by_record, values, keys).records()
    record_task = ListSource(list(records))
    for task in (batch_task, record_task):
        runner = runner_for(kafka, cluster, task, converters=converters)
        assert await run_until(runner, lambda t=task: t.commits > 0) is None  # type: ignore[misc]

    batched, one_by_one = (
        await kafka_view(kafka, by_batch, 5),
        await kafka_view(kafka, by_record, 5),
    )
    assert sorted(batched, key=repr) == sorted(one_by_one, key=repr)
    for view in (batched, one_by_one):  # one key's records keep their order in their partition
        first, second = [v for _, key, v, *_ in view if key and b"k1" in key]
        assert b"plain" in first and b"plain" not in second
    assert await stored(kafka, cluster) == {"n": 99}


async def test_a_batch_with_a_value_its_converter_refuses_is_handled_record_by_record(
    kafka: str, cluster: str
) -> None:
    topic = f"{cluster}-mixed"
    await ensure_topic(kafka, topic, 1)
    task = BatchSource(batch_to(topic, ["a", b"not text", "c"]))
    runner = runner_for(kafka, cluster, task, {"errors.tolerance": "all"})
    assert await run_until(runner, lambda: task.commits > 0) is None

    assert runner.skipped == 1  # the bytes value, named and logged as on the per-record path
    assert [r.value for r in await consume(kafka, topic, 2)] == [b"a", b"c"]
    assert await stored(kafka, cluster) == {"n": 99}


class QueueSource(ListSource):
    """Polls what the test puts in its queue, one list per poll."""

    def __init__(self) -> None:
        super().__init__([])
        self.queue: asyncio.Queue[list[SourceRecord]] = asyncio.Queue()

    async def poll(self) -> list[SourceRecord]:
        return await self.queue.get()


async def test_a_zombie_writes_nothing_once_its_replacement_started(
    kafka: str, cluster: str
) -> None:
    topic = f"{cluster}-fenced"
    await ensure_topic(kafka, topic, 1)
    zombie_task, replacement_task = QueueSource(), QueueSource()
    zombie = runner_for(kafka, cluster, zombie_task)
    replacement = runner_for(kafka, cluster, replacement_task)  # the same task, elsewhere
    await zombie.start()
    zombie_loop = asyncio.create_task(zombie.run())
    try:
        zombie_task.queue.put_nowait([record(topic, 0), record(topic, 1)])
        await eventually("the first instance's batch committed", lambda: zombie_task.commits)

        await replacement.start()
        assert replacement_task.context.offset_reader.offset(PARTITION) == {"n": 1}
        zombie_task.queue.put_nowait([record(topic, 2)])  # the zombie polls on, unaware
        await asyncio.wait({zombie_loop}, timeout=30)
        assert isinstance(zombie_loop.exception(), TaskFenced)
        assert zombie_task.commits == 1

        replacement_loop = asyncio.create_task(replacement.run())
        replacement_task.queue.put_nowait([record(topic, 2), record(topic, 3)])
        await eventually("the replacement's batch committed", lambda: replacement_task.commits)
        replacement.request_stop()
        replacement_task.queue.put_nowait([])
        await asyncio.wait({replacement_loop}, timeout=30)
    finally:
        for runner in (zombie, replacement):
            await runner.task.stop()
            await runner.close()

    # The zombie's v2 was never committed: each record once, in order, and the offset after v3.
    assert [r.value for r in await committed(kafka, topic)] == [b"v0", b"v1", b"v2", b"v3"]
    assert await stored(kafka, cluster) == {"n": 3}


async def test_a_batch_that_fails_half_way_leaves_nothing_behind(kafka: str, cluster: str) -> None:
    fits, too_large = f"{cluster}-fits", f"{cluster}-too-large"
    for topic in (fits, too_large):
        await ensure_topic(kafka, topic, 1)
    oversized = SourceRecord(PARTITION, {"n": 1}, too_large, "x" * (2 * 1024 * 1024))
    task = ListSource([record(fits, 0), oversized])
    error = await run_until(runner_for(kafka, cluster, task), lambda: False)

    assert error is not None and "MessageSizeTooLarge" in repr(error)
    # v0 reached the broker before the batch failed; its transaction was aborted.
    assert await committed(kafka, fits) == [] and await stored(kafka, cluster) is None
    assert task.committed == [] and task.commits == 0


async def stop_loop(runner: SourceRunner, task: QueueSource, loop: asyncio.Task[None]) -> None:
    """A graceful stop, as the plugin host does it: the loop ends, then ``finish``."""
    runner.request_stop()
    task.queue.put_nowait([])  # the pending poll returns
    await asyncio.wait({loop}, timeout=30)
    assert loop.exception() is None
    await runner.finish()


class EndlessSource(ListSource):
    """Returns the next 50 records at every poll, at once; notes when each poll starts and
    each commit comes."""

    def __init__(self, topic: str) -> None:
        super().__init__([])
        self.topic, self.returned = topic, 0
        self.events: list[tuple[str, int]] = []

    async def poll(self) -> list[SourceRecord]:
        self.events.append(("poll", self.returned // 50))
        polled = [record(self.topic, n) for n in range(self.returned, self.returned + 50)]
        self.returned += len(polled)
        return polled

    async def commit(self) -> None:
        await super().commit()
        self.events.append(("commit", self.commits - 1))


async def five_batches_then_a_stop(runner: SourceRunner, task: ListSource) -> None:
    """Runs the task until five of its batches committed, then stops it as its host would."""
    await runner.start()
    loop = asyncio.create_task(runner.run())
    try:
        await eventually("five batches committed", lambda: task.commits >= 5 or loop.done())
        runner.request_stop()
        await asyncio.wait({loop}, timeout=30)
        assert loop.exception() is None
        await runner.finish()
    finally:
        await task.stop()
        await runner.close()


async def test_the_next_poll_runs_while_a_batch_goes_to_kafka_and_a_stop_loses_none(
    kafka: str, cluster: str
) -> None:
    topic = f"{cluster}-endless"
    await ensure_topic(kafka, topic, 1)
    task = EndlessSource(topic)
    await five_batches_then_a_stop(runner_for(kafka, cluster, task), task)

    # Each poll after the first started before the batch polled before it was committed.
    for batch in range(1, task.commits):
        assert task.events.index(("poll", batch)) < task.events.index(("commit", batch - 1))
    # A batch polled ahead when the stop came was produced too: every record returned, once.
    values = [r.value for r in await committed(kafka, topic)]
    assert values == [f"v{n}".encode() for n in range(task.returned)]
    assert await stored(kafka, cluster) == {"n": task.returned - 1}


class OneDictSource(EndlessSource):
    """Keeps its position in one dict, moved in place as each poll returns (Connect allows it:
    nothing says a returned offset is not the task's own), and notes the position stored at
    each commit."""

    def __init__(self, topic: str) -> None:
        super().__init__(topic)
        self.position: dict[str, int] = {"n": -1}
        self.stored: list[Any] = []

    async def poll(self) -> list[SourceRecord]:
        first = self.returned
        self.returned += 50
        self.position["n"] = self.returned - 1
        return [
            SourceRecord(PARTITION, self.position, self.topic, f"v{n}")
            for n in range(first, self.returned)
        ]

    async def commit(self) -> None:
        self.stored.append(self.context.offset_reader.offset(PARTITION))
        self.commits += 1


async def test_a_batch_stores_the_offset_it_was_returned_with_whatever_the_next_poll_does(
    kafka: str, cluster: str
) -> None:
    topic = f"{cluster}-one-dict"
    await ensure_topic(kafka, topic, 1)
    task = OneDictSource(topic)
    await five_batches_then_a_stop(runner_for(kafka, cluster, task), task)

    # Each commit found its own batch's last position stored, not the next poll's.
    assert task.stored == [{"n": 50 * k + 49} for k in range(task.commits)]


async def test_an_interval_transaction_is_read_only_once_it_commits(
    kafka: str, cluster: str
) -> None:
    topic = f"{cluster}-interval"
    await ensure_topic(kafka, topic, 1)
    task = QueueSource()
    interval = {"transaction.boundary": "interval", "transaction.boundary.interval.ms": "600000"}
    runner = runner_for(kafka, cluster, task, interval)
    await runner.start()
    try:
        loop = asyncio.create_task(runner.run())
        task.queue.put_nowait([record(topic, 0), record(topic, 1)])
        task.queue.put_nowait([record(topic, 2)])
        await eventually("both polls produced", lambda: runner.produced == 3)
        assert await committed(kafka, topic) == [] and task.commits == 0  # written, not committed
        await stop_loop(runner, task, loop)  # a graceful stop commits the open transaction
    finally:
        await task.stop()
        await runner.close()

    assert [r.value for r in await committed(kafka, topic)] == [b"v0", b"v1", b"v2"]
    assert task.commits == 1 and await stored(kafka, cluster) == {"n": 2}


async def test_a_task_that_ends_its_own_transactions(kafka: str, cluster: str) -> None:
    topic = f"{cluster}-own"
    await ensure_topic(kafka, topic, 1)
    task = QueueSource()
    runner = runner_for(kafka, cluster, task, {"transaction.boundary": "connector"})
    await runner.start()
    asked = task.context.transaction_context
    assert asked is not None
    try:
        loop = asyncio.create_task(runner.run())
        first = [record(topic, i) for i in range(3)]
        asked.commit_transaction(first[0])
        asked.abort_transaction(first[2])  # v1 and v2 are discarded, their offsets kept
        task.queue.put_nowait(first)
        await eventually("the first poll's two transactions ended", lambda: task.commits == 2)
        asked.commit_transaction()
        task.queue.put_nowait([record(topic, 3)])
        await eventually("the second poll committed", lambda: task.commits == 3)
        task.queue.put_nowait([record(topic, 4)])  # left open: the stop aborts it
        await eventually("v4 produced", lambda: runner.produced == 5)
        await stop_loop(runner, task, loop)
    finally:
        await task.stop()
        await runner.close()

    assert [r.value for r in await committed(kafka, topic)] == [b"v0", b"v3"]
    assert [(r.value, m is not None) for r, m in task.committed] == [
        ("v0", True),
        ("v1", False),  # told they were not produced
        ("v2", False),
        ("v3", True),
    ]
    assert await stored(kafka, cluster) == {"n": 3}  # v4 is polled again after a restart


async def test_transforms_route_and_drop_records_before_they_are_produced(
    kafka: str, cluster: str
) -> None:
    raw, clean = f"{cluster}-raw", f"{cluster}-clean"
    await ensure_topic(kafka, clean, 1)
    marked = SourceRecord(PARTITION, {"n": 1}, raw, "v1", headers=(("skip", b"y"),))
    task = ListSource([record(raw, 0), marked, record(raw, 2)])
    chain = {
        "transforms": "route,unmarked",
        "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
        "transforms.route.regex": "(.*)-raw",
        "transforms.route.replacement": "$1-clean",
        "transforms.unmarked.type": "Filter",
        "transforms.unmarked.predicate": "marked",
        "predicates": "marked",
        "predicates.marked.type": "HasHeaderKey",
        "predicates.marked.name": "skip",
    }
    error = await run_until(runner_for(kafka, cluster, task, chain), lambda: task.commits > 0)

    assert error is None
    assert [r.value for r in await committed(kafka, clean)] == [b"v0", b"v2"]
    assert [(r.value, m and m.topic) for r, m in task.committed] == [
        ("v0", clean),
        ("v1", None),  # dropped: told it was not produced
        ("v2", clean),
    ]
    assert await stored(kafka, cluster) == {"n": 2}  # the dropped record moved the position


async def test_a_record_a_transform_cannot_handle_fails_the_task_naming_it(
    kafka: str, cluster: str
) -> None:
    topic = f"{cluster}-one"
    await ensure_topic(kafka, topic, 1)
    task = ListSource([record(topic, 0)])
    extract = {"transforms": "pick", "transforms.pick.type": "ExtractField$Value"}
    extract["transforms.pick.field"] = "id"  # a plain string value has no fields
    error = await run_until(runner_for(kafka, cluster, task, extract), lambda: False)

    assert isinstance(error, RecordError) and "transform 'pick'" in str(error)
    assert await committed(kafka, topic) == [] and await stored(kafka, cluster) is None


async def test_no_record_reaches_an_internal_topic_whatever_the_tolerance(
    kafka: str, cluster: str
) -> None:
    """Routed into the cluster's command topic, a record would be a command run as admin."""
    requests = f"{cluster}-requests"
    await ensure_topic(kafka, requests, 1)
    task = ListSource([record(f"{cluster}-raw", 0)])
    chain = {
        "errors.tolerance": "all",
        "transforms": "route",
        "transforms.route.type": "RegexRouter",
        "transforms.route.regex": ".*-raw",
        "transforms.route.replacement": requests,
    }
    error = await run_until(runner_for(kafka, cluster, task, chain), lambda: False)

    assert error is not None and f"a source record for {requests}" in str(error)
    assert "the requests topic of headrace cluster" in str(error)
    assert await committed(kafka, requests) == [] and await stored(kafka, cluster) is None


async def test_a_regex_that_backtracks_without_end_costs_a_record_not_the_process(
    kafka: str, cluster: str
) -> None:
    """A RegexRouter pattern no match of ends in time: the record it meets is one the transform
    cannot handle, skipped under errors.tolerance=all, and the next ones go on."""
    slow, topic = f"{cluster}-{'a' * 40}-", f"{cluster}-one"
    await ensure_topic(kafka, topic, 1)
    task = ListSource([record(topic, 0), record(slow, 1), record(topic, 2)])
    chain = {
        "errors.tolerance": "all",
        "transforms": "route",
        "transforms.route.type": "RegexRouter",
        "transforms.route.regex": ".*-(a|a)+$",
        "transforms.route.replacement": "never",
    }
    error = await run_until(runner_for(kafka, cluster, task, chain), lambda: task.commits > 0)

    assert error is None
    assert [r.value for r in await committed(kafka, topic)] == [b"v0", b"v2"]
    assert await stored(kafka, cluster) == {"n": 2}


class FlakySource(ListSource):
    """Fails its first ``failures`` polls with a RetriableError, then polls as ListSource."""

    def __init__(self, records: list[SourceRecord], failures: int) -> None:
        super().__init__(records)
        self.failures = failures

    async def poll(self) -> list[SourceRecord]:
        if self.failures:
            self.failures -= 1
            raise RetriableError("the source system is busy, try again")
        return await super().poll()


RETRY = {"errors.retry.timeout": "10000", "errors.retry.delay.max.ms": "50"}


async def test_a_retriable_poll_is_tried_again_within_the_retry_timeout(
    kafka: str, cluster: str
) -> None:
    topic = f"{cluster}-out"
    await ensure_topic(kafka, topic, 1)
    task = FlakySource([record(topic, i) for i in range(3)], failures=2)
    error = await run_until(runner_for(kafka, cluster, task, RETRY), lambda: task.commits > 0)
    assert error is None
    assert task.failures == 0 and [m.offset for _, m in task.committed if m] == [0, 1, 2]


async def test_without_retries_a_retriable_poll_fails_the_task(kafka: str, cluster: str) -> None:
    task = FlakySource([], failures=1)
    error = await run_until(runner_for(kafka, cluster, task), lambda: False)
    assert isinstance(error, RetriableError) and "try again" in str(error)


async def topic_described(kafka: str, topic: str) -> tuple[int, str]:
    """The topic's partition count and its cleanup policy, as the broker describes them."""
    admin = AIOKafkaAdminClient(bootstrap_servers=kafka)
    await admin.start()
    try:
        [described] = await admin.describe_topics([topic])
        resource = ConfigResource(ConfigResourceType.TOPIC, topic)
        [response] = await admin.describe_configs([resource])
        [entries] = [r[4] for r in response.resources]
        [policy] = [entry[1] for entry in entries if entry[0] == "cleanup.policy"]
        return len(described["partitions"]), policy
    finally:
        await admin.close()


async def test_topics_the_source_writes_first_are_created_as_its_groups_say(
    kafka: str, cluster: str
) -> None:
    plain, compacted = f"{cluster}-plain", f"{cluster}-log-users"
    brokers = f"{cluster}-as-the-broker-says"
    creation = {
        "topic.creation.default.replication.factor": "1",
        "topic.creation.default.partitions": "3",
        "topic.creation.groups": "compacted, brokers",
        "topic.creation.compacted.include": f"{cluster}-log-.*",
        "topic.creation.compacted.partitions": "2",
        "topic.creation.compacted.cleanup.policy": "compact",
        "topic.creation.brokers.include": brokers,
        "topic.creation.brokers.partitions": "-1",
        "topic.creation.brokers.replication.factor": "-1",
    }
    topics = (plain, compacted, brokers)
    task = ListSource([record(t, i, key=str(i)) for i, t in enumerate(topics)])
    error = await run_until(runner_for(kafka, cluster, task, creation), lambda: task.commits > 0)
    assert error is None and len(task.committed) == 3
    assert await topic_described(kafka, plain) == (3, "delete")
    assert await topic_described(kafka, compacted) == (2, "compact")
    assert await topic_described(kafka, brokers) == (
        1,
        "delete",
    )  # the suite broker's num.partitions


async def test_a_connector_s_own_offsets_topic_takes_its_offsets_and_wins_over_the_cluster_s(
    kafka: str, cluster: str
) -> None:
    """KIP-618's offsets.storage.topic: the task's offsets go to the connector's own topic, in
    the transaction of its records; what the cluster's topic held for it before still counts
    where its own topic says nothing."""
    topic, own = f"{cluster}-data", f"{cluster}-src-offsets"
    await ensure_topic(kafka, topic, 1)
    settings = Settings(bootstrap_servers=kafka, cluster=cluster)
    before = OffsetStore(settings, "src")
    await before.load()
    try:  # as it ran before it had a topic of its own
        await before.write([(PARTITION, {"n": 1}), ({"stream": "old"}, {"n": 7})])
    finally:
        await before.close()

    task = ListSource([record(topic, 2)])
    config = {"offsets.storage.topic": own}
    error = await run_until(runner_for(kafka, cluster, task, config), lambda: task.commits > 0)
    assert error is None
    assert task.stored_at_commit == {"n": 2}

    mine = OffsetStore(settings, "src", topic=own)
    await mine.load()
    try:
        assert mine.offset(PARTITION) == {"n": 2}
        assert mine.offset({"stream": "old"}) == {"n": 7}  # from the cluster's topic
    finally:
        await mine.close()
    assert await stored(kafka, cluster) == {"n": 1}  # the cluster's topic is left as it was
    assert len(await consume(kafka, own, 1)) == 1  # read committed: the transaction landed


async def test_a_marker_reads_as_committed_only_where_its_transaction_committed(
    kafka: str, cluster: str
) -> None:
    topic = f"{cluster}-markers"
    await ensure_topic(kafka, topic, 1)
    settings = Settings(bootstrap_servers=kafka, cluster=cluster)
    producer = kafka_clients.producer(settings, "markers", transactional_id=f"{cluster}-markers")
    await producer.start()
    try:
        landed = []
        for value, commit in ((b"kept", True), (b"dropped", False), (b"last, dropped", False)):
            await producer.begin_transaction()
            landed.append((await (await producer.send(topic, value))).offset)
            await (producer.commit_transaction() if commit else producer.abort_transaction())
    finally:
        await producer.stop()

    outcomes = [await pending_outcome(settings, "t", Marker(topic, 0, at)) for at in landed]
    assert outcomes == [True, False, False]
