"""One source task's Kafka transactions: the records it produced and the offsets they carry.

The transactional id is the task's own, the same on every worker (``kafka.task_client_id``).
Starting the producer fences every earlier instance of the task: a zombie (a task whose worker
was cut off and replaced) has its open transaction aborted and its next write refused, so it
can never add a record once its replacement has started. Its loop then ends with
``TaskFenced``.

A transaction holds one or more segments of polled records (``boundaries.py`` says where it
ends). Committing it writes the latest source offset of every source partition it holds to the
offsets topic, in the same transaction, then commits: readers of either topic read committed
records only, so the records and their offsets appear together or not at all. Any failure
aborts the open transaction whole.

Retries (KIP-298's ``errors.retry.*``, as for ``poll`` and ``put``): when a step of the
transaction (writing a segment, committing) fails with an error the Kafka client calls
retriable (``retriable``), the transaction is aborted and, after the policy's wait, written
again whole in a new one: every segment so far with its offsets, then the step. A reader of
committed records never sees the aborted attempt, and the task is told (``Landed``) only where
its records landed in the transaction that committed. A fenced producer is never retried, nor
any other error; when the policy's time is up the task fails with the last error.

aiokafka's transactional producer itself sends a refused batch again, forever, and never fails
its future; an abort or a commit waits for such a batch. So a step that makes no progress for
``STALL_TIMEOUT_S`` fails with ``KafkaTimeoutError``, which is retried like any retriable error
(only when the policy retries at all: without, the task waits as long as Kafka takes, as before);
the next try first waits (as long again) for the abort of the stalled transaction. A commit
that stalls is waited for again, never written again: it may yet commit, and its records
written into another transaction would then be read twice.

What that costs: to write it again, the open transaction keeps every record it holds, encoded
(about the bytes produced, plus a tuple per record), and the task's records when the task is
told of each, until it commits. With ``transaction.boundary=poll`` that is one poll's; with
``interval``, all that is polled in one interval (the interval times the source's rate); with
``connector``, all since the task last ended a transaction, bounded only by the task.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeGuard, TypeVar

from aiokafka import AIOKafkaProducer
from aiokafka.errors import KafkaError, KafkaTimeoutError, ProducerFenced, RequestTimedOutError

from headrace.components.errorpolicy import TaskFenced, qualified_name
from headrace.components.retry import RetryPolicy, retrying_on
from headrace.core.model.offsets import Marker, canonical_partition
from headrace.core.observability import log
from headrace.core.storage.stores import OffsetStore
from headrace.core.storage.topiclog import Record, send_records
from headrace.runtime.source.produce import (
    BatchProducer,
    Delivered,
    Outgoing,
    Receipt,
    TopicLayout,
    per_record,
)
from headrace.sdk.records import RecordMetadata, SourceRecord

ABORT_TIMEOUT_S = 10.0
"""How long a failed transaction may take to abort before it is left to Kafka (which aborts it
when the task starts again, or once the transaction times out)."""

STALL_TIMEOUT_S = 40.0
"""How long a step of a transaction may make no progress (no batch acknowledged, the commit or
the abort not done) before it fails with ``KafkaTimeoutError``. aiokafka's default
``request_timeout_ms``, which ``kafka.producer`` keeps: one request may take that long, so a
step slower than it is the producer trying again, not waiting on a slow broker."""

A = TypeVar("A")
B = TypeVar("B")
Offsets = Sequence[tuple[Mapping[str, Any], Any]]
"""(source partition, offset) pairs."""
Landed = list[tuple[SourceRecord, RecordMetadata | None]]
"""Each record of a transaction with where it landed; None for one not produced."""
OnRetry = Callable[[int, Exception, float], None]


def retriable(error: Exception) -> TypeGuard[Exception]:
    """Whether a step of a transaction that failed with ``error`` is worth writing again: the
    Kafka client calls the error retriable, or it is a timeout; never when the producer was
    fenced (a newer instance of the task writes now)."""
    if isinstance(error, ProducerFenced | TaskFenced):
        return False
    if isinstance(error, KafkaTimeoutError | RequestTimedOutError):
        return True
    return isinstance(error, KafkaError) and bool(error.retriable)


@dataclass(frozen=True)
class Segment:
    """Polled records as a transaction holds them, to write them again if it must."""

    records: Sequence[SourceRecord]  # the task's, when it is told of each; else empty
    encoded: Sequence[Outgoing | None]  # each record ready for Kafka; None for a skipped one
    layouts: Mapping[str, TopicLayout]  # of every topic they go to

    def outgoing(self) -> list[Outgoing]:
        return [e for e in self.encoded if e is not None]


def landed(segments: Sequence[Segment], delivered: Iterator[Delivered]) -> Landed:
    """The told records of ``segments`` with where each landed, given where their produced
    records landed (``delivered``, in order: of every segment, told or not)."""
    found: Landed = []
    for segment in segments:
        if not segment.records:  # the task is not told: pass over its records' places
            produced = len(segment.outgoing())
            next(itertools.islice(delivered, produced, produced), None)
            continue
        found += [
            # Where it landed: the topic its transforms routed it to.
            (r, None if e is None else RecordMetadata(e[0], *next(delivered)))
            for r, e in zip(segment.records, segment.encoded, strict=True)
        ]
    return found


@dataclass
class _Open:
    """The open transaction: all it holds, and how much of it Kafka's transaction holds now
    (none after an abort, until it is written again)."""

    opened_at: float
    latest: dict[str, tuple[Mapping[str, Any], Any]] = field(default_factory=dict)
    segments: list[Segment] = field(default_factory=list)
    begun: bool = False  # Kafka's transaction is open
    written: int = 0  # how many of the segments it holds
    stored: bool = False  # it holds the offsets (sent with the last records)
    landed: Landed = field(default_factory=list)  # of the written segments
    marker: Marker | None = None  # where one record Kafka's transaction holds landed

    def unwritten(self) -> list[Segment]:
        return self.segments[self.written :]

    def mark(self, receipts: Sequence[Receipt]) -> None:
        if self.marker is None and receipts:
            first = receipts[0]
            self.marker = Marker(first.topic, first.partition, first.base_offset)

    def abort(self) -> None:
        """Kafka's transaction is aborted: it holds nothing of this one any more."""
        self.begun, self.written, self.stored, self.landed = False, 0, False, []
        self.marker = None


class ProducerWrites:
    """What a source task's writes share, with transactions or without: its producer, the
    retry policy (``logger`` hears of each retry), and the offset store it writes through."""

    def __init__(
        self,
        producer: AIOKafkaProducer,
        name: str,
        policy: RetryPolicy | None = None,
        logger: Any = None,
    ) -> None:
        self._producer = producer
        self._policy = policy or RetryPolicy()
        # Without retries there is no bound: the task waits for Kafka as long as it takes, as
        # it always did, and as Connect's producer does (its delivery.timeout.ms is unbounded).
        self._stall_s = STALL_TIMEOUT_S if self._policy.timeout_ms != 0 else None
        self._batches = BatchProducer(producer, self._stall_s)
        self._offsets: OffsetStore | None = None
        self._name = name  # "task 0 of 'orders'", for errors
        self._log = logger or log.get()

    async def bind(self, offsets: OffsetStore) -> None:
        """The offset store whose writes go through ``send`` (built after the producer), once
        it has loaded. The producer looks the offsets topic up now, not when a transaction's
        offsets are sent beside its first records: with aiokafka looking it up then, that
        first batch of records found no leader for its partition until it expired."""
        self._offsets = offsets
        await self._producer.partitions_for(offsets.topic)

    @property
    def _two_phase(self) -> bool:
        """The offsets cannot be in the transaction: they are stored in two phases, pending
        before the commit and settled after (``OffsetStore.prepare``)."""
        return self._offsets is not None and self._offsets.two_phase

    async def send(self, topic: str, records: list[Record]) -> list[tuple[int, int]]:
        """How the offset store appends: with the task's producer (inside the open
        transaction, if it writes in transactions)."""
        return await send_records(self._producer, topic, records)

    async def layouts(self, topics: set[str]) -> dict[str, TopicLayout]:
        return await self._batches.layouts(topics)

    async def close(self) -> None:
        """Stops the producer (abandon an open transaction first)."""
        await self._producer.stop()


class SourceTransactions(ProducerWrites):
    """Writes a source task's records and offsets in transactions of its producer, each step
    retried as ``policy`` says; ``logger`` hears of each retry (``transaction_retried``)."""

    def __init__(
        self,
        producer: AIOKafkaProducer,
        name: str,
        policy: RetryPolicy | None = None,
        logger: Any = None,
    ) -> None:
        super().__init__(producer, name, policy, logger)
        self._open: _Open | None = None
        self._aborting: asyncio.Future[None] | None = None  # an abort Kafka has not ended yet
        self._committing: asyncio.Future[None] | None = None  # a commit Kafka has not ended yet

    @property
    def opened_at(self) -> float | None:
        """When the open transaction began (monotonic), or None when none is open."""
        return None if self._open is None else self._open.opened_at

    async def write(
        self,
        records: Sequence[SourceRecord],
        encoded: Sequence[Outgoing | None],
        latest: Offsets,
        layouts: Mapping[str, TopicLayout],
        *,
        last: bool = False,
    ) -> int:
        """Produces a segment's records (``encoded``, None for a skipped one) in the open
        transaction, opening one if needed; ``records`` are the task's, when it is told of each
        (else empty). Returns how many were produced.

        ``last`` says the transaction commits after this segment: its offsets are then sent
        with the records, so that Kafka adds both topics to the transaction, and takes both
        writes, in one round trip each."""
        if self._open is None:
            self._open = _Open(time.monotonic())
        for partition, offset in latest:
            self._open.latest[canonical_partition(partition)] = (partition, offset)
        segment = Segment(records, encoded, layouts)
        self._open.segments.append(segment)
        await self._retried(lambda: self._catch_up(offsets=last))
        return len(segment.outgoing())

    async def commit(self) -> Landed | None:
        """Stores the transaction's offsets in it and commits it; its records with where they
        landed, or None when no transaction was open."""
        if self._open is None:
            return None
        await self._retried(self._commit_once)
        found, self._open = self._open.landed, None
        if self._offsets is not None and self._offsets.two_phase:
            await self._offsets.settle()
        return found

    async def abort_keeping_offsets(self) -> Landed | None:
        """Aborts the transaction, then commits its offsets alone, so that its records are
        discarded and not polled again (the task asked for it); its records, none produced."""
        if self._open is None:
            return None
        opened = self._open
        dropped: Landed = [(r, None) for segment in opened.segments for r in segment.records]
        self._abort_in_kafka()
        opened.segments.clear()  # what commits next is the offsets alone
        await self.commit()
        return dropped

    async def abandon(self) -> None:
        """Aborts the open transaction, if any, so nothing of it is ever read (a failure, or a
        stop that cannot commit); a failure to abort leaves it to Kafka. A commit under way is
        left to end as it will: its records and offsets are read together or not at all."""
        if self._open is None and self._aborting is None:
            return
        if self._committing is not None and not self._committing.done():
            self._log.warning("transaction_commit_unknown", transaction=self._name)
            self._open = self._committing = None
            return
        self._abort_in_kafka()
        self._open = None
        aborting, self._aborting = self._aborting, None
        if aborting is None:
            return
        try:
            await asyncio.wait_for(asyncio.shield(aborting), ABORT_TIMEOUT_S)
        except ProducerFenced:
            pass  # the newer instance's start aborted it already
        except Exception as exc:  # noqa: BLE001 - the failure's own error is the one to report
            self._log.warning("transaction_abort_failed", error=repr(exc))

    async def _catch_up(self, *, offsets: bool) -> None:
        """Writes what of the open transaction Kafka's does not hold: the last segment, or
        after an abort all of them, in a new transaction; with ``offsets``, the offsets too."""
        opened = self._open
        assert opened is not None
        if self._aborting is not None:
            await self._within(self._aborting, f"the abort of {self._name}'s failed transaction")
            self._aborting = None
        if not opened.begun:
            await self._producer.begin_transaction()
            opened.begun = True
        todo = opened.unwritten()
        produced = self._batches.produce(
            [e for segment in todo for e in segment.outgoing()],
            {topic: tl for segment in todo for topic, tl in segment.layouts.items()},
        )
        if offsets and not opened.stored and not self._two_phase:
            (receipts, stamps), _ = await _both(produced, self._store_offsets())
            opened.stored = True
        else:
            receipts, stamps = await produced
        opened.mark(receipts)
        if offsets and not opened.stored:  # in two phases: pending, naming where a record is
            await self._store_offsets()
            opened.stored = True
        if any(segment.records for segment in todo):
            opened.landed += landed(todo, iter(per_record(receipts, stamps)))
        opened.written = len(opened.segments)

    async def _commit_once(self) -> None:
        """Writes what Kafka's transaction lacks, then commits it, or waits again for a commit
        that did not end in time."""
        if self._committing is None:
            await self._catch_up(offsets=True)
            self._committing = _read_once(self._producer.commit_transaction())
        await self._within(self._committing, f"the commit of {self._name}'s transaction")
        self._committing = None
        assert self._open is not None
        self._open.begun = False

    async def _retried(self, step: Callable[[], Awaitable[None]]) -> None:
        """Runs ``step`` on the open transaction, after each retriable failure aborting it and
        writing it again whole, as the policy says; the transaction is abandoned when the step
        fails for good."""

        async def attempt() -> None:
            try:
                await step()
            except Exception as exc:
                if retriable(exc):
                    self._abort_in_kafka()
                raise

        async with self._guard():
            await retrying_on(retriable, attempt, self._policy, self._on_retry)

    def _abort_in_kafka(self) -> None:
        """Starts aborting Kafka's transaction, if open (the next step waits for it): nothing
        written so far is ever read; the open transaction is written again from the start.
        Not while a commit is under way: that one is waited for, not written again."""
        if self._committing is not None and not self._committing.done():
            return
        self._committing = None
        opened = self._open
        if opened is not None and opened.begun:
            self._aborting = _read_once(self._producer.abort_transaction())
        if opened is not None:
            opened.abort()

    def _on_retry(self, attempt: int, error: Exception, wait_s: float) -> None:
        segments = [] if self._open is None else self._open.segments
        self._log.warning(
            "transaction_retried",
            attempt=attempt,
            wait_s=wait_s,
            error=str(error),
            error_class=qualified_name(type(error)),
            records=sum(len(segment.outgoing()) for segment in segments),  # to write again
        )

    async def _within(self, future: asyncio.Future[A], what: str) -> A:
        """``future``'s result; ``KafkaTimeoutError`` when it is not done within the stall
        bound (it goes on, for the next try to wait for again)."""
        done, _ = await asyncio.wait({future}, timeout=self._stall_s)
        if not done:
            assert self._stall_s is not None  # unbounded, it is done
            raise KafkaTimeoutError(
                f"{what} did not end within {self._stall_s:g} s: Kafka does not answer, or "
                "refuses the records it waits for"
            )
        return future.result()

    async def _store_offsets(self) -> None:
        assert self._offsets is not None and self._open is not None
        if not self._open.latest:
            return
        latest = list(self._open.latest.values())
        storing = (
            self._offsets.prepare(latest, self._open.marker)
            if self._two_phase
            else self._offsets.write(latest)
        )
        try:
            await asyncio.wait_for(storing, self._stall_s)
        except TimeoutError:
            raise KafkaTimeoutError(
                f"Kafka did not take {self._name}'s source offsets within {self._stall_s:g} s"
            ) from None

    @contextlib.asynccontextmanager
    async def _guard(self) -> AsyncIterator[None]:
        """Aborts the open transaction on any failure; a fenced producer's is TaskFenced."""
        try:
            yield
        except BaseException as exc:
            await self.abandon()
            if isinstance(exc, ProducerFenced):
                raise TaskFenced(
                    f"{self._name} was fenced: another instance of it started, so this one "
                    "writes nothing more"
                ) from exc
            raise


def _read_once(work: Awaitable[None]) -> asyncio.Future[None]:
    """``work`` under way on its own, its failure read even when nobody waits for it again."""
    future = asyncio.ensure_future(work)
    future.add_done_callback(lambda f: f.cancelled() or f.exception())
    return future


async def _both(first: Awaitable[A], second: Awaitable[B]) -> tuple[A, B]:
    """Both results, once both are done; the first error, but only once neither runs on."""
    outcomes = await asyncio.gather(first, second, return_exceptions=True)
    for outcome in outcomes:
        if isinstance(outcome, BaseException):
            raise outcome
    return outcomes[0], outcomes[1]  # type: ignore[return-value]  # neither is an error
