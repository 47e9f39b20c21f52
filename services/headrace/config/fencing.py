"""Fencing the transactional ids of source tasks a connector no longer has (KIP-618).

A source task writes in Kafka transactions under its own id (``task_client_id``). When its
connector's task set shrinks, the tasks past the new count are gone from every assignment, but
one of them may still run somewhere, cut off (a zombie), with a transaction open. Before the
smaller set is written, each dropped id is fenced: a producer takes it (Kafka bumps its epoch),
so the zombie's next write or commit is refused, and what it left open is aborted.
"""

from __future__ import annotations

from collections.abc import Iterable

from aiokafka import AIOKafkaProducer

from headrace.core.observability import log
from headrace.core.settings import Settings
from headrace.core.storage.topics import task_client_id


async def fence_tasks(settings: Settings, connector: str, tasks: Iterable[int]) -> None:
    """Fences each task's transactional id; the Kafka error when one cannot be."""
    for task in tasks:
        transactional_id = task_client_id(settings, connector, task)
        producer = AIOKafkaProducer(
            **settings.kafka_client(),
            client_id=f"{transactional_id}-fence",
            enable_idempotence=True,
            transactional_id=transactional_id,
        )
        await producer.start()  # InitProducerId: the id's epoch moves past the zombie's
        await producer.stop()
        log.get().info("task_fenced", connector=connector, task=task)
