"""A source task's transaction when Kafka stops taking its records for a while (KIP-298's
``errors.retry.*``, applied to the producer): with retries it is aborted and written again
whole, and a read_committed consumer reads every record once; without, the task waits.

Kafka stops answering for real: the tests freeze this module's own broker (SIGSTOP) and thaw
it (SIGCONT), never the suite's, whose other clients would stall too. The issue's idea, a
topic with ``min.insync.replicas=2`` on one broker, cannot make it refuse: Kafka 3.9 counts at
most the replicas a partition has, so acks=all writes to it succeed. And aiokafka's
transactional producer would not fail on a refusal anyway: it sends the batch again until it is
taken. What the task sees is the stall bound's ``KafkaTimeoutError`` (``transactions.py``),
made short here.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest
from structlog.testing import capture_logs

from headrace.core.storage.topics import ensure_topic
from headrace.local.kafka import EmbeddedKafka, free_port
from headrace.runtime.source import transactions
from headrace.runtime.source.loop import SourceRunner
from tests.integration.test_source_loop import QueueSource, record, runner_for, stop_loop, stored
from tests.support import committed, eventually

pytestmark = pytest.mark.kafka

STALL_S = 1.0
RETRY = {"errors.retry.timeout": "60000", "errors.retry.delay.max.ms": "200"}


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedKafka]:
    """A broker of this module's own, which its tests may freeze."""
    kafka = EmbeddedKafka(tmp_path_factory.mktemp("frozen-kafka"), port=free_port())
    kafka.start()
    try:
        yield kafka
    finally:
        kafka.stop()


@contextlib.contextmanager
def frozen(broker: EmbeddedKafka) -> Iterator[None]:
    """The broker stops answering anyone inside the block (its process stopped, its
    connections open), and goes on where it was after it."""
    pid = broker.running_pid()
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


@pytest.fixture(autouse=True)
def _short_stall(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(transactions, "STALL_TIMEOUT_S", STALL_S)


def retries(logs: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [e for e in logs if e["event"] == "transaction_retried"]


async def closed(runner: SourceRunner) -> None:
    await runner.task.stop()
    await runner.close()


@pytest.mark.parametrize("boundary", ["poll", "interval"])
async def test_a_transaction_kafka_did_not_take_is_written_again_and_read_once(
    broker: EmbeddedKafka, cluster: str, boundary: str
) -> None:
    kafka, topic = broker.bootstrap, f"{cluster}-out"
    await ensure_topic(kafka, topic, 3)
    ends = {"transaction.boundary": boundary}
    if boundary == "interval":
        ends["transaction.boundary.interval.ms"] = "600000"  # only the stop commits
    task = QueueSource()
    with capture_logs() as logs:
        runner = runner_for(kafka, cluster, task, {**RETRY, **ends})
        await runner.start()
        loop = asyncio.create_task(runner.run())
        try:
            # Keyed: the records go to every partition, one batch each.
            task.queue.put_nowait([record(topic, i, key=f"k{i}") for i in range(3)])
            await eventually("the first poll produced", lambda: runner.produced == 3)
            with frozen(broker):
                task.queue.put_nowait([record(topic, i, key=f"k{i}") for i in range(3, 6)])
                await eventually("two tries again", lambda: len(retries(logs)) >= 2, within=30)
            await eventually("the second poll produced", lambda: runner.produced == 6, within=60)
            await stop_loop(runner, task, loop)  # an interval transaction commits now
        finally:
            await closed(runner)

    assert not loop.cancelled() and loop.exception() is None  # the task did not fail
    values = [f"v{i}".encode() for i in range(6)]
    assert sorted(r.value for r in await committed(kafka, topic)) == values  # each once
    # Told once of each record, where it landed in the transaction that committed.
    assert [r.value for r, _ in task.committed] == [v.decode() for v in values]
    landed = {(r.partition, r.offset): r.value for r in await committed(kafka, topic)}
    for told, where in task.committed:
        assert where is not None and landed[(where.partition, where.offset)] == told.value.encode()
    assert await stored(kafka, cluster) == {"n": 5}
    [first, *_] = retries(logs)
    assert first["log_level"] == "warning" and first["attempt"] == 1
    assert first["error_class"] == "aiokafka.errors.KafkaTimeoutError"
    # The first poll's records are written again with the second's: one transaction for both.
    assert first["records"] == (6 if boundary == "interval" else 3)


async def test_without_retries_the_task_waits_for_kafka_and_loses_nothing(
    broker: EmbeddedKafka, cluster: str
) -> None:
    """With ``errors.retry.timeout`` 0 (the default) there is no stall bound: the task waits
    for a broker that stopped answering as long as it takes, as Connect's producer does, and
    goes on when it answers again."""
    kafka, topic = broker.bootstrap, f"{cluster}-out"
    await ensure_topic(kafka, topic, 1)
    task = QueueSource()
    with capture_logs() as logs:
        runner = runner_for(kafka, cluster, task)  # errors.retry.timeout: 0 by default
        await runner.start()
        loop = asyncio.create_task(runner.run())
        try:
            task.queue.put_nowait([record(topic, 0)])
            await eventually("the first poll committed", lambda: task.commits == 1)
            with frozen(broker):
                task.queue.put_nowait([record(topic, 1), record(topic, 2)])
                await eventually("the second poll taken", task.queue.empty)
                # Three stall bounds go by: a bounded task would have failed by then.
                await asyncio.wait({loop}, timeout=3 * STALL_S)
                assert not loop.done(), "the task ended while Kafka was not answering"
            await eventually("the second poll committed", lambda: task.commits == 2, within=60)
            await stop_loop(runner, task, loop)
        finally:
            await closed(runner)

    assert loop.exception() is None and not retries(logs)
    assert [r.value for r in await committed(kafka, topic)] == [b"v0", b"v1", b"v2"]
    assert [r.value for r, _ in task.committed] == ["v0", "v1", "v2"]
    assert await stored(kafka, cluster) == {"n": 2}
