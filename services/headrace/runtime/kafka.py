"""Kafka plumbing shared by the source and sink loops: topic creation and client settings."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping

from aiokafka import AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import KafkaError, TopicAlreadyExistsError, for_code

from headrace.core.settings import Settings

OFFSETS_PARTITIONS = 25  # Connect's default for offset.storage.partitions
TOPIC_READY_TIMEOUT_S = 30.0


async def ensure_topic(
    bootstrap: str, name: str, partitions: int, config: Mapping[str, str] | None = None
) -> int:
    """Creates ``name`` unless it exists (another process creating it first is fine), waits
    until every partition has a leader, and returns the partition count.

    The replication factor is min(3, brokers): the embedded single-node broker gets 1, a real
    cluster gets Connect's default of 3.
    """
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        if name not in await admin.list_topics():
            brokers = len((await admin.describe_cluster())["brokers"])
            replication = max(1, min(3, brokers))
            topic = NewTopic(name, partitions, replication, topic_configs=dict(config or {}))
            response = await admin.create_topics([topic])
            for entry in response.topic_errors:
                code = entry[1]
                if code not in (0, TopicAlreadyExistsError.errno):
                    raise for_code(code)(f"creating topic {name}: {entry[2:] or ''}")
        return await _ready_partitions(admin, name)
    finally:
        await admin.close()


async def _ready_partitions(admin: AIOKafkaAdminClient, name: str) -> int:
    deadline = time.monotonic() + TOPIC_READY_TIMEOUT_S
    while True:
        described = await admin.describe_topics([name])
        found = described[0] if described else {}
        partitions = found.get("partitions") or []
        if (
            found.get("error_code") == 0
            and partitions
            and all(p["leader"] >= 0 for p in partitions)
        ):
            return len(partitions)
        if time.monotonic() > deadline:
            raise KafkaError(f"topic {name} has no leaders after {TOPIC_READY_TIMEOUT_S} s")
        await asyncio.sleep(0.1)


def producer(settings: Settings, client_id: str) -> AIOKafkaProducer:
    """An idempotent producer: a retried send never duplicates a record within a session."""
    return AIOKafkaProducer(
        bootstrap_servers=settings.bootstrap_servers,
        client_id=client_id,
        enable_idempotence=True,
        acks="all",
        linger_ms=5,
    )
