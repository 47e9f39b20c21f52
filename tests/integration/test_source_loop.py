"""The source loop against the real broker: where each polled record lands, what the task is told
of it (``commit_record``, ``commit``), and what becomes of a record naming a partition the topic
does not have."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from headrace.core.settings import Settings
from headrace.core.topics import ensure_topic
from headrace.runtime.errors import RecordError
from headrace.runtime.offsets import OffsetStore
from headrace.runtime.placement import Placement
from headrace.runtime.source import SourceRunner
from headrace.sdk import RecordMetadata, SourceRecord, SourceTask
from tests.support import consume, eventually

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


def runner_for(kafka: str, cluster: str, task: SourceTask, **config: str) -> SourceRunner:
    settings = Settings(bootstrap_servers=kafka, cluster=cluster)
    connector_config = {"name": "src", **STRING, **config}
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
    runner = runner_for(kafka, cluster, task, **{"errors.tolerance": "all"})
    error = await run_until(runner, lambda: task.commits > 0)

    assert error is None and runner.skipped == 1
    assert [r.value for r in await consume(kafka, topic, 2)] == [b"v0", b"v2"]
    assert [(r.value, m is None) for r, m in task.committed] == [
        ("v0", False),
        ("v1", True),  # told it was not produced
        ("v2", False),
    ]
    assert await stored(kafka, cluster) == {"n": 2}  # the skipped record moved the position
