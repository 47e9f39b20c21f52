"""The topic log: append with an idempotent producer, replay to the end, tail.

A :class:`TopicLog` reads every partition of one topic from the beginning, without a consumer
group, and hands each record to a callback in order. It remembers how far it has read, so a
caller can wait until it has seen a given write (read-your-writes) or everything that was in the
topic when it asked (read-before-act). The callback is where a service folds records into its
state; it runs on the one task that reads, so state changes never race.

:class:`MemoryLog` keeps the same promises over a :class:`MemoryTopic` in this process: the
stores built on a log run on either, and one contract test holds them both to it.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import KafkaError, ProducerFenced

from headrace.core.model.errors import (
    CommitUnknown,
    LogReaderStopped,
    TopicLayoutError,
    WriterFenced,
)
from headrace.core.observability import log
from headrace.core.security.kafkasecurity import KafkaSecurity
from headrace.core.settings import Settings
from headrace.core.storage import aiokafkatuning, fetch

Handler = Callable[["LogRecord"], None]
# How long the broker may hold a fetch of a log that has nothing new: a record appended meanwhile
# is read within this, at worst (a read_committed fetch may be held past a commit marker).
FETCH_MAX_WAIT_MS = 20
Record = tuple[str, bytes | None]
COMPACT_AFTER = 1024  # records a compacted MemoryTopic holds past twice what it kept, at most
LogFactory = Callable[[Handler], "Log"]
"""Makes a log that hands each record it reads to the given handler: how a store gets its log."""


class LogRecord(NamedTuple):
    """One record as the folds see it: where it was, its key and its value (None: tombstone).
    A named tuple: a replay makes one for every record, and this is made in a third of a
    frozen dataclass's time."""

    partition: int
    offset: int
    key: str
    value: bytes | None
    timestamp_ms: int = 0  # when it was written; 0 where the log keeps no time


class Log(Protocol):
    """What the stores need of a log: append, replay to the end, read their own writes."""

    @property
    def topic(self) -> str: ...

    @property
    def reader(self) -> asyncio.Task[None] | None: ...

    async def start(
        self, *, writer: bool = True, reader: bool = True, follow: bool = True
    ) -> None: ...
    async def close(self) -> None: ...
    async def append(self, key: str, value: bytes | None) -> tuple[int, int]: ...
    async def append_many(
        self, records: list[Record], *, durable: bool = False
    ) -> list[tuple[int, int]]: ...
    async def write_and_read_back(self, records: list[Record]) -> None: ...
    async def catch_up(self) -> None: ...


Send = Callable[[str, list[Record]], Awaitable[list[tuple[int, int]]]]
"""Writes records to a topic and says where each landed: how a log appends through a producer
it does not own (the coordinator's transactional one)."""


async def send_records(
    producer: AIOKafkaProducer, topic: str, records: list[Record]
) -> list[tuple[int, int]]:
    """Sends records in order and waits until Kafka has each; where each one landed. Inside a
    producer's transaction, "has" means written, not yet committed."""
    futures = [await producer.send(topic, key=k.encode(), value=v) for k, v in records]
    metas = [await f for f in futures]
    return [(m.partition, m.offset) for m in metas]


HELD_BACK_WAIT_S = 20.0
"""How long a one-off replay waits for open transactions to end (see ``TopicLog._replay_once``)."""


class TopicLog:
    """Appends to and reads one topic; ``on_record`` is called for each record read, in order.

    Appends go through a producer of the log's own, or through ``send`` when one is given.

    A log with a ``writer_id`` is one of several that take turns writing the topic: each append
    is a transaction under that transactional id, and it commits only if no other log with the
    same id has started writing since this one did. One that has raises :class:`WriterFenced`
    (nothing of the append is visible to readers) after taking the turn back, so the caller can
    read what the other wrote and decide again: a compare-and-set over the whole topic.

    Its clients connect with ``security``, by default the environment's.
    """

    def __init__(
        self,
        bootstrap_servers: str,
        topic: str,
        on_record: Handler,
        send: Send | None = None,
        *,
        writer_id: str | None = None,
        security: KafkaSecurity | None = None,
        held_back_wait_s: float = HELD_BACK_WAIT_S,
    ) -> None:
        self._bootstrap = bootstrap_servers
        self._held_back_wait_s = held_back_wait_s
        # Where a one-off replay stopped short of the high watermark, by partition: (where it
        # stopped, the high watermark); empty when it read everything.
        self.held_back: dict[int, tuple[int, int]] = {}
        self._security = security or KafkaSecurity.from_env()
        self._topic = topic
        self._on_record = on_record
        self._send = send
        self._writer_id = writer_id
        self._producer: AIOKafkaProducer | None = None
        self._consumer: AIOKafkaConsumer | None = None
        # Asks the log's end for ``catch_up`` on a connection of its own: the broker answers one
        # request per connection at a time, so on the reader's it would wait behind a held fetch.
        self._ends: AIOKafkaConsumer | None = None
        self._ends_started: asyncio.Future[None] | None = None
        # Records of an append whose commit went unanswered: whether each was read (committed).
        self._looked_for: dict[tuple[int, int], bool] = {}
        self._partitions: list[TopicPartition] = []
        self._positions: dict[int, int] = {}
        self._progress = asyncio.Condition()
        self._reader: asyncio.Task[None] | None = None

    @property
    def topic(self) -> str:
        return self._topic

    async def start(self, *, writer: bool = True, reader: bool = True, follow: bool = True) -> None:
        """Connects, replays the topic to its end, then keeps tailing it in the background.

        A log started with ``reader=False`` only appends (a worker writing its status); one
        started with ``writer=False`` only reads; one started with ``follow=False`` stops
        reading once it has replayed (a source task, which reads its offsets once).
        """
        if writer and self._send is None:
            self._producer = await self._new_producer()
        if not reader:
            return
        self._consumer = AIOKafkaConsumer(
            **self._security.client_kwargs(self._bootstrap),
            enable_auto_commit=False,
            group_id=None,
            auto_offset_reset="earliest",
            isolation_level="read_committed",
            fetch_max_wait_ms=FETCH_MAX_WAIT_MS,
        )
        await self._consumer.start()
        try:
            parts = await self._partitions_of_topic()
        except TopicLayoutError:
            await self.close()
            raise
        self._partitions = [TopicPartition(self._topic, p) for p in sorted(parts)]
        self._consumer.assign(self._partitions)
        await self._consumer.seek_to_beginning(*self._partitions)
        self._positions = {tp.partition: 0 for tp in self._partitions}
        if not follow:
            await self._replay_once()
            return
        # The end to replay to, asked before the reader's first fetch can hold the connection.
        ends = await self._consumer.end_offsets(self._partitions)
        self._reader = asyncio.create_task(self._read_forever(), name=f"tail-{self._topic}")
        await self.wait_for({tp.partition: off for tp, off in ends.items()})

    async def _replay_once(self) -> None:
        """Reads to the high watermark, not to where a committed read stands now: another
        writer's open transaction (one of a task that died mid-transaction, until it times out)
        holds that back, and every transaction committed after it (this task's own last ones
        among them) would go unread, and be produced again. A transaction still open after
        ``held_back_wait_s`` may be hanging (Kafka leaves one when its markers are lost): the
        read then stops where a committed read stands, and :attr:`held_back` says where."""
        assert self._consumer is not None
        high = {tp.partition: o for tp, o in (await self._high_watermarks()).items()}
        self._reader = asyncio.create_task(self._read_forever(), name=f"tail-{self._topic}")
        try:
            await asyncio.wait_for(self.wait_for(high), self._held_back_wait_s)
        except TimeoutError:
            committed = await self._consumer.end_offsets(self._partitions)
            await self.wait_for({tp.partition: off for tp, off in committed.items()})
            self.held_back = {
                p: (self._positions[p], end)
                for p, end in sorted(high.items())
                if self._positions[p] < end
            }
        await self._stop_reading()

    async def _high_watermarks(self) -> dict[TopicPartition, int]:
        """Each partition's end, committed or not: what a committed read reaches once every
        transaction before it has ended."""
        ends = AIOKafkaConsumer(
            **self._security.client_kwargs(self._bootstrap),
            enable_auto_commit=False,
            group_id=None,
            isolation_level="read_uncommitted",
        )
        await ends.start()
        try:
            return dict(await ends.end_offsets(self._partitions))
        finally:
            await ends.stop()

    async def _stop_reading(self) -> None:
        reader, self._reader = self._reader, None
        if reader is not None:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader
        for client in (self._consumer, self._ends):
            if client is not None:
                await client.stop()
        self._consumer = self._ends = None
        self._ends_started = None

    async def _partitions_of_topic(self, wait_s: float = 15.0) -> set[int]:
        """The topic's partitions, waiting a little for a topic that was just created."""
        admin = AIOKafkaAdminClient(**self._security.client_kwargs(self._bootstrap))
        await admin.start()
        try:
            deadline = asyncio.get_running_loop().time() + wait_s
            while True:
                described = await admin.describe_topics([self._topic])
                parts = {p["partition"] for p in described[0].get("partitions", [])}
                if parts and not described[0].get("error_code"):
                    return parts
                if asyncio.get_running_loop().time() > deadline:
                    raise TopicLayoutError(f"topic {self._topic} does not exist")
                await asyncio.sleep(0.1)
        finally:
            await admin.close()

    async def _new_producer(self) -> AIOKafkaProducer:
        """A started producer; with a writer id, starting it fences every earlier one."""
        aiokafkatuning.tune()
        producer = AIOKafkaProducer(
            **self._security.client_kwargs(self._bootstrap),
            enable_idempotence=True,
            acks="all",
            linger_ms=0,
            transactional_id=self._writer_id,
        )
        await producer.start()
        return producer

    async def close(self) -> None:
        await self._stop_reading()
        producer, self._producer = self._producer, None
        if producer is not None:
            await producer.stop()

    async def append(self, key: str, value: bytes | None) -> tuple[int, int]:
        """Appends one record and returns its (partition, offset) once the broker has it."""
        return (await self.append_many([(key, value)]))[-1]

    async def append_many(
        self, records: list[Record], *, durable: bool = False
    ) -> list[tuple[int, int]]:
        """Appends records in order, as one batch; returns where each one landed, once the
        broker has them: as durable as the topic's replication makes them, ``durable`` or not."""
        if self._send is not None:
            return await self._send(self._topic, records)
        assert self._producer is not None, "this TopicLog was started read-only"
        if self._writer_id is None:
            return await send_records(self._producer, self._topic, records)
        return await self._append_in_turn(records)

    async def _append_in_turn(self, records: list[Record]) -> list[tuple[int, int]]:
        """Appends in a transaction under the writer id: WriterFenced when another writer took
        the turn, so nothing of this append is visible; CommitUnknown when the commit failed
        otherwise (a fencing the client could not name, a lost answer), so it may or may not be.
        Either way the turn is taken back for the next append."""
        assert self._producer is not None
        landed: list[tuple[int, int]] = []
        try:
            async with self._producer.transaction():
                landed = await send_records(self._producer, self._topic, records)
            return landed
        except ProducerFenced:
            await self._renew_producer()
            raise WriterFenced(
                f"another writer of {self._topic} wrote since this one last did"
            ) from None
        except (KafkaError, AssertionError) as exc:
            # The client names some fencings only as an unknown error (the broker's
            # PRODUCER_FENCED), and leaves the producer fatally failed (AssertionError on its
            # next transaction): only a new one can write again. Starting it ends the old
            # transaction, committed or aborted, so a read to the end then says which.
            log.get().warning("configs_commit_unknown", topic=self._topic, error=repr(exc))
            await self._renew_producer()
            raise CommitUnknown(landed) from exc

    async def _renew_producer(self) -> None:
        # The futures aiokafka fails with a fencing are kept out of the log by the services'
        # loop (``runner.quiet_fenced_futures``).
        old, self._producer = self._producer, None
        if old is not None:
            with contextlib.suppress(Exception):  # it can only report its failure again
                await old.stop()
        self._producer = await self._new_producer()

    async def write_and_read_back(self, records: list[Record]) -> None:
        """Appends and waits until this log's reader has folded the records in. An append whose
        commit went unanswered is settled by reading to the end: done if its records were read,
        else WriterFenced (not written; decide again)."""
        try:
            landed = await self.append_many(records)
        except CommitUnknown as unknown:
            if not unknown.landed:
                raise WriterFenced(f"nothing of the append reached {self._topic}") from None
            self._looked_for = dict.fromkeys(unknown.landed, False)
            try:
                await self.catch_up()
                read = all(self._looked_for.values())
            finally:
                self._looked_for = {}
            if not read:
                raise WriterFenced(f"the append to {self._topic} was aborted") from None
            return
        await self.wait_for({p: o + 1 for p, o in landed})

    async def catch_up(self) -> None:
        """Waits until everything in the topic right now has been read (read-before-act)."""
        if self._consumer is None:
            raise LogReaderStopped(f"{self._topic} is not being read")
        ends = await (await self._end_client()).end_offsets(self._partitions)
        await self.wait_for({tp.partition: off for tp, off in ends.items()})

    async def _end_client(self) -> AIOKafkaConsumer:
        """The client that asks the log's end, made at the first catch-up (racing callers
        share it)."""
        if self._ends is None or self._ends_started is None:
            self._ends = AIOKafkaConsumer(
                **self._security.client_kwargs(self._bootstrap),
                enable_auto_commit=False,
                group_id=None,
                isolation_level="read_committed",  # the end a committed read reaches
            )
            self._ends_started = asyncio.ensure_future(self._ends.start())
        await asyncio.shield(self._ends_started)
        return self._ends

    @property
    def reader(self) -> asyncio.Task[None] | None:
        """The task that tails the topic; a service watches it, since its state stops with it."""
        return self._reader

    async def wait_for(self, positions: dict[int, int]) -> None:
        """Waits until the reader's position in each named partition is at least the one given.

        Raises ``LogReaderStopped`` if the reader ends first: nobody would ever wake the waiter.
        """

        def reached() -> bool:
            return all(self._positions.get(p, 0) >= o for p, o in positions.items())

        async with self._progress:
            await self._progress.wait_for(lambda: reached() or self._reader_ended())
        if not reached():
            raise LogReaderStopped(f"the reader of {self._topic} has stopped")

    def _reader_ended(self) -> bool:
        return self._reader is None or self._reader.done()

    async def _read_forever(self) -> None:
        try:
            await self._tail()
        finally:
            async with self._progress:
                self._progress.notify_all()  # waiters find the reader gone

    async def _tail(self) -> None:
        assert self._consumer is not None
        while True:
            # As columns: a replay reads hundreds of thousands of records, and aiokafka's own
            # getmany would make an object of eleven fields for each before this makes its own.
            fetched = await fetch.getmany(self._consumer, 200)
            for tp, columns in fetched.items():
                assert isinstance(columns, fetch.Fetched), "whole batches are not asked for"
                self._fold(tp.partition, columns)
                self._positions[tp.partition] = columns.following
            # Positions also move past transaction markers and compacted gaps.
            for tp in self._partitions:
                self._positions[tp.partition] = max(
                    self._positions[tp.partition], await self._consumer.position(tp)
                )
            async with self._progress:
                self._progress.notify_all()

    def _fold(self, partition: int, columns: fetch.Fetched) -> None:
        """Hands each record of one partition's fetch to the callback, in order."""
        looked_for, on_record = self._looked_for, self._on_record
        keys, values, stamps = columns.keys, columns.values, columns.timestamps
        for i, offset in enumerate(columns.offsets):
            key = keys[i]
            try:
                on_record(
                    LogRecord(
                        partition, offset, "" if key is None else key.decode(), values[i], stamps[i]
                    )
                )
                if looked_for and (partition, offset) in looked_for:
                    looked_for[partition, offset] = True
            except Exception as exc:  # noqa: BLE001 - one bad record must not stop the fold
                log.get().error(
                    "log_record_skipped",
                    topic=self._topic,
                    partition=partition,
                    offset=offset,
                    error=repr(exc),
                )


@dataclass
class MemoryTopic:
    """A topic held in this process: one ordered partition that every :class:`MemoryLog` on it
    reads. With ``compacted``, it is compacted as Kafka compacts a topic, once it holds about
    twice what it would compacted: the latest record of each key, at its offset, and no key
    whose latest record is a tombstone (the folds tolerate that, as they must on Kafka). A
    process that runs for months then holds its state, not its history."""

    name: str
    records: list[LogRecord] = field(default_factory=list)
    compacted: bool = False
    _readers: list[MemoryLog] = field(default_factory=list, repr=False)
    _appended: int = field(default=0, repr=False)  # the offset the next record takes
    _kept: int = field(default=0, repr=False)  # how many the last compaction kept

    def append(self, key: str, value: bytes | None) -> LogRecord:
        offset = max(self._appended, len(self.records))
        record = LogRecord(0, offset, key, value, int(time.time() * 1000))
        self._appended = record.offset + 1
        self.records.append(record)
        if self.compacted and len(self.records) > 2 * self._kept + COMPACT_AFTER:
            latest = {r.key: r for r in self.records}
            self.records = [r for r in latest.values() if r.value is not None]
            self.records.sort(key=lambda r: r.offset)
            self._kept = len(self.records)
        self._deliver(record)
        return record

    async def append_many(self, records: list[Record]) -> list[LogRecord]:
        """Appends the records in order, each read by every reader following the topic."""
        return [self.append(k, v) for k, v in records]

    async def flush(self) -> None:
        """Nothing to write: a topic in memory keeps nothing beyond its process."""

    def _deliver(self, record: LogRecord) -> None:
        for reader in list(self._readers):
            reader._deliver(record)


class MemoryLog:
    """A :class:`TopicLog` over a :class:`MemoryTopic`: a record is folded in by every started
    reader as it is appended, so each write is read back before ``append_many`` returns."""

    def __init__(self, topic: MemoryTopic, on_record: Handler) -> None:
        self._memory = topic
        self._on_record = on_record
        self._writer = False
        self._following = False

    @property
    def topic(self) -> str:
        return self._memory.name

    @property
    def reader(self) -> asyncio.Task[None] | None:
        return None  # nothing runs in the background that could stop

    async def start(self, *, writer: bool = True, reader: bool = True, follow: bool = True) -> None:
        self._writer = writer
        if reader:
            for record in list(self._memory.records):
                self._deliver(record)
            if follow:
                self._memory._readers.append(self)
        self._following = reader and follow

    async def close(self) -> None:
        if self in self._memory._readers:
            self._memory._readers.remove(self)

    def _deliver(self, record: LogRecord) -> None:
        try:
            self._on_record(record)
        except Exception as exc:  # noqa: BLE001 - as TopicLog: one bad record must not stop the fold
            log.get().error("log_record_skipped", topic=self.topic, error=repr(exc))

    async def append(self, key: str, value: bytes | None) -> tuple[int, int]:
        return (await self.append_many([(key, value)]))[-1]

    async def append_many(
        self, records: list[Record], *, durable: bool = False
    ) -> list[tuple[int, int]]:
        """``durable``: returns once the topic keeps them as it keeps what it flushed (a
        ``FileTopic``'s, on disk)."""
        assert self._writer, "this MemoryLog was started read-only"
        landed = await self._memory.append_many(records)
        if durable:
            await self._memory.flush()
        return [(r.partition, r.offset) for r in landed]

    async def write_and_read_back(self, records: list[Record]) -> None:
        await self.append_many(records)

    async def catch_up(self) -> None:
        if not self._following:
            raise LogReaderStopped(f"{self.topic} is not being read")


def kafka_logs(
    settings: Settings,
    role: str,
    send: Send | None = None,
    *,
    writer_id: str | None = None,
    held_back_wait_s: float = HELD_BACK_WAIT_S,
) -> LogFactory:
    """Logs on the cluster's topic for ``role`` (configs, offsets, status, assignments),
    appending through ``send`` when one is given, taking turns with ``writer_id``."""
    return lambda handler: TopicLog(
        settings.bootstrap_servers,
        settings.topic(role),
        handler,
        send,
        writer_id=writer_id,
        security=settings.kafka_security,
        held_back_wait_s=held_back_wait_s,
    )


def memory_logs(topic: MemoryTopic) -> LogFactory:
    """Logs on an in-memory topic."""
    return lambda handler: MemoryLog(topic, handler)
