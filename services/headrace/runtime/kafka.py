"""Kafka client settings shared by the source and sink loops."""

from __future__ import annotations

from aiokafka import AIOKafkaProducer

from headrace.core.settings import Settings
from headrace.core.storage.topics import task_client_id

__all__ = ["MAX_BATCH_BYTES", "producer", "task_client_id"]

MAX_BATCH_BYTES = 512 * 1024
"""The most bytes of records in one batch: the source loop fills whole batches per poll, and
each batch is one produce request's worth of work for aiokafka's sender, so fewer, larger ones
cost less Python per record. Well under the broker's default 1 MiB message limit."""


def producer(
    settings: Settings, client_id: str, transactional_id: str | None = None
) -> AIOKafkaProducer:
    """An idempotent producer: a retried send never duplicates a record within a session.

    With a ``transactional_id`` it writes in transactions, and starting it fences every earlier
    producer with that id: their open transaction is aborted, and their next write refused. It
    then lingers not at all: its records go in whole batches (``produce.py``), and the few
    offset records a transaction ends with must not wait for more that never come.
    """
    return AIOKafkaProducer(
        **settings.kafka_client(),
        client_id=client_id,
        enable_idempotence=True,
        acks="all",
        linger_ms=5 if transactional_id is None else 0,
        max_batch_size=MAX_BATCH_BYTES,
        transactional_id=transactional_id,
    )
