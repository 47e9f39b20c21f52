"""Which coordinator replica is the active one: a lease on the leader topic, fenced by Kafka.

Every replica serves gRPC, but only the active one accepts workers. The active one renews its
lease by writing a record to ``<cluster>-leader`` every :attr:`Leadership.renew_every` seconds;
a standby that has seen no lease for ``lease_timeout`` seconds takes over. Taking over opens a
transactional producer under the cluster's one coordinator transactional id: Kafka then fences
the previous leader's producer, aborts its open transaction, and refuses its every later write.
Every write of the active coordinator, its lease and its generations alike, goes through that
producer in a transaction (:class:`LeaderWriter`), so a leader that was only paused, not dead,
cannot record a generation once another has taken over; it finds itself fenced and stops.

A leader also stops acting as one when its lease runs out unrenewed (:meth:`Leadership.fresh`),
before any standby can have taken over, since the standby counts from a later moment: when the
renewal reached it.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Awaitable, Callable

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.errors import ProducerFenced

from headrace.core.observability import log
from headrace.core.settings import Settings
from headrace.core.storage import aiokafkatuning
from headrace.core.storage.topiclog import Record, send_records
from headrace.core.storage.topics import MAX_GENERATION_BYTES

LEASE_KEY = b"lease"


class LeadershipLost(Exception):
    """Another replica took over, or the lease could not be renewed in time."""


class LeaderWriter:
    """Writes records in Kafka transactions under the coordinator's transactional id; one
    transaction at a time, since a producer runs only one."""

    def __init__(self, producer: AIOKafkaProducer) -> None:
        self._producer = producer
        self._lock = asyncio.Lock()

    async def send(self, topic: str, records: list[Record]) -> list[tuple[int, int]]:
        """Writes the records in one transaction; LeadershipLost once another replica's
        producer fenced this one, whichever write finds it out (a generation, or the lease)."""
        try:
            async with self._lock, self._producer.transaction():
                return await send_records(self._producer, topic, records)
        except ProducerFenced as exc:
            raise LeadershipLost("another replica took over: this one's writes are fenced") from exc

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self._producer.stop()


class Leadership:
    def __init__(
        self,
        settings: Settings,
        name: str,
        lease_timeout: float = 3.0,
        clock: Callable[[], float] = time.monotonic,
        pause: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._settings = settings
        self.name = name
        # The other replicas the cluster names (HEADRACE_COORDINATOR_ADDR). None: no replica
        # can start beside this one, and it need not wait for one to take over first.
        self._rivals = bool(set(settings.coordinator_addrs) - {name})
        self._pause = pause
        self.lease_timeout = lease_timeout
        self.renew_every = lease_timeout / 6
        self._clock = clock
        self._topic = settings.topic("leader")
        self._renewed_at = float("-inf")
        self.writer: LeaderWriter | None = None

    def fresh(self) -> bool:
        """Whether this replica holds a lease no standby can have taken over yet."""
        return self.writer is not None and self._clock() - self._renewed_at < self.lease_timeout

    async def acquire(self) -> LeaderWriter:
        """Waits until no other replica has renewed its lease for ``lease_timeout`` seconds,
        then takes over; returns the writer every write of this leader must go through. A
        replica that another fences as it takes over goes back to waiting."""
        while True:
            await self._wait_for_a_silent_lease()
            aiokafkatuning.tune()
            producer = AIOKafkaProducer(
                **self._settings.kafka_client(),
                transactional_id=f"{self._settings.cluster}-coordinator",
                enable_idempotence=True,
                acks="all",
                # A generation names every unit of the cluster; it compresses well.
                compression_type="gzip",
                max_request_size=MAX_GENERATION_BYTES,
            )
            await producer.start()  # fences the previous leader's producer
            self.writer = LeaderWriter(producer)
            try:
                await self._renew()
            except LeadershipLost as exc:
                await self.step_down()
                log.get().info("coordinator_takeover_lost", error=str(exc))
                continue
            log.get().info("coordinator_leadership_taken", coordinator=self.name)
            return self.writer

    async def _wait_for_a_silent_lease(self) -> None:
        consumer = AIOKafkaConsumer(
            **self._settings.kafka_client(),
            group_id=None,
            enable_auto_commit=False,
            isolation_level="read_committed",
        )
        await consumer.start()
        try:
            partition = TopicPartition(self._topic, 0)
            consumer.assign([partition])
            end = (await consumer.end_offsets([partition]))[partition]
            # The last few records (each lease is a record and a transaction marker) say how
            # long ago a lease was last written.
            consumer.seek(partition, max(0, end - 16))
            heard = float("-inf")
            jittered = False
            led = False  # whether any other replica's lease was seen
            while True:
                batch = await consumer.getmany(partition, timeout_ms=100)
                for record in batch.get(partition, []):
                    if record.key != LEASE_KEY:
                        continue
                    if record.value == self.name.encode():
                        # This replica's own lease, from before a restart: the process that
                        # renewed it served this address, which this one now holds.
                        heard = float("-inf")
                        continue
                    age = max(0.0, time.time() - record.timestamp / 1000)
                    heard = max(heard, self._clock() - age)
                    led = True
                if await consumer.position(partition) < end:
                    continue  # not caught up yet
                if self._clock() - heard < self.lease_timeout:
                    end = (await consumer.end_offsets([partition]))[partition]
                    continue  # another replica leads
                if jittered or led or not self._rivals:
                    return  # a leader's lease lapsed: take over at once, Kafka fences a rival
                # Replicas that start together would all find the lease silent: each waits a
                # moment and looks once more, so that usually one takes over and the others
                # see its lease. (If two still do, Kafka fences the first.)
                await self._pause(random.uniform(0, self.renew_every * 2))
                end = (await consumer.end_offsets([partition]))[partition]
                jittered = True
        finally:
            await consumer.stop()

    async def _renew(self) -> None:
        assert self.writer is not None
        started = self._clock()
        try:
            await asyncio.wait_for(
                self.writer.send(self._topic, [(LEASE_KEY.decode(), self.name.encode())]),
                timeout=self.lease_timeout,
            )
        except Exception as exc:
            raise LeadershipLost(f"the lease could not be renewed: {exc!r}") from exc
        self._renewed_at = started

    async def keep(self) -> None:
        """Renews the lease until it cannot; then raises :class:`LeadershipLost`."""
        while True:
            await asyncio.sleep(self.renew_every)
            await self._renew()

    async def step_down(self) -> None:
        """Gives the lease up (its renewals stop); its writer is of no more use."""
        writer, self.writer = self.writer, None
        self._renewed_at = float("-inf")
        if writer is not None:
            await writer.close()

    async def close(self) -> None:
        await self.step_down()
