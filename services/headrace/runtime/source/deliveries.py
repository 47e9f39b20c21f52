"""One source task's writes without transactions: at least once, as on a Kafka Connect worker
whose ``exactly.once.source.support`` is ``disabled`` or ``preparing``.

Each segment of polled records is produced and acknowledged before the offsets it carries are
written to the offsets topic, after every poll: a task that crashes between the two polls those
records again after its restart, and they are written twice; none is lost. Nothing fences an
earlier instance of the task: a zombie (its worker cut off and replaced) may write on until it
notices, as on a Connect worker without exactly-once support.

A step that fails with an error the Kafka client calls retriable is tried again as
``errors.retry.*`` say, its records produced again whole: some of them may be written twice.
The interface is ``SourceTransactions``'s, so the loop runs either; a transaction here is the
records written since the offsets were last stored.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from aiokafka import AIOKafkaProducer

from headrace.components.errorpolicy import qualified_name
from headrace.components.retry import RetryPolicy, retrying_on
from headrace.core.model.offsets import canonical_partition
from headrace.runtime.source.produce import Outgoing, TopicLayout, per_record
from headrace.runtime.source.transactions import (
    Landed,
    Offsets,
    ProducerWrites,
    Segment,
    landed,
    retriable,
)
from headrace.sdk.records import SourceRecord


class SourceDeliveries(ProducerWrites):
    """Writes a source task's records, then their offsets, with its producer (idempotent, not
    transactional); each step retried as ``policy`` says, ``logger`` told of each retry
    (``delivery_retried``)."""

    def __init__(
        self,
        producer: AIOKafkaProducer,
        name: str,
        policy: RetryPolicy | None = None,
        logger: Any = None,
    ) -> None:
        super().__init__(producer, name, policy, logger)
        self._opened_at: float | None = None
        self._latest: dict[str, tuple[Mapping[str, Any], Any]] = {}
        self._landed: Landed = []

    @property
    def opened_at(self) -> float | None:
        """When the first records not yet covered by stored offsets were written."""
        return self._opened_at

    async def write(
        self,
        records: Sequence[SourceRecord],
        encoded: Sequence[Outgoing | None],
        latest: Offsets,
        layouts: Mapping[str, TopicLayout],
        *,
        last: bool = False,
    ) -> int:
        """Produces a segment's records (``encoded``, None for a skipped one) and waits until
        Kafka acknowledged them; ``records`` are the task's, when it is told of each. Their
        offsets are stored at the next ``commit``. Returns how many were produced."""
        if self._opened_at is None:
            self._opened_at = time.monotonic()
        segment = Segment(records, encoded, layouts)
        outgoing = segment.outgoing()
        receipts, stamps = await retrying_on(
            retriable,
            lambda: self._batches.produce(outgoing, layouts),
            self._policy,
            self._on_retry,
        )
        if records:
            self._landed += landed([segment], iter(per_record(receipts, stamps)))
        for partition, offset in latest:
            self._latest[canonical_partition(partition)] = (partition, offset)
        return len(outgoing)

    async def commit(self) -> Landed | None:
        """Stores the offsets of every record written since the last commit; those records with
        where they landed, or None when none was written."""
        if self._opened_at is None:
            return None
        offsets = self._offsets
        assert offsets is not None
        if self._latest:
            latest = list(self._latest.values())
            await retrying_on(
                retriable, lambda: offsets.write(latest), self._policy, self._on_retry
            )
        found = self._landed
        self._opened_at, self._latest, self._landed = None, {}, []
        return found

    async def abort_keeping_offsets(self) -> Landed | None:
        """Never asked for: a task ends its own transactions only with exactly-once support
        (``transaction.boundary=connector`` is refused without it)."""
        raise AssertionError("no transaction to abort without exactly-once support")

    async def abandon(self) -> None:
        """Forgets what was written since the offsets were last stored: those records are
        polled again after a restart (at least once)."""
        self._opened_at, self._latest, self._landed = None, {}, []

    def _on_retry(self, attempt: int, error: Exception, wait_s: float) -> None:
        self._log.warning(
            "delivery_retried",
            attempt=attempt,
            wait_s=wait_s,
            error=str(error),
            error_class=qualified_name(type(error)),
        )
