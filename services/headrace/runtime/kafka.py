"""The Kafka clients of a task: what the source and sink loops and the dead letter queue make
them with.

Each is made with, in order: the cluster's bootstrap servers and the plugins' security; headrace's
own defaults for that client; the worker config's ``producer.*`` / ``consumer.*`` / ``admin.*``;
the connector's ``*.override.*`` (``headrace.core.model.clientconfig``); and last what the runner
owns for its promises (idempotence, the transactional id, committed reads, manual commits). A
client logs what it was made with, as Kafka's Java clients do, leaving out the login's password.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from headrace.core.model.clientconfig import Client, merged
from headrace.core.observability import log
from headrace.core.security.kafkasecurity import KafkaSecurity
from headrace.core.settings import Settings
from headrace.core.storage import aiokafkatuning
from headrace.core.storage.topics import task_client_id

__all__ = [
    "MAX_BATCH_BYTES",
    "client_arguments",
    "consumer",
    "producer",
    "security_for",
    "task_client_id",
    "tuning",
]

MAX_BATCH_BYTES = 512 * 1024
"""The most bytes of records in one batch: the source loop fills whole batches per poll, and
each batch is one produce request's worth of work for aiokafka's sender, so fewer, larger ones
cost less Python per record. Well under the broker's default 1 MiB message limit."""

_log = log.get()


def security_for(settings: Settings, client: Client, config: Mapping[str, str]) -> KafkaSecurity:
    """The plugins' security, with the login the worker or connector config gives this client
    instead, if any."""
    login = merged(client, settings.worker_config, config).login
    if login is None:
        return settings.kafka_security
    return replace(
        settings.kafka_security,
        sasl_mechanism=login.mechanism,
        sasl_username=login.username,
        sasl_password=login.password,
        sasl_password_file=None,
    )


def tuning(
    settings: Settings,
    client: Client,
    config: Mapping[str, str],
    defaults: Mapping[str, Any],
    owned: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """How one client of a connector is tuned beyond its connection (see the module's
    docstring), logged."""
    chosen = merged(client, settings.worker_config, config)
    tuned = {**defaults, **chosen.arguments, **(owned or {})}
    _log.info(
        "kafka_client",
        client=client.value,
        config=dict(sorted(tuned.items())),
        login=None if chosen.login is None else chosen.login.username,
    )
    return tuned


def client_arguments(
    settings: Settings,
    client: Client,
    config: Mapping[str, str],
    defaults: Mapping[str, Any],
    owned: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Everything one client of a connector is made with: its connection, then ``tuning``."""
    security = security_for(settings, client, config)
    return {
        **security.client_kwargs(settings.bootstrap_servers),
        **tuning(settings, client, config, defaults, owned),
    }


def producer(
    settings: Settings,
    client_id: str,
    transactional_id: str | None = None,
    config: Mapping[str, str] | None = None,
) -> AIOKafkaProducer:
    """An idempotent producer: a retried send never duplicates a record within a session,
    tuned by the connector's ``config``.

    With a ``transactional_id`` it writes in transactions, and starting it fences every earlier
    producer with that id: their open transaction is aborted, and their next write refused. It
    then lingers not at all unless told to: its records go in whole batches (``produce.py``),
    and the few offset records a transaction ends with must not wait for more that never come.
    """
    defaults = {
        "client_id": client_id,
        "acks": "all",
        "linger_ms": 5 if transactional_id is None else 0,
        "max_batch_size": MAX_BATCH_BYTES,
    }
    owned = {"enable_idempotence": True, "transactional_id": transactional_id}
    aiokafkatuning.tune()
    return AIOKafkaProducer(
        **client_arguments(settings, Client.PRODUCER, config or {}, defaults, owned)
    )


def consumer(
    settings: Settings, config: Mapping[str, str], defaults: Mapping[str, Any]
) -> AIOKafkaConsumer:
    """A sink's consumer: it commits only when told, and reads only what sources committed (a
    failed batch or a fenced zombie's writes are aborted transactions, which a sink must never
    deliver)."""
    owned = {"enable_auto_commit": False, "isolation_level": "read_committed"}
    return AIOKafkaConsumer(**client_arguments(settings, Client.CONSUMER, config, defaults, owned))
