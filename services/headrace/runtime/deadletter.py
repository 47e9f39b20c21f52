"""The dead letter queue a sink task writes the records it skips to (``errors.deadletterqueue.*``;
the policy and the headers are ``headrace.components.errorpolicy``'s), and the acknowledgement a
reporter hands the task for each record it reports as errant."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aiokafka import AIOKafkaProducer
from aiokafka.errors import KafkaError

from headrace.components.errorpolicy import ErrorPolicy, Message, RecordError, dlq_headers
from headrace.core.model.clientconfig import Client
from headrace.core.settings import Settings
from headrace.core.storage.topics import ensure_topic
from headrace.runtime import kafka


def acknowledgement(sent: asyncio.Future[Any] | None) -> asyncio.Future[None]:
    """A future done when ``sent`` is (at once when there is nothing to wait for), failing as
    it fails: what a reporter hands the task. A failure nobody awaits is not logged as never
    retrieved: the loop fails the task with it before its next commit."""
    done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    done.add_done_callback(lambda f: f.cancelled() or f.exception())
    if sent is None:
        done.set_result(None)
        return done

    def relay(finished: asyncio.Future[Any]) -> None:
        if done.done():
            return
        if finished.cancelled():
            done.cancel()
        elif (exc := finished.exception()) is not None:
            done.set_exception(exc)
        else:
            done.set_result(None)

    sent.add_done_callback(relay)
    return done


@dataclass(frozen=True)
class Origin:
    """The task whose records go to a dead letter queue, and whether they say why there."""

    connector: str
    task: int
    context_headers: bool


class DeadLetterQueue:
    """A sink connector's dead letter queue: sends without waiting for each record, and says
    when all that was sent is acknowledged, which the loop waits for before committing."""

    def __init__(self, producer: AIOKafkaProducer, topic: str, origin: Origin) -> None:
        self.topic = topic
        self._producer = producer
        self._origin = origin
        self._unacknowledged: list[asyncio.Future[Any]] = []

    async def send(self, message: Message, error: RecordError) -> asyncio.Future[Any]:
        """Hands a failed message to the producer as it was consumed (with the context headers
        if asked for); the future is done once Kafka acknowledged it."""
        headers = list(message.headers or ())
        if self._origin.context_headers:
            where = (message.topic, message.partition, message.offset)
            headers += dlq_headers(error, *where, self._origin.connector, self._origin.task)
        sent: asyncio.Future[Any] = await self._producer.send(
            self.topic,
            value=message.value,
            key=message.key,
            headers=headers,
            timestamp_ms=message.timestamp if message.timestamp >= 0 else None,
        )
        self._unacknowledged.append(sent)
        return sent

    async def acknowledged(self) -> None:
        """Waits until every record sent so far is in the topic; raises the first failure."""
        waiting, self._unacknowledged = self._unacknowledged, []
        outcomes = await asyncio.gather(*waiting, return_exceptions=True)
        failed = next((o for o in outcomes if isinstance(o, BaseException)), None)
        if failed is not None:
            raise failed

    async def close(self) -> None:
        """Stops the producer (after sending what it holds)."""
        await self._producer.stop()


async def open_dead_letter_queue(
    settings: Settings,
    policy: ErrorPolicy,
    client_id: str,
    connector: str,
    task: int,
    config: Mapping[str, str],
) -> DeadLetterQueue | None:
    """The connector's dead letter queue, its topic created if missing; None without one. Its
    clients are tuned by the connector's ``config``: the producer's and admin's settings and
    overrides, as Connect's dead letter queue takes them."""
    if policy.dlq_topic is None:
        return None
    replication = policy.dlq_replication_factor
    try:
        await ensure_topic(
            settings.bootstrap_servers,
            policy.dlq_topic,
            1,
            replication=replication,
            security=kafka.security_for(settings, Client.ADMIN, config),
            tuning=kafka.tuning(settings, Client.ADMIN, config, {"client_id": client_id}),
        )
    except KafkaError as exc:
        raise type(exc)(
            f"creating the dead letter queue topic {policy.dlq_topic} with replication factor "
            f"{replication or 'the default'}: {exc}"
        ) from exc
    producer = kafka.producer(settings, client_id, config=config)
    await producer.start()
    origin = Origin(connector, task, policy.dlq_context_headers)
    return DeadLetterQueue(producer, policy.dlq_topic, origin)
