"""Kafka client settings shared by the source and sink loops."""

from __future__ import annotations

from aiokafka import AIOKafkaProducer

from headrace.core.settings import Settings

MAX_BATCH_BYTES = 512 * 1024
"""The most bytes of records in one batch: the source loop fills whole batches per poll, and
each batch is one produce request's worth of work for aiokafka's sender, so fewer, larger ones
cost less Python per record. Well under the broker's default 1 MiB message limit."""


def producer(settings: Settings, client_id: str) -> AIOKafkaProducer:
    """An idempotent producer: a retried send never duplicates a record within a session."""
    return AIOKafkaProducer(
        bootstrap_servers=settings.bootstrap_servers,
        client_id=client_id,
        enable_idempotence=True,
        acks="all",
        linger_ms=5,
        max_batch_size=MAX_BATCH_BYTES,
    )
