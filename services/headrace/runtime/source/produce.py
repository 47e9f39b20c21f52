"""Producing a poll's records in whole batches: one batch per topic-partition, handed to the
producer with ``send_batch``, instead of one ``send`` (and one future) per record.

Partitions are chosen as Kafka's Java producer chooses them:
- a record that names its partition goes there;
- a keyed record goes where murmur2 of its key bytes points, the partition Java would pick;
- a record with neither sticks, with every other such record of the same poll and topic, to one
  partition chosen at random among the available ones (Kafka's sticky partitioner, KIP-480).

The choice (``plan``) is a pure function of the records and the topics' partitions; sending and
awaiting the batches is ``BatchProducer.produce``. Records of one partition keep the order of the
poll: the producer sends one partition's batches one after another, and is idempotent.

An idempotent aiokafka producer never gives up on a batch the broker refuses with a retriable
error (or does not answer): it sends it again until it is taken, and its future does not fail.
So that such a stall is seen, and handled as the connector's ``errors.retry.*`` say, waiting for
the acknowledgements fails with ``KafkaTimeoutError`` once none came for ``stall_s`` (the batches
are still sent: only the abort of their transaction makes them harmless).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any, NamedTuple

from aiokafka import AIOKafkaProducer
from aiokafka.errors import KafkaTimeoutError
from aiokafka.partitioner import DefaultPartitioner

Headers = list[tuple[str, bytes | None]]
"""A record's headers as Kafka stores them: a list, which aiokafka's native builder takes as it
is (records of one batch share one)."""


Outgoing = tuple[str, int | None, bytes | None, bytes | None, Headers, int | None]
"""One record ready for Kafka: ``(topic, partition, key, value, headers, timestamp)``; a plain
tuple, because a poll makes thousands of them and a NamedTuple costs a Python call each."""


@dataclass(frozen=True)
class TopicLayout:
    """A topic's partitions as the producer's metadata knows them."""

    partitions: tuple[int, ...]  # sorted, as Java's partitioner indexes them
    available: tuple[int, ...]  # those with a leader now

    def has(self, partition: int) -> bool:
        return partition in self.partitions


Sent = tuple["asyncio.Future[Any]", str, int, list[int]]
"""A batch handed to the producer: its delivery, its partition, the indices of its records."""


class Delivered(NamedTuple):
    """Where Kafka stored one record."""

    partition: int
    offset: int
    timestamp: int


@dataclass(frozen=True)
class Receipt:
    """One acknowledged batch: its topic and partition, its first offset, the broker's
    timestamp (None when the topic keeps the producer's) and the indices of its records in the
    poll."""

    topic: str
    partition: int
    base_offset: int
    log_time: int | None
    members: list[int]


def per_record(receipts: Sequence[Receipt], stamps: Sequence[int]) -> list[Delivered]:
    """Where each record landed, in poll order; ``stamps`` are the timestamps it was sent with."""
    delivered: list[Delivered | None] = [None] * len(stamps)
    for receipt in receipts:
        for position, index in enumerate(receipt.members):
            stamp = stamps[index] if receipt.log_time is None else receipt.log_time
            delivered[index] = Delivered(receipt.partition, receipt.base_offset + position, stamp)
    assert all(d is not None for d in delivered)
    return delivered  # type: ignore[return-value]  # every index was in one batch


def plan(
    records: Sequence[Outgoing],
    layouts: Mapping[str, TopicLayout],
    choose: Callable[[Sequence[int]], int] = random.choice,
) -> dict[tuple[str, int], list[int]]:
    """The records' indices per (topic, partition), each list in poll order.

    A named partition must exist in its topic's layout (callers check it first, to make a
    missing one a record error); ``choose`` picks the sticky partition of unkeyed records.
    """
    uniform = _one_partition(records, layouts, choose)
    if uniform is not None:
        return {uniform: list(range(len(records)))}
    by_partition = DefaultPartitioner()
    sticky: dict[str, int] = {}
    groups: dict[tuple[str, int], list[int]] = {}
    for index, record in enumerate(records):
        topic, partition, key = record[0], record[1], record[2]
        if partition is None:
            layout = layouts[topic]
            if key is not None:
                partition = by_partition(key, list(layout.partitions), layout.available)
            else:
                partition = sticky.get(topic)
                if partition is None:
                    partition = choose(layout.available or layout.partitions)
                    sticky[topic] = partition
        groups.setdefault((topic, partition), []).append(index)
    return groups


def _one_partition(
    records: Sequence[Outgoing],
    layouts: Mapping[str, TopicLayout],
    choose: Callable[[Sequence[int]], int],
) -> tuple[str, int] | None:
    """The one partition every record goes to, when a look at whole columns says so: one
    topic, and either one named partition or neither partition nor key anywhere (the sticky
    partition). That is a poll of a source batch, the common case, seen without a Python step
    per record; None otherwise (or for no records)."""
    if not records:
        return None
    topic, first = records[0][0], records[0][1]
    topics = list(map(itemgetter(0), records))
    if topics.count(topic) != len(records):
        return None
    partitions = list(map(itemgetter(1), records))
    if partitions.count(first) != len(records):
        return None
    if first is not None:
        return topic, first
    if list(map(itemgetter(2), records)).count(None) != len(records):
        return None  # keyed: each key says where
    layout = layouts[topic]
    return topic, choose(layout.available or layout.partitions)


async def acknowledged(sent: Sequence[asyncio.Future[Any]], stall_s: float | None) -> list[Any]:
    """Each future's result, in order, once all are done; else the first failure among them,
    once none is pending (one failure leaves no other unread). ``KafkaTimeoutError`` when
    none got done for a whole ``stall_s`` (None: no bound): the producer makes no progress."""
    progress = 0

    def acknowledged_one(_: asyncio.Future[Any]) -> None:
        nonlocal progress
        progress += 1

    for future in sent:
        future.add_done_callback(acknowledged_one)
    outcomes = asyncio.gather(*sent, return_exceptions=True)
    seen = progress
    while not (await asyncio.wait({outcomes}, timeout=stall_s))[0]:
        if progress == seen:  # the gather goes on, and reads each outcome when it comes
            raise KafkaTimeoutError(
                f"Kafka acknowledged none of {len(sent) - progress} batches (of {len(sent)}) "
                f"within {stall_s:g} s: the broker refuses the records or does not answer"
            )
        seen = progress
    failed = next((o for o in outcomes.result() if isinstance(o, BaseException)), None)
    if failed is not None:
        raise failed
    return outcomes.result()


class BatchProducer:
    """Sends a poll's records to Kafka in whole batches and says where each one landed."""

    def __init__(self, producer: AIOKafkaProducer, stall_s: float | None) -> None:
        self._producer = producer
        self._stall_s = stall_s

    async def layouts(self, topics: Iterable[str]) -> dict[str, TopicLayout]:
        """Each topic's partitions, fetching metadata the producer does not have yet."""
        metadata: Any = self._producer.client.cluster
        found = {}
        for topic in set(topics):
            await self._producer.partitions_for(topic)
            found[topic] = TopicLayout(
                tuple(sorted(metadata.partitions_for_topic(topic) or ())),
                tuple(metadata.available_partitions_for_topic(topic) or ()),
            )
        return found

    async def produce(
        self, records: Sequence[Outgoing], layouts: Mapping[str, TopicLayout]
    ) -> tuple[list[Receipt], list[int]]:
        """Sends every record (``layouts``: of every topic they go to) and waits until Kafka
        acknowledged all of them: a receipt per batch, and the timestamp each record was sent
        with (``per_record`` joins the two). A failed batch raises the producer's error; a
        stall, ``KafkaTimeoutError`` (see ``acknowledged``)."""
        now_ms = int(time.time() * 1000)
        stamps = [now_ms if r[5] is None else r[5] for r in records]
        sent: list[Sent] = []
        for (topic, partition), indices in plan(records, layouts).items():
            start = 0
            while start < len(indices):
                batch = self._producer.create_batch()
                end = fill(batch, records, indices, stamps, start)
                sent.append(await self._send(batch, topic, partition, indices[start:end]))
                start = end
        outcomes = await acknowledged([future for future, *_ in sent], self._stall_s)
        receipts = []
        for (_, topic, partition, members), metadata in zip(sent, outcomes, strict=True):
            # -1: the topic keeps the producer's timestamps (CreateTime), as sent.
            log_time = None if metadata.timestamp in (None, -1) else metadata.timestamp
            receipts.append(Receipt(topic, partition, metadata.offset, log_time, members))
        return receipts, stamps

    async def _send(self, batch: Any, topic: str, partition: int, members: list[int]) -> Sent:
        future: asyncio.Future[Any] = await self._producer.send_batch(
            batch, topic, partition=partition
        )
        return future, topic, partition, members


def fill(
    batch: Any,
    records: Sequence[Outgoing],
    indices: Sequence[int],
    stamps: Sequence[int],
    start: int,
) -> int:
    """Appends the records ``indices[start:]`` names to an empty aiokafka batch
    (``AIOKafkaProducer.create_batch``) until it is full, and closes it; where in ``indices``
    it stopped. A record alone bigger than a batch still goes in one of its own (the broker
    refuses it then, as it would any other producer's).

    The records go straight to the batch's native builder. aiokafka's own ``append`` around it
    cost three times as much per record (a keyword call, a check for serializers the producer
    has none of, a metadata object), and in a py-spy profile of the file source's plugin
    process it was a sixth of the samples. aiokafka is pinned: the two attributes used are
    checked by the unit tests against the batch that aiokafka reads back.
    """
    builder, offset = batch._builder, batch._relative_offset
    for position in range(start, len(indices)):
        index = indices[position]
        _, _, key, value, headers, _ = records[index]
        if builder.append(offset, stamps[index], key, value, headers) is None:
            break
        offset += 1
    else:
        position = len(indices)
    batch._relative_offset = offset
    batch.close()
    return position
