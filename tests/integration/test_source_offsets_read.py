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
from headrace.sdk.errors import ConnectError

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


async def test_a_transaction_that_never_ends_fails_an_exactly_once_task_and_names_it(
    kafka: str, cluster: str
) -> None:
    """Kafka can leave a transaction open for good (a hanging transaction: its markers lost,
    seen in a nemesis run when the broker was stopped mid-commit). Reading past it would wait
    forever; reading short could produce a batch twice. An exactly-once task fails at its start,
    naming where; a task that may write twice reads what is committed and goes on."""
    settings = Settings(bootstrap_servers=kafka, cluster=cluster, plugin_call_timeout_s=3.0)
    before = OffsetStore(settings, "src")
    await before.load()  # makes the topic
    await before.write([({"task": 0}, {"next": 3})])
    await before.close()
    topic = settings.topic("offsets")
    hanging = AIOKafkaProducer(bootstrap_servers=kafka, transactional_id=f"{cluster}-hangs")
    await hanging.start()
    try:
        await hanging.begin_transaction()
        meta = await hanging.send_and_wait(topic, b"{}", key=b"another-connector")
        exactly_once = OffsetStore(settings, "src", owner=f"{cluster}-src-0")
        with pytest.raises(ConnectError) as refused:
            await exactly_once.load()
        assert f"{topic} partition {meta.partition} from offset {meta.offset}" in str(refused.value)
        assert "kafka-transactions.sh" in str(refused.value)
        at_least_once = OffsetStore(settings, "src")
        await at_least_once.load()
        await at_least_once.close()
        assert at_least_once.offset({"task": 0}) == {"next": 3}
    finally:
        await hanging.abort_transaction()
        await hanging.stop()
