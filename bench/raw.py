"""The ceiling: bare aiokafka on the same broker, through its fastest paths.

Producing builds whole batches (``create_batch``) and hands each to a partition with
``send_batch``, keeping many in flight; consuming takes ``getmany`` in large chunks. No
conversion, no framework: what a Python client can move on this broker at best.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient

IN_FLIGHT = 8  # batches awaited together; enough to keep the broker busy
BATCH_BYTES = 512 * 1024  # well under the broker's 1 MiB default message limit
CONSUME_CHUNK = 10_000

Record = tuple[bytes | None, bytes]


async def produce(bootstrap: str, topic: str, partitions: int, records: Sequence[Record]) -> float:
    """Produces the (key, value) records, made before the clock starts, spread evenly over the
    partitions; records/s."""
    spread = {p: records[p::partitions] for p in range(partitions)}
    started = time.perf_counter()
    await produce_to(bootstrap, topic, spread)
    return len(records) / (time.perf_counter() - started)


async def produce_to(
    bootstrap: str, topic: str, by_partition: Mapping[int, Sequence[Record]]
) -> None:
    """Writes each partition's records in order: whole batches, ``IN_FLIGHT`` at a time."""
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap,
        acks="all",
        enable_idempotence=True,
        max_batch_size=BATCH_BYTES,
    )
    await producer.start()
    try:
        pending: list[asyncio.Future[object]] = []
        for partition, records in by_partition.items():
            i, n = 0, len(records)
            while i < n:
                batch = producer.create_batch()
                while i < n:
                    key, value = records[i]
                    if batch.append(key=key, value=value, timestamp=None) is None:
                        break  # full: send it, start the next
                    i += 1
                batch.close()
                pending.append(await producer.send_batch(batch, topic, partition=partition))
                if len(pending) >= IN_FLIGHT:
                    await asyncio.gather(*pending)
                    pending.clear()
        await asyncio.gather(*pending)
    finally:
        await producer.stop()


ASSIGNED_WITHIN_S = 30.0


async def pipelined(
    bootstrap: str, topic: str, group: str, partitions: int, records: Sequence[Record]
) -> float:
    """Produces the records into an empty ``topic`` while a consumer, already assigned its
    partitions, reads them as they come, as a pipeline does; records/s from the first send to
    the last record read."""
    spread = {p: records[p::partitions] for p in range(partitions)}
    consumer = from_start(bootstrap, topic, group)
    await consumer.start()
    try:
        deadline = time.monotonic() + ASSIGNED_WITHIN_S
        while not consumer.assignment():
            if time.monotonic() > deadline:
                raise RuntimeError(f"no partition of {topic} assigned in {ASSIGNED_WITHIN_S}s")
            await consumer.getmany(timeout_ms=100)

        async def read() -> None:
            seen = 0
            while seen < len(records):
                chunk = await consumer.getmany(timeout_ms=500, max_records=CONSUME_CHUNK)
                seen += sum(len(batch) for batch in chunk.values())

        started = time.perf_counter()
        await asyncio.gather(produce_to(bootstrap, topic, spread), read())
        return len(records) / (time.perf_counter() - started)
    finally:
        await consumer.stop()


def from_start(bootstrap: str, topic: str, group: str) -> AIOKafkaConsumer:
    """A consumer of ``topic`` from its start, in large fetches, committing only when told."""
    return AIOKafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        max_partition_fetch_bytes=8 * 1024 * 1024,
    )


async def consume(bootstrap: str, topic: str, group: str, n: int) -> float:
    """Consumes ``n`` records from the start of ``topic`` and commits; records/s."""
    consumer = from_start(bootstrap, topic, group)
    await consumer.start()
    try:
        started = time.perf_counter()
        seen = 0
        while seen < n:
            chunk = await consumer.getmany(timeout_ms=500, max_records=CONSUME_CHUNK)
            seen += sum(len(records) for records in chunk.values())
        await consumer.commit()
        return n / (time.perf_counter() - started)
    finally:
        await consumer.stop()


async def end_offsets(bootstrap: str, topic: str) -> dict[TopicPartition, int]:
    """Where each partition of ``topic`` ends now."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        described = await admin.describe_topics([topic])
    finally:
        await admin.close()
    partitions = [TopicPartition(topic, p["partition"]) for p in described[0]["partitions"]]
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None)
    await consumer.start()
    try:
        return await consumer.end_offsets(partitions)
    finally:
        await consumer.stop()


async def committed_values(bootstrap: str, topic: str) -> list[bytes | None]:
    """Every committed value of a one-partition ``topic``, in order: what a consumer reading
    committed data gets from its start to its end."""
    return await _committed(bootstrap, topic, back=None)


async def last_committed(bootstrap: str, topic: str) -> bytes | None:
    """The value of the last committed record of a one-partition ``topic``, or None when it has
    none: what a consumer reading committed data sees last. Transaction markers take offsets,
    so with a transactional writer the end offset overcounts the records; a marker follows each
    transaction's records, so a few offsets back is a record."""
    values = await _committed(bootstrap, topic, back=8)
    return values[-1] if values else None


async def _committed(bootstrap: str, topic: str, back: int | None) -> list[bytes | None]:
    """The committed values of a one-partition ``topic`` up to its last stable offset, from its
    start, or from ``back`` offsets before that."""
    tp = TopicPartition(topic, 0)
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, group_id=None, isolation_level="read_committed"
    )
    await consumer.start()
    try:
        consumer.assign([tp])
        end = (await consumer.end_offsets([tp]))[tp]  # the last stable offset
        consumer.seek(tp, 0 if back is None else max(0, end - back))
        values: list[bytes | None] = []
        while await consumer.position(tp) < end:
            for records in (await consumer.getmany(tp, timeout_ms=500)).values():
                values.extend(r.value for r in records)
        return values
    finally:
        await consumer.stop()
