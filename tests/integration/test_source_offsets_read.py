"""A source task's offsets read at its start, on the real broker, while another writer's
transaction on the offsets topic is still open (a task that died mid-transaction leaves one
until it times out): the offsets this task committed after it are read all the same, once it
ends, or the task would resume before them and produce their records again. Found by the
nemesis (seeds 6 and 101): an exactly-once source wrote a batch twice."""

from __future__ import annotations

import asyncio
import time

import pytest
from aiokafka import AIOKafkaProducer

from headrace.core.model.offsets import OffsetStored
from headrace.core.settings import Settings
from headrace.core.storage import stores
from headrace.core.storage.stores import OffsetStore

pytestmark = pytest.mark.kafka

HOLD_S = 3.0  # how long the other writer's transaction stays open


async def test_offsets_committed_after_another_writer_s_open_transaction_are_read(
    kafka: str, cluster: str
) -> None:
    settings = Settings(bootstrap_servers=kafka, cluster=cluster)
    first = OffsetStore(settings, "src")
    await first.load()  # makes the topic
    await first.close()
    topic = settings.topic("offsets")
    hanging = AIOKafkaProducer(bootstrap_servers=kafka, transactional_id=f"{cluster}-died")
    task = AIOKafkaProducer(bootstrap_servers=kafka, transactional_id=f"{cluster}-src-0")
    await hanging.start()
    await task.start()
    try:
        await hanging.begin_transaction()
        await hanging.send_and_wait(topic, b"{}", key=b"another-connector", partition=0)
        # This task's own later transaction, committed: its offsets and (not here) its records.
        [(key, value)] = stores._records([OffsetStored("src", {"task": 0}, {"next": 7})])
        async with task.transaction():
            await task.send_and_wait(topic, value, key=key.encode(), partition=0)

        async def end_it_later() -> None:
            await asyncio.sleep(HOLD_S)
            await hanging.abort_transaction()

        ending = asyncio.create_task(end_it_later())
        began = time.monotonic()
        started = OffsetStore(settings, "src")
        await started.load()
        waited = time.monotonic() - began
        await started.close()
        await ending
    finally:
        await hanging.stop()
        await task.stop()
    assert started.offset({"task": 0}) == {"next": 7}
    assert waited >= HOLD_S * 0.9  # it read past the open transaction once it had ended
