"""A source task's transactions retried on retriable producer errors (KIP-298), without I/O: what
counts as retriable, where the records of a transaction written again landed, and what a reader
of committed records sees, with an in-memory producer that fails, or stalls, on request."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, cast

import pytest
from aiokafka.errors import (
    KafkaConnectionError,
    KafkaTimeoutError,
    MessageSizeTooLargeError,
    NotEnoughReplicasError,
    ProducerFenced,
    RequestTimedOutError,
    TopicAuthorizationFailedError,
    UnknownError,
)
from aiokafka.producer.message_accumulator import BatchBuilder
from structlog.testing import capture_logs

from headrace.components.errorpolicy import TaskFenced
from headrace.components.retry import RetryPolicy
from headrace.core.model.offsets import (
    Marker,
    Pending,
    decode_pending,
    is_pending_key,
    pending_key,
)
from headrace.core.settings import Settings
from headrace.core.storage.stores import OffsetStore
from headrace.core.storage.topiclog import MemoryTopic, memory_logs
from headrace.runtime.kafka import MAX_BATCH_BYTES
from headrace.runtime.source import transactions as transactions_module
from headrace.runtime.source.produce import Delivered, Outgoing, TopicLayout
from headrace.runtime.source.transactions import Segment, SourceTransactions, landed, retriable
from headrace.sdk.errors import RetriableError
from headrace.sdk.records import RecordMetadata, SourceRecord
from tests.support import batch_records, eventually

PARTITION = {"stream": "s"}
LAYOUTS = {"out": TopicLayout((0,), (0,))}
RETRY = RetryPolicy(60_000, 1)  # waits of 1 ms: the tests are about what is written, not when


@pytest.mark.parametrize(
    "error",
    [
        NotEnoughReplicasError(),
        RequestTimedOutError(),
        KafkaConnectionError(),
        KafkaTimeoutError(),  # aiokafka calls it not retriable; a timeout is worth a retry
    ],
)
def test_what_the_kafka_client_calls_retriable_and_timeouts_are_retried(error: Exception) -> None:
    assert retriable(error)


@pytest.mark.parametrize(
    "error",
    [
        ProducerFenced(),
        TaskFenced("fenced"),
        MessageSizeTooLargeError(),
        TopicAuthorizationFailedError(),
        UnknownError(),  # how aiokafka names the broker's PRODUCER_FENCED
        RetriableError("the task's own: not the producer's"),
        AssertionError("aiokafka's producer is fatally failed"),
    ],
)
def test_a_fenced_producer_and_other_errors_are_not(error: Exception) -> None:
    assert not retriable(error)


def record(i: int) -> SourceRecord:
    return SourceRecord(PARTITION, {"n": i}, "out", f"v{i}")


def encoded(r: SourceRecord) -> Outgoing:
    return ("out", None, None, str(r.value).encode(), [], None)


def segment(*numbers: int, told: bool = True, skip: frozenset[int] = frozenset()) -> Segment:
    records = [record(i) for i in numbers]
    encodings = [None if i in skip else encoded(r) for i, r in zip(numbers, records, strict=True)]
    return Segment(records if told else [], encodings, LAYOUTS)


def test_records_written_again_are_told_where_they_landed_last() -> None:
    segments = [segment(0, 1, skip=frozenset({1})), segment(2, 3, told=False), segment(4)]
    delivered = iter([Delivered(0, 10 + n, 5) for n in range(4)])  # v0, v2, v3, v4
    found = landed(segments, delivered)

    assert [(r.value, m) for r, m in found] == [
        ("v0", RecordMetadata("out", 0, 10, 5)),
        ("v1", None),  # skipped: not produced
        ("v4", RecordMetadata("out", 0, 13, 5)),  # v2 and v3 landed, untold, at 11 and 12
    ]
    assert next(delivered, None) is None


@dataclass
class Transaction:
    records: list[tuple[str, int, bytes]] = field(default_factory=list)  # topic, offset, value
    state: str = "open"


class FakeProducer:
    """A transactional producer of one partition per topic, in memory. ``failures`` are what
    the next batches meet, in turn: an error fails the batch; ``STALL`` holds it, as aiokafka
    holds a batch the broker refuses, until ``recover``; the abort of its transaction waits
    for it too. ``commit_failures`` likewise for commits."""

    STALL = "stall"

    def __init__(self) -> None:
        self.transactions: list[Transaction] = []
        self.next_offset: dict[str, int] = {}
        self.failures: list[Exception | str] = []
        self.commit_failures: list[Exception | str] = []
        self.recovered = asyncio.Event()
        self.stalled: list[tuple[asyncio.Future[Any], Transaction, str, list[bytes]]] = []

    @property
    def open(self) -> Transaction:
        assert self.transactions and self.transactions[-1].state == "open"
        return self.transactions[-1]

    def committed(self, topic: str = "out") -> list[bytes]:
        """What a read_committed consumer of ``topic`` reads, in offset order."""
        records = [r for t in self.transactions if t.state == "committed" for r in t.records]
        return [value for where, _, value in sorted(records) if where == topic]

    async def partitions_for(self, topic: str) -> set[int]:
        return {0}

    async def begin_transaction(self) -> None:
        assert not self.transactions or self.transactions[-1].state != "open"
        self.transactions.append(Transaction())

    def create_batch(self) -> BatchBuilder:
        return BatchBuilder(MAX_BATCH_BYTES, 0, is_transactional=1)  # aiokafka's own

    async def send_batch(self, batch: BatchBuilder, topic: str, *, partition: int) -> Any:
        values = [value for *_, value, _ in batch_records(batch)]
        assert None not in values  # the tests send no record without a value
        sent: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        failure = self.failures.pop(0) if self.failures else None
        if isinstance(failure, Exception):
            sent.set_exception(failure)
        elif failure == self.STALL:
            self.stalled.append((sent, self.open, topic, cast(list[bytes], values)))
        else:
            sent.set_result(self._append(self.open, topic, cast(list[bytes], values)))
        return sent

    def _append(self, transaction: Transaction, topic: str, values: list[bytes]) -> Any:
        base = self.next_offset.get(topic, 0)
        self.next_offset[topic] = base + len(values)
        transaction.records += [(topic, base + n, value) for n, value in enumerate(values)]
        return Acknowledged(base)

    def recover(self) -> None:
        """The broker takes the held batches, into the transaction they were sent in."""
        for sent, transaction, topic, values in self.stalled:
            sent.set_result(self._append(transaction, topic, values))
        self.stalled.clear()
        self.recovered.set()

    async def commit_transaction(self) -> None:
        failure = self.commit_failures.pop(0) if self.commit_failures else None
        if isinstance(failure, Exception):
            raise failure
        if failure == self.STALL:
            await self.recovered.wait()
        self.open.state = "committed"

    async def abort_transaction(self) -> None:
        if self.stalled:
            await self.recovered.wait()
        self.open.state = "aborted"

    async def stop(self) -> None:
        pass


@dataclass
class Acknowledged:
    offset: int
    timestamp: int = -1  # the topic keeps the producer's timestamps


class Warnings:
    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def warning(self, event: str, **fields: Any) -> None:
        self.events.append({"event": event, **fields})

    def retries(self) -> list[dict[str, Any]]:
        return [e for e in self.events if e["event"] == "transaction_retried"]


@pytest.fixture
def offsets_topic() -> MemoryTopic:
    return MemoryTopic("offsets")


async def transactions_on(
    producer: FakeProducer,
    offsets_topic: MemoryTopic,
    policy: RetryPolicy = RETRY,
    owner: str | None = None,
) -> tuple[SourceTransactions, Warnings]:
    """``owner``: the task's transactional id, for offsets kept off Kafka (two phases)."""
    heard = Warnings()
    fake: Any = producer
    transactions = SourceTransactions(fake, "task 0 of 'src'", policy, heard)
    store = store_on(offsets_topic, owner)
    await store.load()
    await transactions.bind(store)
    return transactions, heard


async def write(
    transactions: SourceTransactions, *numbers: int, last: bool = True, told: bool = True
) -> int:
    records = [record(i) for i in numbers]
    return await transactions.write(
        records if told else [],
        [encoded(r) for r in records],
        [(PARTITION, r.source_offset) for r in records[-1:]],
        LAYOUTS,
        last=last,
    )


def store_on(offsets_topic: MemoryTopic, owner: str | None = None) -> OffsetStore:
    return OffsetStore(Settings(cluster="t"), "src", logs=memory_logs(offsets_topic), owner=owner)


def stored(topic: MemoryTopic) -> list[bytes | None]:
    return [r.value for r in topic.records]


async def test_a_retriable_failure_writes_the_whole_transaction_again(
    offsets_topic: MemoryTopic,
) -> None:
    producer = FakeProducer()
    transactions, heard = await transactions_on(producer, offsets_topic)
    await write(transactions, 0, 1, last=False)  # an interval transaction: two polls
    producer.failures = [NotEnoughReplicasError()]
    await write(transactions, 2, last=True)
    found = await transactions.commit()

    # The first attempt (v0, v1 written, v2 refused) was aborted; the second holds all three.
    assert [t.state for t in producer.transactions] == ["aborted", "committed"]
    assert producer.committed() == [b"v0", b"v1", b"v2"]
    assert found is not None
    assert [(r.value, m.offset if m else None) for r, m in found] == [
        ("v0", 2),  # where they landed in the transaction that committed
        ("v1", 3),
        ("v2", 4),
    ]
    [retry] = heard.retries()
    assert retry["attempt"] == 1 and retry["records"] == 3
    assert retry["error_class"] == "aiokafka.errors.NotEnoughReplicasError"
    assert stored(offsets_topic)[-1] == b'{"n":2}'
    assert transactions.opened_at is None


async def test_a_retriable_commit_failure_writes_it_again_before_committing(
    offsets_topic: MemoryTopic,
) -> None:
    producer = FakeProducer()
    transactions, heard = await transactions_on(producer, offsets_topic)
    await write(transactions, 0, 1)
    producer.commit_failures = [KafkaConnectionError()]
    found = await transactions.commit()

    assert [t.state for t in producer.transactions] == ["aborted", "committed"]
    assert producer.committed() == [b"v0", b"v1"]
    assert found is not None and [m.offset for _, m in found if m] == [2, 3]
    assert len(heard.retries()) == 1


async def test_without_retries_the_error_fails_the_step_and_nothing_is_committed(
    offsets_topic: MemoryTopic,
) -> None:
    producer = FakeProducer()
    transactions, heard = await transactions_on(producer, offsets_topic, RetryPolicy(0))
    producer.failures = [NotEnoughReplicasError()]

    with pytest.raises(NotEnoughReplicasError):
        await write(transactions, 0, 1)
    assert [t.state for t in producer.transactions] == ["aborted"]
    assert producer.committed() == [] and heard.retries() == []
    assert await transactions.commit() is None  # nothing is left open


@pytest.mark.parametrize("error", [ProducerFenced(), MessageSizeTooLargeError()])
async def test_a_fenced_producer_or_an_error_that_is_not_retriable_is_not_retried(
    offsets_topic: MemoryTopic, error: Exception
) -> None:
    producer = FakeProducer()
    transactions, heard = await transactions_on(producer, offsets_topic)
    producer.failures = [error]
    expected = TaskFenced if isinstance(error, ProducerFenced) else type(error)
    with pytest.raises(expected):
        await write(transactions, 0)
    assert len(producer.transactions) == 1 and heard.retries() == []


@pytest.fixture
def short_stall(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(transactions_module, "STALL_TIMEOUT_S", 0.05)


@pytest.mark.usefixtures("short_stall")
async def test_a_stalled_write_fails_in_time_and_is_written_again_once_the_abort_ends(
    offsets_topic: MemoryTopic,
) -> None:
    producer = FakeProducer()
    transactions, heard = await transactions_on(producer, offsets_topic)
    producer.failures = [FakeProducer.STALL]

    writing = asyncio.create_task(write(transactions, 0, 1, told=False))
    # The write stalls; each next try waits for the abort, which waits for the held batch.
    await eventually("three tries", lambda: len(heard.retries()) >= 3, 10)
    assert not writing.done() and producer.committed() == []
    producer.recover()
    assert await writing == 2
    assert await transactions.commit() == []  # the task is not told of each record

    # The held batch landed in the aborted transaction: read once, from the one that committed.
    assert [t.state for t in producer.transactions] == ["aborted", "committed"]
    assert producer.transactions[0].records == [("out", 0, b"v0"), ("out", 1, b"v1")]
    assert producer.committed() == [b"v0", b"v1"]
    assert {r["error_class"] for r in heard.retries()} == {"aiokafka.errors.KafkaTimeoutError"}
    assert "within 0.05 s" in heard.retries()[0]["error"]


@pytest.mark.usefixtures("short_stall")
async def test_a_stalled_commit_is_waited_for_again_never_written_again(
    offsets_topic: MemoryTopic,
) -> None:
    producer = FakeProducer()
    transactions, heard = await transactions_on(producer, offsets_topic)
    await write(transactions, 0)
    producer.commit_failures = [FakeProducer.STALL]

    committing = asyncio.create_task(transactions.commit())
    await eventually("two tries", lambda: len(heard.retries()) >= 2, 10)
    producer.recover()
    found = await committing

    assert [t.state for t in producer.transactions] == ["committed"]  # one, never aborted
    assert found is not None and [m.offset for _, m in found if m] == [0]
    assert stored(offsets_topic) == [b'{"n":0}']  # the offsets were written once


async def test_a_task_that_aborts_keeps_its_offsets_also_after_a_retry(
    offsets_topic: MemoryTopic,
) -> None:
    producer = FakeProducer()
    transactions, heard = await transactions_on(producer, offsets_topic)
    await write(transactions, 0, 1, last=False)
    producer.commit_failures = [KafkaConnectionError()]
    dropped = await transactions.abort_keeping_offsets()

    assert dropped is not None
    assert [(r.value, m) for r, m in dropped] == [("v0", None), ("v1", None)]
    # The task's abort, then the offsets-only transaction: failed once, then committed.
    assert [t.state for t in producer.transactions] == ["aborted", "aborted", "committed"]
    assert producer.committed() == [] and producer.transactions[-1].records == []
    assert stored(offsets_topic)[-1] == b'{"n":1}' and len(heard.retries()) == 1


# -- Offsets kept off Kafka: pending before the commit, settled after ---------------------------

OWNER = "t-src-0"


def pending_in(topic: MemoryTopic) -> list[Pending | None]:
    return [decode_pending(r.key, r.value)[2] for r in topic.records if is_pending_key(r.key)]


async def test_offsets_off_kafka_are_pending_at_the_commit_and_settled_after(
    offsets_topic: MemoryTopic,
) -> None:
    producer = FakeProducer()
    producer.next_offset["out"] = 40
    transactions, _ = await transactions_on(producer, offsets_topic, owner=OWNER)
    at_commit: list[list[Pending | None]] = []
    commit = producer.commit_transaction

    async def commit_seen() -> None:
        at_commit.append(pending_in(offsets_topic))
        await commit()

    producer.commit_transaction = commit_seen  # type: ignore[method-assign]
    await write(transactions, 0, last=False)  # v0 at 40, in the first try
    producer.failures = [NotEnoughReplicasError()]  # which is aborted: v0 at 41, v1 at 42
    await write(transactions, 1)
    await transactions.commit()

    # Pending at the commit: the offsets, and where a record of the try that committed landed.
    assert producer.committed() == [b"v0", b"v1"]
    marker = Marker("out", 0, 41)
    assert at_commit == [[Pending("src", OWNER, marker, ((PARTITION, {"n": 1}),))]]
    # Settled after it: the offset stored, the pending record dropped.
    assert pending_in(offsets_topic)[-1] is None
    reread = store_on(offsets_topic, OWNER)
    await reread.load()
    assert reread.offset(PARTITION) == {"n": 1} and reread.pending is None


@pytest.mark.parametrize("outcome", [True, False], ids=["committed", "aborted"])
async def test_a_transaction_left_pending_is_settled_by_its_outcome_at_the_next_start(
    offsets_topic: MemoryTopic, outcome: bool
) -> None:
    producer = FakeProducer()
    transactions, _ = await transactions_on(producer, offsets_topic, owner=OWNER)
    await write(transactions, 0)
    await transactions.commit()
    producer.commit_failures = [UnknownError()]  # the run stops between its two phases
    await write(transactions, 1, 2)
    with pytest.raises(UnknownError):
        await transactions.commit()

    asked: list[Marker] = []

    async def committed(marker: Marker) -> bool:
        asked.append(marker)
        return outcome

    other = store_on(offsets_topic, "t-src-1")  # another task's store has nothing pending
    await other.load()
    assert other.pending is None
    restarted = store_on(offsets_topic, OWNER)
    await restarted.load()
    assert restarted.offset(PARTITION) == {"n": 0}
    await restarted.resolve_with(committed)

    assert asked == [Marker("out", 0, 1)]
    assert restarted.offset(PARTITION) == ({"n": 2} if outcome else {"n": 0})
    assert restarted.pending is None
    again = store_on(offsets_topic, OWNER)
    await again.load()
    assert (again.offset(PARTITION), again.pending) == (restarted.offset(PARTITION), None)


async def test_offsets_an_operator_sets_are_not_set_back_by_a_pending_transaction(
    offsets_topic: MemoryTopic,
) -> None:
    producer = FakeProducer()
    transactions, _ = await transactions_on(producer, offsets_topic, owner=OWNER)
    producer.commit_failures = [UnknownError()]  # left pending, though it may have committed
    await write(transactions, 0, 1)
    with pytest.raises(UnknownError):
        await transactions.commit()

    admin = store_on(offsets_topic)  # KIP-875's reset, on the stopped connector
    await admin.load()
    await admin.override([(PARTITION, None)])

    restarted = store_on(offsets_topic, OWNER)
    await restarted.load()
    assert restarted.pending is None  # dropped with the reset, in the same write

    async def committed(marker: Marker) -> bool:
        raise AssertionError("nothing is left to ask about")

    await restarted.resolve_with(committed)
    assert restarted.offset(PARTITION) is None


async def test_another_connector_s_malformed_pending_record_is_not_this_one_s_concern(
    offsets_topic: MemoryTopic,
) -> None:
    offsets_topic.append(pending_key("other", "t-other-0").decode(), b"not json")
    with capture_logs() as heard:
        store = store_on(offsets_topic, OWNER)
        await store.load()
    assert [e for e in heard if e["event"] == "log_record_skipped"] == []
    assert store.pending is None and store.offset(PARTITION) is None

    offsets_topic.append(pending_key("src", OWNER).decode(), b"not json")  # its own: an error
    with capture_logs() as heard:
        await store_on(offsets_topic, OWNER).load()
    (skipped,) = [e for e in heard if e["event"] == "log_record_skipped"]
    assert "malformed pending offsets record" in skipped["error"]
