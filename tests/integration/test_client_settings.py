"""The clients under a connector take the worker config's settings and the connector's
overrides, and it shows on the broker: the batches a source wrote are compressed as it was told,
a sink commits in the group it names and is handed no more records at once than it asked for, and
the admin client that creates a source's topics is made with its own settings."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import immutables
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka import TopicPartition as KafkaTopicPartition
from aiokafka.record.memory_records import MemoryRecords
from structlog.testing import capture_logs

from headrace.core.settings import Settings
from headrace.core.storage.topics import ensure_topic
from headrace.local.kafka import EmbeddedKafka
from headrace.runtime.placement import Placement
from headrace.runtime.sink.loop import SinkRunner
from headrace.runtime.source.loop import SourceRunner
from headrace.sdk import SinkRecord, SinkTask, SourceRecord
from tests.integration.test_source_loop import ListSource
from tests.kafkatls import SecureBroker
from tests.support import consume, eventually

pytestmark = pytest.mark.kafka

STRING = {"key.converter": "string", "value.converter": "string"}
CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


class Batches(SinkTask):
    """Keeps the size of every put and the values put."""

    def __init__(self) -> None:
        self.sizes: list[int] = []
        self.values: list[Any] = []

    async def start(self, config: Mapping[str, str]) -> None:
        pass

    async def put(self, records: list[SinkRecord]) -> None:
        if records:
            self.sizes.append(len(records))
        self.values += [r.value for r in records]


def codecs_on_disk(broker: EmbeddedKafka, topic: str) -> set[str]:
    """The compression of every data batch the broker stored for partition 0 of ``topic``."""
    found = set()
    for segment in sorted((broker.data_dir / "logs" / f"{topic}-0").glob("*.log")):
        records = MemoryRecords(segment.read_bytes())
        while (batch := records.next_batch()) is not None:
            if not batch.is_control_batch:  # a transaction's commit marker
                found.add(CODECS[batch.compression_type])
    return found


async def run_source(settings: Settings, config: Mapping[str, str], topic: str) -> ListSource:
    task = ListSource(
        [SourceRecord({"f": 1}, {"n": i}, topic, f"line {i} " * 20) for i in range(50)]
    )
    connector_config = {"name": "src", **STRING, **config}
    runner = SourceRunner(Placement("src", 0, connector_config, {}, settings), task)
    await runner.start()
    loop = asyncio.create_task(runner.run())
    try:
        await eventually("the batch is committed", lambda: task.commits > 0 or loop.done())
    finally:
        runner.request_stop()
        await asyncio.wait({loop}, timeout=30)
        await runner.close()
    assert loop.exception() is None
    return task


async def test_a_source_compresses_as_the_worker_says_unless_its_override_says_otherwise(
    session_broker: tuple[EmbeddedKafka, SecureBroker], kafka: str, cluster: str
) -> None:
    broker = session_broker[0]
    worker = immutables.Map({"producer.compression.type": "gzip", "admin.client.id": "ignored"})
    settings = Settings(bootstrap_servers=kafka, cluster=cluster, worker_config=worker)
    plain, tuned = f"{cluster}-plain", f"{cluster}-tuned"
    await ensure_topic(kafka, plain, 1)

    await run_source(settings, {}, plain)
    with capture_logs() as logs:
        await run_source(
            settings,
            {
                "producer.override.compression.type": "zstd",
                "producer.override.linger.ms": "1",
                "admin.override.client.id": "creator",
                "topic.creation.default.partitions": "1",
                "topic.creation.default.replication.factor": "1",
            },
            tuned,
        )

    assert len(await consume(kafka, plain, 50)) == len(await consume(kafka, tuned, 50)) == 50
    assert codecs_on_disk(broker, plain) == {"gzip"}
    assert codecs_on_disk(broker, tuned) == {"zstd"}
    made = {e["client"]: e["config"] for e in logs if e["event"] == "kafka_client"}
    assert made["producer"]["compression_type"] == "zstd" and made["producer"]["linger_ms"] == 1
    assert made["producer"]["enable_idempotence"] is True  # the runner's own, whatever is said
    assert made["admin"] == {"client_id": "creator"}  # the override over the worker's


async def committed(kafka: str, group: str, topic: str) -> int | None:
    consumer = AIOKafkaConsumer(bootstrap_servers=kafka, group_id=group, enable_auto_commit=False)
    await consumer.start()
    try:
        found: int | None = await consumer.committed(KafkaTopicPartition(topic, 0))
        return found
    finally:
        await consumer.stop()


@pytest.mark.parametrize("codec", ["lz4", "snappy", "zstd"])
async def test_a_sink_consumes_in_the_group_it_names_no_more_records_at_once_than_it_asks(
    kafka: str, cluster: str, codec: str, tmp_path: Path
) -> None:
    topic, group = f"{cluster}-in", f"connect-{cluster}"
    await ensure_topic(kafka, topic, 1)
    # Written as Java producers write: compressed, which the sink's consumer must read.
    producer = AIOKafkaProducer(bootstrap_servers=kafka, compression_type=codec)
    await producer.start()
    try:
        await asyncio.gather(*[await producer.send(topic, str(i).encode()) for i in range(40)])
    finally:
        await producer.stop()
    worker = immutables.Map({"consumer.max.poll.records": "500", "consumer.fetch.min.bytes": "1"})
    settings = Settings(bootstrap_servers=kafka, cluster=cluster, worker_config=worker)
    config = {
        "name": "snk",
        "topics": topic,
        **STRING,
        "consumer.override.group.id": group,
        "consumer.override.max.poll.records": "7",
    }
    task = Batches()
    runner = SinkRunner(Placement("snk", 0, config, {}, settings), task)
    await runner.start()
    loop = asyncio.create_task(runner.run())
    try:
        await eventually("every record is put", lambda: len(task.values) >= 40 or loop.done())
    finally:
        runner.request_stop()
        await asyncio.wait({loop}, timeout=30)
        await runner.finish()
        await runner.close()
    assert loop.exception() is None
    assert task.values == [str(i) for i in range(40)]
    assert max(task.sizes) <= 7 and len(task.sizes) >= 6
    assert await committed(kafka, group, topic) == 40
    assert await committed(kafka, f"{cluster}-connect-snk", topic) is None
