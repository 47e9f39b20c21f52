"""Kafka client settings shared by the source and sink loops."""

from __future__ import annotations

from aiokafka import AIOKafkaProducer

from headrace.core.settings import Settings


def producer(settings: Settings, client_id: str) -> AIOKafkaProducer:
    """An idempotent producer: a retried send never duplicates a record within a session."""
    return AIOKafkaProducer(
        bootstrap_servers=settings.bootstrap_servers,
        client_id=client_id,
        enable_idempotence=True,
        acks="all",
        linger_ms=5,
    )
