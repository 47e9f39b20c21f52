"""Whether a transaction of an earlier run of a source task committed: read back, as a reader
of committed records reads, where one of its records landed (its ``Marker``).

A task asks this of the transaction it left pending (``OffsetStore.resolve_with``) once its
transactional producer has started: that fences the earlier run, and Kafka ends the earlier
run's transaction before the start returns, so the answer can no longer change.
"""

from __future__ import annotations

import asyncio

from aiokafka import TopicPartition

from headrace.core.model.offsets import Marker
from headrace.core.settings import Settings
from headrace.runtime import kafka

WITHIN_S = 60.0
"""How long the marker's partition may take to be readable up to it: a transaction another
producer keeps open there holds committed readers back until it ends."""


async def committed(settings: Settings, client_id: str, marker: Marker) -> bool:
    """Whether the record at ``marker`` is committed: a committed reader reads it there, or
    passes over its offset (an aborted transaction's records are never read). A marker the topic
    no longer holds (deleted by retention, or the topic made anew) reads as aborted: the records
    are then polled and written again, never lost."""
    where = TopicPartition(marker.topic, marker.partition)
    defaults = {"client_id": f"{client_id}-pending", "auto_offset_reset": "earliest"}
    consumer = kafka.consumer(settings, {}, defaults)
    await consumer.start()
    try:
        consumer.assign([where])
        consumer.seek(where, marker.offset)
        deadline = asyncio.get_running_loop().time() + WITHIN_S
        while True:
            found = await consumer.getmany(where, timeout_ms=500, max_records=1)
            for record in found.get(where, []):
                return bool(record.offset == marker.offset)
            if await consumer.position(where) > marker.offset:
                return False
            highwater = consumer.highwater(where)
            if highwater is not None and highwater <= marker.offset:
                return False  # the partition no longer holds that offset (deleted, made anew)
            if asyncio.get_running_loop().time() > deadline:
                raise TimeoutError(
                    f"{marker.topic}-{marker.partition} was not readable up to offset "
                    f"{marker.offset} within {WITHIN_S:g} s: whether the transaction that wrote "
                    "there committed is not known yet"
                )
    finally:
        await consumer.stop()
