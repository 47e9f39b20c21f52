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
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from aiokafka import AIOKafkaProducer
from aiokafka.errors import ProducerFenced

from headrace.core import log
from headrace.core.offsets import OffsetStore, canonical_partition
from headrace.core.topiclog import Record, send_records
from headrace.runtime.errors import TaskFenced
from headrace.runtime.produce import BatchProducer, Outgoing, TopicLayout, per_record
from headrace.sdk.records import RecordMetadata, SourceRecord

ABORT_TIMEOUT_S = 10.0
"""How long a failed transaction may take to abort before it is left to Kafka (which aborts it
when the task starts again, or once the transaction times out)."""

A = TypeVar("A")
B = TypeVar("B")
Offsets = Sequence[tuple[Mapping[str, Any], Any]]
"""(source partition, offset) pairs."""
Landed = list[tuple[SourceRecord, RecordMetadata | None]]
"""Each record of a transaction with where it landed; None for one not produced."""


@dataclass
class _Open:
    opened_at: float
    latest: dict[str, tuple[Mapping[str, Any], Any]] = field(default_factory=dict)
    landed: Landed = field(default_factory=list)
    stored: bool = False  # its offsets were sent with its last records


class SourceTransactions:
    """Writes a source task's records and offsets in transactions of its producer."""

    def __init__(self, producer: AIOKafkaProducer, name: str) -> None:
        self._producer = producer
        self._batches = BatchProducer(producer)
        self._offsets: OffsetStore | None = None
        self._open: _Open | None = None
        self._name = name  # "task 0 of 'orders'", for errors
        self._log = log.get()

    async def bind(self, offsets: OffsetStore) -> None:
        """The offset store whose writes go through ``send`` (built after the producer), once
        it has loaded. The producer looks the offsets topic up now, not when a transaction's
        offsets are sent beside its first records: with aiokafka looking it up then, that
        first batch of records found no leader for its partition until it expired."""
        self._offsets = offsets
        await self._producer.partitions_for(offsets.topic)

    async def send(self, topic: str, records: list[Record]) -> list[tuple[int, int]]:
        """How the offset store appends: inside the open transaction."""
        return await send_records(self._producer, topic, records)

    @property
    def opened_at(self) -> float | None:
        """When the open transaction began (monotonic), or None when none is open."""
        return None if self._open is None else self._open.opened_at

    async def layouts(self, topics: set[str]) -> dict[str, TopicLayout]:
        return await self._batches.layouts(topics)

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
        outgoing = [e for e in encoded if e is not None]
        async with self._guard():
            if self._open is None:
                await self._producer.begin_transaction()
                self._open = _Open(time.monotonic())
            for partition, offset in latest:
                self._open.latest[canonical_partition(partition)] = (partition, offset)
            if last:
                produced, _ = await _both(
                    self._batches.produce(outgoing, layouts), self._store_offsets()
                )
                self._open.stored = True
            else:
                produced = await self._batches.produce(outgoing, layouts)
        receipts, stamps = produced
        if records:
            delivered = iter(per_record(receipts, stamps))
            self._open.landed += [
                # Where it landed: the topic its transforms routed it to.
                (r, None if e is None else RecordMetadata(e[0], *next(delivered)))
                for r, e in zip(records, encoded, strict=True)
            ]
        return len(outgoing)

    async def commit(self) -> Landed | None:
        """Stores the transaction's offsets in it and commits it; its records with where they
        landed, or None when no transaction was open."""
        if self._open is None:
            return None
        async with self._guard():
            if not self._open.stored:
                await self._store_offsets()
            await self._producer.commit_transaction()
        landed, self._open = self._open.landed, None
        return landed

    async def abort_keeping_offsets(self) -> Landed | None:
        """Aborts the transaction, then commits its offsets alone, so that its records are
        discarded and not polled again (the task asked for it); its records, none produced."""
        if self._open is None:
            return None
        opened = self._open
        async with self._guard():
            await self._producer.abort_transaction()
            await self._producer.begin_transaction()
            await self._store_offsets()
            await self._producer.commit_transaction()
        self._open = None
        return [(record, None) for record, _ in opened.landed]

    async def abandon(self) -> None:
        """Aborts the open transaction, if any, so nothing of it is ever read (a failure, or a
        stop that cannot commit); a failure to abort leaves it to Kafka."""
        if self._open is None:
            return
        self._open = None
        try:
            await asyncio.wait_for(self._producer.abort_transaction(), ABORT_TIMEOUT_S)
        except ProducerFenced:
            pass  # the newer instance's start aborted it already
        except Exception as exc:  # noqa: BLE001 - the failure's own error is the one to report
            self._log.warning("transaction_abort_failed", error=repr(exc))

    async def close(self) -> None:
        """Stops the producer (abandon an open transaction first)."""
        await self._producer.stop()

    async def _store_offsets(self) -> None:
        assert self._offsets is not None and self._open is not None
        if self._open.latest:
            await self._offsets.write(list(self._open.latest.values()))

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


async def _both(first: Awaitable[A], second: Awaitable[B]) -> tuple[A, B]:
    """Both results, once both are done; the first error, but only once neither runs on."""
    outcomes = await asyncio.gather(first, second, return_exceptions=True)
    for outcome in outcomes:
        if isinstance(outcome, BaseException):
            raise outcome
    return outcomes[0], outcomes[1]  # type: ignore[return-value]  # neither is an error
