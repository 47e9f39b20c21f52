"""The sink task loop: consume -> convert -> put -> pre_commit (flush) -> commit group offsets.

The consumer group is ``<cluster>-connect-<connector>`` (Connect's ``connect-<name>``, prefixed by
the cluster), with auto-commit off and ``earliest`` reset, reading committed records only,
subscribed to ``topics`` or ``topics.regex``. The group's generation fences a zombie: once its
partitions were given to another member, its offset commits are refused.

Records are delivered in batches: one ``put`` per ``getmany``, or, to a task with the batch API,
one ``put_batch`` per partition whose records its converters turn into columns. Offsets are
committed only after ``pre_commit`` (by default ``flush``) returned, so a record is never marked
consumed before the plugin made it durable: at-least-once, or exactly-once for idempotent sinks.

No stalls: while the task takes a batch (its ``put``, then the flush when one is due), the loop
fetches and converts the next one, and hands it over once the task is done, so the task is
called for one thing at a time, and ``put`` and ``flush`` never overlap. A batch fetched before
a rebalance, or before its partitions were sought, is dropped: its partitions are read again
from where the task stands.

When to flush: by default after every non-empty batch. ``flush.max.records`` (flush once that many
records are pending) and ``offset.flush.interval.ms`` (flush once that long passed since the last
flush) make flushes rarer, for sinks that prefer larger writes. A task may also ask for one with
``context.request_commit()``. Partitions revoked by a rebalance are flushed and committed first,
then the task's ``close`` is called; ``open`` is called on assignment.

The task steers its consumption through its context, as in Connect: ``context.offset`` seeks
before the next fetch, or right after ``open`` when called there; ``context.pause`` and ``resume``
take effect at once, and a rebalance that keeps a paused partition pauses it again. A fetch that
began before such a request is dropped, as one that began before a rebalance is, and its
partitions are read again from where the task stands.

A record the task reports as errant (``context.errant_record_reporter``) fails it, unless
``errors.tolerance=all``: then it is skipped as a record a converter refuses (``errant.py``), with
the message it was consumed as, kept until the next flush. Whatever went to the dead letter queue
is acknowledged before ``pre_commit`` and again before the offsets are committed.

The bookkeeping (positions, commits, what is pending, what the task asked for) is one immutable
``SinkOffsets`` value (``offsets.py``); what a fetch becomes for the task is ``prepare.py``'s, and
what a stage or the task refused is ``errant.py``'s. This module does the I/O and replaces the
bookkeeping's value after each step. The task's ``context.executor`` is bound to this process's
executor address and closed with the runner.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Collection, Iterator, Mapping, Set
from functools import partial
from typing import Any

from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener
from aiokafka import TopicPartition as KafkaTopicPartition
from aiokafka.errors import CommitFailedError
from structlog.typing import FilteringBoundLogger

from headrace.clients.executor import ExecutorClient
from headrace.components.errorpolicy import (
    ErrorPolicy,
)
from headrace.core.model.offsets import sink_group_id
from headrace.core.observability import log, metrics
from headrace.core.storage.fetch import (
    client_of,
    getmany,
    lag,
    subscribe_pattern,
)
from headrace.runtime import kafka
from headrace.runtime.converted import Converted
from headrace.runtime.deadletter import open_dead_letter_queue
from headrace.runtime.lifecycle import unless_stopped
from headrace.runtime.placement import LoopBase, Placement
from headrace.runtime.sink.errant import Errant
from headrace.runtime.sink.executor import TaskExecutor
from headrace.runtime.sink.offsets import SinkOffsets
from headrace.runtime.sink.prepare import Prepared, Preparer
from headrace.runtime.sink.records import (
    FlushPolicy,
    Originals,
    TopicMatcher,
    subscription,
)
from headrace.runtime.topicids import TopicIdentity, topic_ids
from headrace.sdk.errors import ConfigException, ConnectError
from headrace.sdk.records import TopicPartition
from headrace.sdk.task import ErrantRecordReporter, SinkTask, SinkTaskContext

FETCH_TIMEOUT_MS = 1000
SUBSCRIPTION_REFRESH_MS = 5_000
DEFAULT_MAX_POLL_RECORDS = 10_000
"""Records one ``getmany`` hands over at most, unless ``consumer.override.max.poll.records``
says otherwise: about one default fetch (1 MiB per partition) of 100-byte records. Each batch
costs a put, a flush and an offset commit, so larger ones cost less per record."""


class SinkRunner(LoopBase):
    """Runs one sink task inside the plugin process."""

    def __init__(self, placement: Placement, task: SinkTask) -> None:
        super().__init__(placement)
        self.task = task
        self.delivered = 0
        self._consumer: AIOKafkaConsumer | None = None
        self._matcher: TopicMatcher | None = None  # with topics.regex
        self._originals = Originals()  # the messages behind what the task holds unflushed
        self._errant: Errant | None = None  # once started
        self._executor: TaskExecutor | None = None
        # Topic ids are asked over the consumer's own connections: it runs before any write.
        self._topics = TopicIdentity(lambda topics: topic_ids(kafka_client(self._consumer), topics))
        self._lock = asyncio.Lock()  # one of: a batch, a flush, a rebalance callback
        self._flushing: asyncio.Task[None] | None = None  # the batch and flush in flight
        self._epoch = 0  # rebalances and seeks so far: a fetch prepared before one is stale
        self._offsets = SinkOffsets(last_flush=time.monotonic())
        self._listener_error: BaseException | None = None
        self._closed = False
        self._broken = False  # the loop failed: nothing more may be committed
        self._log = log.get(connector=self.connector, task=self.task_id)
        self._preparer: Preparer | None = None  # once started
        self._metrics: metrics.SinkTaskMetrics | None = None  # once its loop may run

    async def start(self, loop: bool = True) -> None:
        """Reads the framework config, starts the plugin's task, then joins the group; without
        ``loop`` (a clean-up, which consumes nothing) the task is only started."""
        config = {**self.connector_config, **self.task_config}
        topics, pattern = subscription(config)
        self._policy = ErrorPolicy.from_config(self.connector_config)
        if self._policy.dlq_topic and self._policy.dlq_topic in topics:
            raise ConfigException("errors.deadletterqueue.topic.name must not be a consumed topic")
        self._flush_policy = FlushPolicy.from_config(config)
        self._preparer = Preparer.of(self.task, self.connector_config, self._policy)
        self._errant = Errant(
            self._policy,
            type(self.task),
            self._log,
            self._skip,
            lambda record: self._originals.find(record),
            self._preparer.converters,
        )
        self._executor = TaskExecutor(
            ExecutorClient(self.settings.executor_addr, settings=self.settings),
            self.connector,
            self.task_id,
            self._topics,
        )
        self.task.initialize(
            SinkTaskContext(
                self.connector,
                self.task_id,
                self.assignment,
                self._request_commit,
                executor=self._executor,
                logger=self._log,
                paths=self.paths,
                errant_record_reporter=ErrantRecordReporter(self._errant.report),
                _offset=self._request_offsets,
                _pause=self._pause,
                _resume=self._resume,
            )
        )
        with self.plugin_call("start"):
            await self.task.start(self.task_config)
        if not loop:
            return
        self._metrics = metrics.SinkTaskMetrics(self.connector, self.task_id)
        client_id = kafka.task_client_id(self.settings, self.connector, self.task_id)
        self._errant.dlq = await open_dead_letter_queue(
            self.settings,
            self._policy,
            f"{client_id}-dlq",
            self.connector,
            self.task_id,
            self.connector_config,
        )
        self._consumer = await sink_consumer(self, client_id)
        listener = _Rebalance(self)
        if pattern is not None:
            self._matcher = TopicMatcher(pattern, self.settings.cluster)
            subscribe_pattern(self._consumer, self._matcher, listener)
        else:
            self._consumer.subscribe(topics=topics, listener=listener)

    def assignment(self) -> set[TopicPartition]:
        """The partitions this task consumes now."""
        if self._consumer is None:
            return set()
        return {TopicPartition(tp.topic, tp.partition) for tp in self._consumer.assignment()}

    def _request_commit(self) -> None:
        self._offsets = self._offsets.with_commit_requested()

    def _request_offsets(self, offsets: Mapping[TopicPartition, int]) -> None:
        refuse_foreign(offsets.keys(), self.assignment(), "reset the offsets of")
        self._offsets = self._offsets.with_requested(offsets)

    def _pause(self, partitions: Set[TopicPartition]) -> None:
        refuse_foreign(partitions, self.assignment(), "pause")
        self._offsets = self._offsets.with_paused(partitions)
        if self._consumer is not None:
            self._consumer.pause(*_theirs(partitions))

    def _resume(self, partitions: Set[TopicPartition]) -> None:
        refuse_foreign(partitions, self.assignment(), "resume")
        self._offsets = self._offsets.with_resumed(partitions)
        if self._consumer is not None:
            self._consumer.resume(*_theirs(partitions))

    async def run(self) -> None:
        """Consumes and delivers until a stop is requested; a raising plugin ends it."""
        try:
            await self._consume()
        except Exception:
            # Whatever was fetched but not delivered must never be committed. The task leaves
            # the group at once, as Kafka Connect's failed tasks do, so its partitions go to a
            # healthy task, which reads them again from the last commit.
            self._broken = True
            await abandon(self._take_flushing(), self._log)
            consumer, self._consumer = self._consumer, None
            await leave_group(consumer, self._log)
            raise
        except BaseException:
            self._broken = True  # cancelled mid-batch by a stop that ran out of time
            if self._flushing is not None:
                self._flushing.cancel()  # before the task's stop, which comes next
            raise

    async def _consume(self) -> None:
        assert self._consumer is not None
        while not self.stop_requested.is_set():
            await self._seek_requested_offsets()
            # Before the fetch: a rebalance or a task's request during it makes the fetch stale.
            epoch, changes = self._epoch, self._offsets.changes
            # A task converted where it runs takes the record batches as the broker sent them.
            whole = isinstance(self.task, Converted)
            batch = await unless_stopped(
                self.stop_requested, getmany(self._consumer, FETCH_TIMEOUT_MS, whole)
            )
            if self._listener_error is not None:
                raise self._listener_error
            if self._matcher is not None and self._matcher.failure is not None:
                raise ConfigException(self._matcher.failure)
            if batch is None:
                break
            self.used(tp.topic for tp in batch)
            # Fetched and converted while the task still takes the previous batch: the loop
            # stalls on neither. One batch with the task and one ready, at most.
            assert self._preparer is not None
            prepared = (
                self._preparer.prepare(batch, self.assignment(), epoch, changes) if batch else None
            )
            await self._flushed()
            if prepared is not None:
                # A stale fetch is dropped here, while no other is under way: the seek that
                # follows makes stale only fetches begun before it, and none is.
                async with self._lock:
                    if await self._dropped(prepared):
                        prepared = None
            self._flushing = asyncio.create_task(self._deliver(prepared))
            if self._metrics is not None:
                self._metrics.lag.set(await lag(self._consumer))

    async def _seek_requested_offsets(self) -> None:
        """Seeks where the task asked to go on from, once the flush in flight (which commits
        the positions this moves) is done."""
        if not self._offsets.requested:
            return
        await self._flushed()
        async with self._lock:
            self._seek_requested()

    def _seek_requested(self) -> None:
        assert self._consumer is not None
        sought, self._offsets = self._offsets.rewound(self.assignment())
        if sought:
            self._epoch += 1  # a fetch begun before the seek read from the old positions
            seek(self._consumer, sought, self._log)

    async def _deliver(self, prepared: Prepared | None) -> None:
        """Hands a batch to the task, then flushes and commits if a flush is due."""
        try:
            async with self._lock:
                if prepared is not None:
                    await self._hand_over(prepared)
                if self._offsets.flush_due(self._flush_policy, time.monotonic()):
                    await self._commit()
        except BaseException:
            self._broken = True  # what the task held may not be durable: commit nothing more
            raise

    def _take_flushing(self) -> asyncio.Task[None] | None:
        flushing, self._flushing = self._flushing, None
        return flushing

    async def _flushed(self) -> None:
        """Waits for the batch and flush in flight, if any; raises what they raised."""
        if (flushing := self._take_flushing()) is not None:
            await flushing

    async def finish(self) -> None:
        """Flushes and commits what was delivered, then closes the task's partitions."""
        try:
            await self._flushed()
            async with self._lock:
                await self._commit()
                assigned = self.assignment()
                if assigned:
                    with self.plugin_call("close"):
                        await self.task.close(assigned)
        except BaseException:
            self._broken = True  # cut short (a stop out of time): commit nothing more
            raise

    async def close(self) -> None:
        """Leaves the group, closes the Kafka clients and the executor's connection (after the
        task was stopped)."""
        self._closed = True  # leaving the group must not call back into a stopped task
        if self._metrics is not None:
            # A gauge cannot be taken out of a process's metrics file: its task stopped here,
            # so this process no longer holds anything of its partitions.
            self._metrics.lag.set(0)
        # Only when the loop was cut short: finish waited for it.
        await abandon(self._take_flushing(), self._log)
        consumer, self._consumer = self._consumer, None
        executor, self._executor = self._executor, None
        await close_parts(self._preparer, consumer, self._errant, executor)

    async def _dropped(self, prepared: Prepared) -> bool:
        """Drops a fetch that a rebalance or a seek came after it began (then every partition
        now assigned goes back to where the task stands: the position of what it holds, its
        committed offset, or where it asked in ``open`` to go on from), or a request of the task
        (an offset, a pause: its partitions go back the same way). Nothing of it was handed over,
        so no record of it is lost (whether read before the change or after), and none is given
        twice. Returns whether it was dropped."""
        if prepared.epoch != self._epoch:
            self._log.info("fetch_dropped_after_rebalance_or_seek", records=prepared.fetched)
            await self._seek_to_task(self.assignment())
            return True
        if prepared.changes != self._offsets.changes:
            self._log.info("fetch_dropped_after_task_request", records=prepared.fetched)
            await self._seek_to_task(prepared.positions.keys())
            return True
        return False

    async def _hand_over(self, prepared: Prepared) -> None:
        """Gives the task a prepared fetch, unless it is stale (``_dropped``)."""
        if await self._dropped(prepared):
            return
        self._originals = self._originals.with_fetch(prepared.messages, prepared.moved)
        errant = self._errant
        assert errant is not None
        delivered, skipped = self.delivered, self.skipped
        for message, error in prepared.refused:
            await errant.tolerate(message, error)
        for name, call, count in puts(self.task, prepared):
            await self.retried(name, call)
            self.delivered += count
        if self._metrics is not None:
            self._metrics.batch(
                prepared.fetched,
                self.delivered - delivered,
                self.skipped - skipped,
                time.monotonic() - prepared.fetched_at,
            )
        errant.raise_reported()
        # Only now that the task holds them may these offsets be committed.
        self._offsets = self._offsets.delivered(prepared.positions, prepared.fetched)

    async def _seek_to_task(self, partitions: Collection[TopicPartition]) -> None:
        """Partitions back to where the task stands (:func:`seek_to_task`); a fetch begun
        before is stale."""
        assert self._consumer is not None
        self._epoch += 1
        await seek_to_task(self._consumer, self._offsets.positions, partitions)

    async def _commit(self, only: set[TopicPartition] | None = None) -> None:
        """pre_commit (which flushes) the current positions, then commits what it returned."""
        if self._broken:
            return
        assert self._consumer is not None and self._errant is not None
        errant, assigned = self._errant, self.assignment()
        await errant.acknowledged()
        with self.plugin_call("pre_commit"):  # flush, unless the task overrides it
            committable = await self.task.pre_commit(self._offsets.for_pre_commit(assigned, only))
        errant.raise_reported()
        await errant.acknowledged()  # what the task reported while flushing
        self._originals = self._originals.without(only)
        offsets = self._offsets.to_commit(committable, assigned)
        self._offsets = self._offsets.after_flush(time.monotonic())
        if not offsets:
            return
        try:
            await self._consumer.commit(
                {KafkaTopicPartition(tp.topic, tp.partition): o for tp, o in offsets.items()}
            )
        except CommitFailedError as exc:
            # The group moved on; the new owner re-reads from the last commit (at-least-once).
            self._log.warning("offset_commit_failed", error=str(exc))
            return
        self._offsets = self._offsets.after_commit(offsets)

    def _skip(self) -> int:
        """Counts a record skipped; how many so far."""
        self.skipped += 1
        return self.skipped

    def _stopping(self) -> bool:
        """Whether the task is being stopped: a rebalance calls nothing of it any more (its
        partitions are committed and closed by ``finish``, and the task's ``stop`` may be
        running; found by the nemesis, seed 413: a rebalance's commit wrote a later range of a
        partition while the stop waited for an earlier one, which never landed)."""
        return self._closed or self.stop_requested.is_set()

    async def on_revoked(self, revoked: set[TopicPartition]) -> None:
        """Flushes and commits revoked partitions, then closes them in the task."""
        self._epoch += 1
        if not revoked or self._stopping():
            return
        async with self._lock:
            if self._stopping():  # asked while this waited for the lock
                return
            await self._commit(only=revoked)
            with self.plugin_call("close"):
                await self.task.close(revoked)
        self._offsets = self._offsets.after_revocation(revoked)
        self._topics.unpin({tp.topic for tp in revoked})

    async def on_assigned(self, assigned: set[TopicPartition]) -> None:
        """Opens newly assigned partitions in the task, then pauses again those it paused and
        still has, and seeks to the offsets it asked for (in ``open``, or before the rebalance)."""
        self._epoch += 1
        if self._stopping() or self._consumer is None:
            return
        async with self._lock:
            if self._stopping():
                return
            self._offsets = self._offsets.after_assignment(assigned)
            # Before any record of theirs is read: records are written under these ids only.
            await self._topics.pin({tp.topic for tp in assigned})
            if assigned:
                with self.plugin_call("open"):
                    await self.task.open(assigned)
            self._consumer.pause(*_theirs(self._offsets.paused))
            self._seek_requested()


class _Rebalance(ConsumerRebalanceListener):
    """Forwards rebalances to the runner; keeps their errors, which aiokafka would only log."""

    def __init__(self, runner: SinkRunner) -> None:
        self.runner = runner

    async def on_partitions_revoked(self, revoked: Any) -> None:
        await self._guard(self.runner.on_revoked(_ours(revoked)))

    async def on_partitions_assigned(self, assigned: Any) -> None:
        await self._guard(self.runner.on_assigned(_ours(assigned)))

    async def _guard(self, work: Any) -> None:
        try:
            await work
        except Exception as exc:  # noqa: BLE001 - re-raised from the task's own loop
            self.runner._listener_error = exc


def _ours(partitions: Any) -> set[TopicPartition]:
    return {TopicPartition(tp.topic, tp.partition) for tp in partitions}


def _theirs(partitions: Collection[TopicPartition]) -> list[KafkaTopicPartition]:
    return [KafkaTopicPartition(tp.topic, tp.partition) for tp in partitions]


async def sink_consumer(runner: SinkRunner, client_id: str) -> AIOKafkaConsumer:
    """A sink task's consumer, started: in its connector's group, from the earliest offset
    where the group has none, with the connector's client overrides."""
    defaults = {
        "group_id": sink_group_id(runner.settings.cluster, runner.connector),
        "client_id": client_id,
        "auto_offset_reset": "earliest",
        "max_poll_records": DEFAULT_MAX_POLL_RECORDS,
        # A subscribed topic that does not exist yet (its source has not created it) is
        # looked for again this often: aiokafka's default waits five minutes.
        "metadata_max_age_ms": SUBSCRIPTION_REFRESH_MS,
    }
    consumer = kafka.consumer(runner.settings, runner.connector_config, defaults)
    await consumer.start()
    return consumer


async def leave_group(consumer: AIOKafkaConsumer | None, log: FilteringBoundLogger) -> None:
    """Stops a failed task's consumer, so that its partitions go to a healthy task at once; a
    failure to is logged (the task's own error is the one to report)."""
    if consumer is not None:
        try:
            await consumer.stop()
        except Exception as exc:  # noqa: BLE001
            log.warning("consumer_close_failed", error=repr(exc))


async def abandon(flushing: asyncio.Task[None] | None, log: FilteringBoundLogger) -> None:
    """Ends a batch and flush in flight, if any, without waiting for them to finish; logs the
    error they ended with, if they failed on their own."""
    if flushing is None:
        return
    flushing.cancel()
    await asyncio.wait({flushing})
    if not flushing.cancelled() and flushing.exception() is not None:
        log.error("flush_failed", error=repr(flushing.exception()))


def refuse_foreign(
    partitions: Collection[TopicPartition], assigned: Set[TopicPartition], what: str
) -> None:
    """ConnectError when a task asks to ``what`` partitions it is not assigned."""
    foreign = sorted(set(partitions) - assigned)
    if foreign:
        named = ", ".join(map(str, foreign))
        raise ConnectError(f"a sink task may not {what} partitions it is not assigned: {named}")


async def seek_to_task(
    consumer: AIOKafkaConsumer,
    positions: Mapping[TopicPartition, int],
    partitions: Collection[TopicPartition],
) -> None:
    """Partitions back to where the task stands: the position of what it holds (or was sought
    to at its request) in this assignment, else the group's committed offset, else the start
    (``earliest``, as the consumer resets)."""
    for tp in partitions:
        theirs = KafkaTopicPartition(tp.topic, tp.partition)
        position = positions.get(tp)
        if position is None:
            position = await consumer.committed(theirs)
        if position is None:
            await consumer.seek_to_beginning(theirs)
        else:
            consumer.seek(theirs, position)


async def close_parts(
    preparer: Preparer | None,
    consumer: AIOKafkaConsumer | None,
    errant: Errant | None,
    executor: TaskExecutor | None,
) -> None:
    """Closes what a sink task's loop opened: its transforms, its consumer (which leaves the
    group), its dead letter queue's producer and its executor's connection."""
    if preparer is not None:
        preparer.close()
    if consumer is not None:
        await consumer.stop()
    if errant is not None:
        await errant.close()
    if executor is not None:
        await executor.close()


def kafka_client(consumer: AIOKafkaConsumer | None) -> Any:
    """The client a task's consumer connects through (topic ids are asked over it)."""
    if consumer is None:
        raise ConnectError("the task's consumer is not running")
    return client_of(consumer)


def puts(
    task: SinkTask, prepared: Prepared
) -> Iterator[tuple[str, Callable[[], Awaitable[None]], int]]:
    """The task's calls that hand it a prepared fetch, each with its name and how many records
    it hands: a ``put_batch`` per partition in columns, one ``put`` of the records, or for a
    task converted where it runs one ``put`` of the record batches as consumed."""
    for columns in prepared.columns:
        yield "put_batch", partial(task.put_batch, columns), len(columns)
    if prepared.records:
        yield "put", partial(task.put, prepared.records), len(prepared.records)
    if prepared.consumed:
        assert isinstance(task, Converted)
        yield "put", partial(task.put_consumed, prepared.consumed), len(prepared.consumed)


def seek(
    consumer: AIOKafkaConsumer, sought: Mapping[TopicPartition, int], log: FilteringBoundLogger
) -> None:
    """Seeks the partitions to where the task asked to go on from, and says so."""
    for tp, offset in sought.items():
        consumer.seek(KafkaTopicPartition(tp.topic, tp.partition), offset)
    log.info("offsets_reset_by_task", offsets={str(tp): o for tp, o in sought.items()})
