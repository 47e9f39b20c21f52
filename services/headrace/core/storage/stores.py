"""The stores that keep a fold of a topic current: the status topic (``StatusStore``: workers
report, the config service reads) and one connector's source offsets (``OffsetStore``: its source
tasks and the config service). The protocols and folds are ``headrace.core.model.status`` and
``headrace.core.model.offsets``; here is only the I/O around them."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any

from headrace.core.model.offsets import EMPTY as NO_OFFSETS
from headrace.core.model.offsets import (
    Marker,
    OffsetMap,
    OffsetStored,
    Pending,
    canonical_partition,
    decode_pending,
    offset_key,
    offset_value,
    pending_key,
    pending_name,
    pending_value,
    settled,
)
from headrace.core.model.offsets import apply as apply_offset
from headrace.core.model.offsets import decode as decode_offset
from headrace.core.model.status import EMPTY as NO_STATUS
from headrace.core.model.status import (
    NO_TOPICS,
    StatusEvent,
    StatusFolding,
    StatusRemoved,
    StatusReported,
    StatusState,
    TopicState,
    TopicStatus,
    UnitStatus,
    apply_topic,
    encode_topic,
    topic_key,
)
from headrace.core.model.status import decode as decode_status
from headrace.core.model.status import encode as encode_status
from headrace.core.model.structs import WorkUnit
from headrace.core.observability import log
from headrace.core.settings import Settings
from headrace.core.storage.remotelog import remote_logs
from headrace.core.storage.topiclog import (
    HELD_BACK_WAIT_S,
    Log,
    LogFactory,
    LogRecord,
    Send,
    TopicLog,
    kafka_logs,
)
from headrace.core.storage.topics import TOPICS, ensure_cluster_topic, ensure_topic
from headrace.sdk.errors import ConfigException, ConnectError


class StatusStore:
    """The status topic as a store: workers report, the config service reads.

    ``logs`` makes the log with this store's record handler: a ``TopicLog`` on the status topic
    (:func:`headrace.core.storage.topiclog.kafka_logs`), or a ``MemoryLog`` (``memory_logs``).
    """

    def __init__(self, logs: LogFactory) -> None:
        # The statuses folded so far: a replay folds the whole topic in place, made a state
        # only when one is asked for (``state``).
        self._folding = StatusFolding(NO_STATUS)
        self.topics: TopicState = NO_TOPICS
        self.watchers: list[Callable[[StatusEvent, LogRecord], None]] = []
        """Told of each status event just before it is folded (the console's history and
        updates): ``state`` is still the one before it."""
        self._log = logs(self._on_record)

    def _on_record(self, record: LogRecord) -> None:
        event = decode_status(record.key, record.value)
        if event is not None:
            for watcher in self.watchers:
                watcher(event, record)
            self._folding.apply(event)
        else:
            self.topics = apply_topic(self.topics, record.key, record.value)

    @property
    def state(self) -> StatusState:
        """Every unit's last status read so far."""
        return self._folding.state()

    async def start(self, *, writer: bool = True, reader: bool = True) -> None:
        """Replays the topic (unless ``reader`` is False: a worker only reports)."""
        await self._log.start(writer=writer, reader=reader)

    @property
    def reader(self) -> asyncio.Task[None] | None:
        return self._log.reader

    async def close(self) -> None:
        await self._log.close()

    async def report(self, status: UnitStatus) -> None:
        await self._log.append(*encode_status(StatusReported(status)))

    async def remove(self, unit: WorkUnit) -> None:
        """Writes the unit's tombstone: it no longer exists."""
        await self._log.append(*encode_status(StatusRemoved(unit)))

    async def current(self) -> StatusState:
        """Every status after reading all that was written so far."""
        await self._log.catch_up()
        return self.state

    async def report_topic(self, status: TopicStatus) -> None:
        """Records a topic the connector used (KIP-558)."""
        await self._log.append(*encode_topic(status))

    async def forget_topics(self, connector: str, topics: Iterable[str]) -> None:
        """Writes the tombstones of these topics of the connector."""
        for topic in sorted(set(topics)):
            await self._log.append(topic_key(connector, topic), None)

    async def current_topics(self) -> TopicState:
        """Every connector's topics after reading all that was written so far."""
        await self._log.catch_up()
        return self.topics


class OffsetStore:
    """One connector's source offsets: replayed from the topic once, then kept current by writes.

    Implements the SDK's ``OffsetReader`` for the task context. ``logs`` is the offsets topic
    on Kafka unless given (a ``memory_logs`` for tests), or the log at ``settings.offsets_addr``
    when that is set (standalone mode's file); writes go through ``send`` when given (the source
    task's transactional producer, so offsets commit with the records).

    Off Kafka, offsets cannot be in a transaction: a task that writes in transactions (its
    transactional id is ``owner``) stores its offsets in two phases (``two_phase``): pending
    before its commit, settled after (``headrace.core.model.offsets``).
    """

    def __init__(
        self,
        settings: Settings,
        connector: str,
        logs: LogFactory | None = None,
        send: Send | None = None,
        *,
        topic: str | None = None,
        owner: str | None = None,
    ) -> None:
        self.settings = settings
        self.connector = connector
        self.owner = owner
        if settings.offsets_addr and topic is not None:
            raise ConfigException(
                f"offsets.storage.topic: {topic!r}: a standalone worker keeps every connector's "
                "source offsets in its offsets file"
            )
        if logs is None and settings.offsets_addr:
            logs = remote_logs(settings, settings.offsets_addr, "offsets")
        self._on_kafka = logs is None
        self._own_topic = topic
        # Waiting for another task's open transaction is part of this task's start, which the
        # worker gives the plugin call's time: a third of it, at most HELD_BACK_WAIT_S.
        wait_s = min(HELD_BACK_WAIT_S, settings.plugin_call_timeout_s / 3)
        if topic is None:
            cluster_logs = kafka_logs(settings, "offsets", send, held_back_wait_s=wait_s)
            self._log = (logs or cluster_logs)(self._on_record)
            self._cluster_log: Log | None = None
        else:
            # KIP-618: the connector's own topic is where its offsets go, and is read last, so
            # that its offsets win over those the cluster's topic still holds for it.
            self._log = TopicLog(
                settings.bootstrap_servers,
                topic,
                self._on_record,
                send,
                security=settings.kafka_security,
                held_back_wait_s=wait_s,
            )
            self._cluster_log = kafka_logs(settings, "offsets", held_back_wait_s=wait_s)(
                self._on_record
            )
        self.state: OffsetMap = NO_OFFSETS
        self._stored_at: dict[str, int] = {}  # each source partition's latest, in the log
        self._pending: dict[str, tuple[int, Pending]] = {}  # by owner, with where in the log

    def _on_record(self, record: LogRecord) -> None:
        named = pending_name(record.key)
        if named is not None:
            if named[0] == self.connector:
                _, owner, pending = decode_pending(record.key, record.value)
                if pending is None:
                    self._pending.pop(owner, None)
                else:
                    self._pending[owner] = (record.offset, pending)
            return
        event = decode_offset(record.key, record.value)
        if event is not None and event.connector == self.connector:
            self.state = apply_offset(self.state, event)
            self._stored_at[canonical_partition(event.partition)] = record.offset

    @property
    def pending(self) -> tuple[int, Pending] | None:
        """The owner's transaction whose offsets are pending, with where it is in the log."""
        return None if self.owner is None else self._pending.get(self.owner)

    @property
    def two_phase(self) -> bool:
        """Whether a transaction's offsets are stored in two phases (see the class)."""
        return self.owner is not None and not self._on_kafka

    @property
    def topic(self) -> str:
        return self._log.topic

    async def load(self) -> None:
        """Creates the topic if needed, then replays it to its current end: with a topic of
        the connector's own, the cluster's first (what it held before it had one), then its
        own."""
        if self._on_kafka:
            await ensure_cluster_topic(self.settings, "offsets")
        if self._own_topic is not None:
            spec = TOPICS["offsets"]
            await ensure_topic(
                self.settings.bootstrap_servers,
                self._own_topic,
                spec.partitions,
                spec.config,
                security=self.settings.kafka_security,
            )
        if self._cluster_log is not None:
            await self._cluster_log.start(writer=False, follow=False)
            await self._cluster_log.close()
            self._check_read_whole(self._cluster_log)
        # Read once: this task is the only writer of its source partitions from now on.
        await self._log.start(follow=False)
        try:
            self._check_read_whole(self._log)
        except ConnectError:
            await self._log.close()
            raise
        log.get().info(
            "source_offsets_loaded", connector=self.connector, partitions=len(self.state)
        )

    def _check_read_whole(self, read: Log) -> None:
        """Refuses to go on, for a task that writes exactly once, when another writer's open
        transaction kept part of the offsets unread (what it holds back may be this task's own
        last commits, and reading short would have it produce them again); says so otherwise,
        where a record produced twice is allowed."""
        held = getattr(read, "held_back", {})
        if not held:
            return
        where = "; ".join(
            f"{read.topic} partition {p} from offset {at} (its end is {end})"
            for p, (at, end) in held.items()
        )
        if self.owner is None:
            log.get().warning(
                "source_offsets_read_held_back", connector=self.connector, held_back=where
            )
            return
        raise ConnectError(
            f"the source offsets of {self.connector!r} cannot be read whole: a transaction "
            f"left open holds back {where}. One that outlives its producer's "
            "transaction.timeout.ms is hanging: kafka-transactions.sh find-hanging lists each "
            "partition it holds, and abort ends it on one. Abort it on every other partition "
            f"before {read.topic}'s: the task writes again once it can read its offsets, and "
            "its next commit would commit what a hanging transaction still holds on a "
            "partition it writes. Then restart the task"
        )

    async def close(self) -> None:
        await self._log.close()

    def offset(self, partition: Mapping[str, Any]) -> dict[str, Any] | None:
        """The latest stored offset of one source partition, or None."""
        found = self.state.get(canonical_partition(partition))
        return dict(found) if found is not None else None

    def offsets(
        self, partitions: Sequence[Mapping[str, Any]]
    ) -> list[tuple[Mapping[str, Any], dict[str, Any] | None]]:
        """The latest offsets of several source partitions, in order."""
        return [(p, self.offset(p)) for p in partitions]

    async def write(self, latest: Sequence[tuple[Mapping[str, Any], Any]]) -> None:
        """Stores (source partition, offset) pairs and waits for Kafka to acknowledge them."""
        events = [OffsetStored(self.connector, p, o) for p, o in latest]
        self._stored(events, await self._log.append_many(_records(events)))

    def _stored(self, events: Sequence[OffsetStored], landed: Sequence[tuple[int, int]]) -> None:
        for event, (_, at) in zip(events, landed, strict=False):
            self.state = apply_offset(self.state, event)
            self._stored_at[canonical_partition(event.partition)] = at

    async def prepare(
        self, latest: Sequence[tuple[Mapping[str, Any], Any]], marker: Marker | None
    ) -> None:
        """Stores a transaction's offsets as pending, durably, before it commits; ``marker``:
        where one of its records landed. A transaction without records has nothing to lose or
        repeat: its offsets are stored at once."""
        assert self.owner is not None
        if marker is None:
            await self.write(latest)
            return
        pending = Pending(self.connector, self.owner, marker, tuple(latest))
        key = pending_key(self.connector, self.owner).decode()
        [(_, at)] = await self._log.append_many([(key, pending_value(pending))], durable=True)
        self._pending[self.owner] = (at, pending)

    async def settle(self) -> None:
        """After the commit of the transaction it prepared: its offsets, no longer pending."""
        await self.resolve(committed=True)

    async def resolve(self, *, committed: bool) -> None:
        """Settles the owner's pending transaction, if there is one, now that its outcome is
        known: its offsets apply where nothing newer was stored, or, aborted, are dropped."""
        if self.pending is None:
            return
        at, pending = self.pending
        events = settled(pending, at, self._stored_at, committed)
        dropped = (pending_key(self.connector, pending.owner).decode(), None)
        landed = await self._log.append_many([*_records(events), dropped])
        self._stored(events, landed)
        self._pending.pop(pending.owner, None)

    async def override(self, latest: Sequence[tuple[Mapping[str, Any], Any]]) -> None:
        """Stores offsets an operator set (KIP-875's alter and reset), and drops every
        transaction of the connector still pending in the same write: its offsets must not
        set these back when its task starts."""
        events = [OffsetStored(self.connector, p, o) for p, o in latest]
        dropped = [(pending_key(self.connector, owner).decode(), None) for owner in self._pending]
        self._stored(events, await self._log.append_many([*_records(events), *dropped]))
        self._pending.clear()

    async def resolve_with(self, committed: Callable[[Marker], Awaitable[bool]]) -> None:
        """Settles a transaction left pending by an earlier run of the owner (it stopped
        between storing its offsets and settling them), asking ``committed`` of its marker.
        The caller has fenced that run first: its transaction can no longer change."""
        if self.pending is not None:
            outcome = await committed(self.pending[1].marker)
            log.get().info(
                "pending_offsets_settled",
                connector=self.connector,
                owner=self.owner,
                committed=outcome,
            )
            await self.resolve(committed=outcome)


def _records(events: Iterable[OffsetStored]) -> list[tuple[str, bytes | None]]:
    return [(offset_key(e.connector, e.partition).decode(), offset_value(e.offset)) for e in events]
