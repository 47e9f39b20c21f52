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
``errors.tolerance=all``: then it is skipped as a record a converter refuses (``errors.py``), with
the message it was consumed as, kept until the next flush. Whatever went to the dead letter queue
is acknowledged before ``pre_commit`` and again before the offsets are committed.

The bookkeeping (positions, commits, what is pending, what the task asked for) is one immutable
``SinkOffsets`` value (``sinkoffsets.py``); this module does the I/O and replaces that value after
each step. The task's ``context.executor`` is bound to this process's executor address and closed
with the runner.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Collection, Mapping, Sequence, Set
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener
from aiokafka import TopicPartition as KafkaTopicPartition
from aiokafka.errors import CommitFailedError, IllegalStateError

from headrace.components.converters import converter_for, header_converter_for
from headrace.components.errorpolicy import (
    ErrorPolicy,
    RecordError,
    sink_record_error,
    skip_log_fields,
)
from headrace.components.transforms import TransformChain, parse_chain
from headrace.core.model.offsets import sink_group_id
from headrace.core.observability import log, metrics
from headrace.core.storage.fetch import (
    Batches,
    Consumed,
    Fetched,
    client_of,
    getmany,
    subscribe_pattern,
)
from headrace.runtime import kafka
from headrace.runtime.converted import Converted
from headrace.runtime.deadletter import DeadLetterQueue, acknowledgement, open_dead_letter_queue
from headrace.runtime.executor.client import ExecutorClient, TaskExecutor
from headrace.runtime.lifecycle import unless_stopped
from headrace.runtime.placement import LoopBase, Placement
from headrace.runtime.sink.offsets import SinkOffsets
from headrace.runtime.sink.records import (
    FlushPolicy,
    Message,
    Originals,
    TopicMatcher,
    Where,
    as_consumed,
    subscription,
    to_sink_batch,
    to_sink_record,
)
from headrace.runtime.topicids import TopicIdentity, topic_ids
from headrace.sdk.errors import ConfigException, ConnectError, DataError
from headrace.sdk.records import SinkBatch, SinkRecord, TopicPartition
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
        self._dlq: DeadLetterQueue | None = None
        self._matcher: TopicMatcher | None = None  # with topics.regex
        self._originals = Originals()  # the messages behind what the task holds unflushed
        self._errant: RecordError | None = None  # reported under errors.tolerance=none
        self._executor: TaskExecutor | None = None
        # Topic ids are asked over the consumer's own connections: it runs before any write.
        self._topics = TopicIdentity(lambda topics: topic_ids(self._kafka_client(), topics))
        self._lock = asyncio.Lock()  # one of: a batch, a flush, a rebalance callback
        self._flushing: asyncio.Task[None] | None = None  # the batch and flush in flight
        self._epoch = 0  # rebalances and seeks so far: a fetch prepared before one is stale
        self._offsets = SinkOffsets(last_flush=time.monotonic())
        self._listener_error: BaseException | None = None
        self._closed = False
        self._broken = False  # the loop failed: nothing more may be committed
        self._log = log.get(connector=self.connector, task=self.task_id)
        self._chain = TransformChain()
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
        # Key, value and header converters, in the order sinkrecords' functions take them.
        if isinstance(self.task, Converted):  # by the JVM: bytes here
            self._converters = (
                self.task.key_converter,
                self.task.value_converter,
                self.task.header_converter,
            )
        else:
            self._converters = (
                converter_for(self.connector_config, "key"),
                converter_for(self.connector_config, "value"),
                header_converter_for(self.connector_config),
            )
            self._chain = parse_chain(self.connector_config)
        # A task that keeps the SDK's put_batch (which calls put) is given records one by one,
        # and so is every task whose records go through transforms, which take one at a time.
        self._wants_batches = (
            type(self.task).put_batch is not SinkTask.put_batch and self._chain.takes_batches
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
                errant_record_reporter=ErrantRecordReporter(self._report),
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
        self._dlq = await open_dead_letter_queue(
            self.settings,
            self._policy,
            f"{client_id}-dlq",
            self.connector,
            self.task_id,
            self.connector_config,
        )
        defaults = {
            "group_id": sink_group_id(self.settings.cluster, self.connector),
            "client_id": client_id,
            "auto_offset_reset": "earliest",
            "max_poll_records": DEFAULT_MAX_POLL_RECORDS,
            # A subscribed topic that does not exist yet (its source has not created it) is
            # looked for again this often: aiokafka's default waits five minutes.
            "metadata_max_age_ms": SUBSCRIPTION_REFRESH_MS,
        }
        self._consumer = kafka.consumer(self.settings, self.connector_config, defaults)
        await self._consumer.start()
        listener = _Rebalance(self)
        if pattern is not None:
            self._matcher = TopicMatcher(pattern, self.settings.cluster)
            subscribe_pattern(self._consumer, self._matcher, listener)
        else:
            self._consumer.subscribe(topics=topics, listener=listener)

    def _kafka_client(self) -> Any:
        if self._consumer is None:
            raise ConnectError("the task's consumer is not running")
        return client_of(self._consumer)

    def assignment(self) -> set[TopicPartition]:
        """The partitions this task consumes now."""
        if self._consumer is None:
            return set()
        return {TopicPartition(tp.topic, tp.partition) for tp in self._consumer.assignment()}

    def _request_commit(self) -> None:
        self._offsets = self._offsets.with_commit_requested()

    def _request_offsets(self, offsets: Mapping[TopicPartition, int]) -> None:
        self._check_assigned(offsets.keys(), "reset the offsets of")
        self._offsets = self._offsets.with_requested(offsets)

    def _pause(self, partitions: Set[TopicPartition]) -> None:
        self._check_assigned(partitions, "pause")
        self._offsets = self._offsets.with_paused(partitions)
        if self._consumer is not None:
            self._consumer.pause(*_theirs(partitions))

    def _resume(self, partitions: Set[TopicPartition]) -> None:
        self._check_assigned(partitions, "resume")
        self._offsets = self._offsets.with_resumed(partitions)
        if self._consumer is not None:
            self._consumer.resume(*_theirs(partitions))

    def _check_assigned(self, partitions: Collection[TopicPartition], what: str) -> None:
        foreign = sorted(set(partitions) - self.assignment())
        if foreign:
            named = ", ".join(map(str, foreign))
            raise ConnectError(f"a sink task may not {what} partitions it is not assigned: {named}")

    async def run(self) -> None:
        """Consumes and delivers until a stop is requested; a raising plugin ends it."""
        try:
            await self._consume()
        except Exception:
            # Whatever was fetched but not delivered must never be committed. The task leaves
            # the group at once, as Kafka Connect's failed tasks do, so its partitions go to a
            # healthy task, which reads them again from the last commit.
            self._broken = True
            await self._abandon_flush()
            await self._leave_group()
            raise
        except BaseException:
            self._broken = True  # cancelled mid-batch by a stop that ran out of time
            if self._flushing is not None:
                self._flushing.cancel()  # before the task's stop, which comes next
            raise

    async def _leave_group(self) -> None:
        consumer, self._consumer = self._consumer, None
        if consumer is not None:
            try:
                await consumer.stop()
            except Exception as exc:  # noqa: BLE001 - the task's own error is the one to report
                self._log.warning("consumer_close_failed", error=repr(exc))

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
            prepared = self._prepare(batch, epoch, changes) if batch else None
            await self._flushed()
            if prepared is not None:
                # A stale fetch is dropped here, while no other is under way: the seek that
                # follows makes stale only fetches begun before it, and none is.
                async with self._lock:
                    if await self._dropped(prepared):
                        prepared = None
            self._flushing = asyncio.create_task(self._deliver(prepared))
            await self._measure_lag()

    async def _measure_lag(self) -> None:
        """Sets the lag gauge as Kafka's consumers count theirs: per partition, its last stable
        offset (the end a read_committed consumer can reach) less the consumer's position, as
        of the last fetch. A partition not fetched yet in this assignment counts nothing."""
        if self._metrics is None or self._consumer is None:
            return
        ends: dict[KafkaTopicPartition, int] = {}
        for tp in self._consumer.assignment():  # no await in this loop: the set holds still
            end = self._consumer.last_stable_offset(tp)
            if end is None or end < 0:
                end = self._consumer.highwater(tp)
            if end is not None:
                ends[tp] = end
        lag = 0
        for tp, end in ends.items():
            try:
                lag += max(0, end - await self._consumer.position(tp))
            except IllegalStateError:
                continue  # revoked meanwhile
        self._metrics.lag.set(lag)

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
        for tp, offset in sought.items():
            self._consumer.seek(KafkaTopicPartition(tp.topic, tp.partition), offset)
        if sought:
            self._log.info(
                "offsets_reset_by_task", offsets={str(tp): o for tp, o in sought.items()}
            )

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

    async def _abandon_flush(self) -> None:
        """Ends the batch and flush in flight, if any, without waiting for them to finish;
        logs the error they ended with, if they failed on their own."""
        flushing, self._flushing = self._flushing, None
        if flushing is None:
            return
        flushing.cancel()
        await asyncio.wait({flushing})
        if not flushing.cancelled() and flushing.exception() is not None:
            self._log.error("flush_failed", error=repr(flushing.exception()))

    async def _flushed(self) -> None:
        """Waits for the batch and flush in flight, if any; raises what they raised."""
        flushing, self._flushing = self._flushing, None
        if flushing is not None:
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
        self._chain.close()
        if self._metrics is not None:
            # A gauge cannot be taken out of a process's metrics file: its task stopped here,
            # so this process no longer holds anything of its partitions.
            self._metrics.lag.set(0)
        await self._abandon_flush()  # only when the loop was cut short: finish waited for it
        if self._consumer is not None:
            await self._consumer.stop()
            self._consumer = None
        if self._dlq is not None:
            await self._dlq.close()
            self._dlq = None
        if self._executor is not None:
            await self._executor.close()
            self._executor = None

    def _prepare(
        self, batch: Mapping[KafkaTopicPartition, Fetched | Batches], epoch: int, changes: int
    ) -> Prepared:
        """A fetch converted for the task: columns where its converters allow, records
        otherwise. A record they refuse fails the task here, or is kept aside to be skipped
        when the fetch is handed over (a dropped fetch skips nothing)."""
        prepared = Prepared(epoch, changes, time.monotonic())  # as the fetch returned
        assigned = self.assignment()
        for tp, messages in batch.items():
            ours = TopicPartition(tp.topic, tp.partition)
            if ours not in assigned:
                continue  # revoked since the fetch: its new owner reads these again
            self._convert(prepared, ours, messages)
            prepared.messages[ours] = messages
            prepared.positions[ours] = messages.following
            prepared.fetched += len(messages)
        return prepared

    def _convert(self, prepared: Prepared, tp: TopicPartition, messages: Fetched | Batches) -> None:
        """One partition's messages, as the task takes them: as consumed for a task converted
        where it runs; else columns where the converters make them, or records."""
        if isinstance(self.task, Converted):
            prepared.consumed.pieces.append(messages)
            return
        columns = (
            to_sink_batch(tp, messages, *self._converters, arrow_values=self.task.ARROW_VALUES)
            if self._wants_batches
            else None
        )
        if columns is not None:
            prepared.columns.append(columns)
            return
        for message in messages:
            try:
                record = self._transformed(message, to_sink_record(message, *self._converters))
            except RecordError as exc:
                if not self._policy.tolerate_all:
                    raise
                prepared.refused.append((message, exc))
                continue
            if record is not None:  # else a transform dropped it
                prepared.records.append(record)
                if (record.topic, record.partition) != (tp.topic, tp.partition):
                    prepared.moved[(record.topic, record.partition, record.offset)] = message

    def _transformed(self, message: Message, record: SinkRecord) -> SinkRecord | None:
        """The record after the connector's transforms; None when one dropped it."""
        try:
            return self._chain.apply(record)
        except DataError as exc:
            raise sink_record_error(
                "transform",
                message.topic,
                message.partition,
                message.offset,
                exc,
                type(self._chain),
            ) from exc

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
        delivered, skipped = self.delivered, self.skipped
        for message, error in prepared.refused:
            await self._tolerate(message, error)
        for columns in prepared.columns:
            await self.retried("put_batch", partial(self.task.put_batch, columns))
            self.delivered += len(columns)
        if prepared.records:
            await self.retried("put", partial(self.task.put, prepared.records))
            self.delivered += len(prepared.records)
        if prepared.consumed:
            assert isinstance(self.task, Converted)
            await self.retried("put", partial(self.task.put_consumed, prepared.consumed))
            self.delivered += len(prepared.consumed)
        if self._metrics is not None:
            self._metrics.batch(
                prepared.fetched,
                self.delivered - delivered,
                self.skipped - skipped,
                time.monotonic() - prepared.fetched_at,
            )
        self._raise_errant()
        # Only now that the task holds them may these offsets be committed.
        self._offsets = self._offsets.delivered(prepared.positions, prepared.fetched)

    async def _seek_to_task(self, partitions: Collection[TopicPartition]) -> None:
        """Partitions back to where the task stands: the position of what it holds (or was
        sought to at its request) in this assignment, else the group's committed offset, else
        the start (``earliest``, as the consumer resets)."""
        assert self._consumer is not None
        self._epoch += 1  # a fetch begun before the seek read from the old positions
        for tp in partitions:
            theirs = KafkaTopicPartition(tp.topic, tp.partition)
            position = self._offsets.positions.get(tp)
            if position is None:
                position = await self._consumer.committed(theirs)
            if position is None:
                await self._consumer.seek_to_beginning(theirs)
            else:
                self._consumer.seek(theirs, position)

    async def _report(self, record: SinkRecord, error: BaseException) -> asyncio.Future[None]:
        """What ``errant_record_reporter.report`` does: fails the task, or skips the record
        with the message it was consumed as."""
        where = (record.topic, record.partition, record.offset)
        failure = (
            error  # a stage failed where a converted task's records were made
            if isinstance(error, RecordError)
            else sink_record_error("task put", *where, error, type(self.task))
        )
        if not self._policy.tolerate_all:
            self._errant = self._errant or failure
            if failure is error:
                raise failure
            raise failure from error
        message = self._originals.find(record)
        if message is None:
            message = as_consumed(record, *self._converters)
        return acknowledgement(await self._tolerate(message, failure))

    def _raise_errant(self) -> None:
        """Fails the loop with a record the task reported under ``errors.tolerance=none``, even
        if the task caught what ``report`` raised (as Connect does)."""
        if self._errant is not None:
            raise self._errant

    async def _tolerate(self, message: Message, error: RecordError) -> asyncio.Future[Any] | None:
        """Skips a record under ``errors.tolerance=all``: counts it, logs it if
        ``errors.log.enable`` says so, and sends it to the dead letter queue, if there is one
        (the future of that send)."""
        self.skipped += 1
        if self._policy.log_errors:
            self._log.error(
                "record_skipped",
                dead_letter_topic=self._policy.dlq_topic,
                skipped_total=self.skipped,
                **skip_log_fields(error, self._policy, message),
            )
        return None if self._dlq is None else await self._dlq.send(message, error)

    async def _dead_letters_acknowledged(self) -> None:
        if self._dlq is not None:
            await self._dlq.acknowledged()

    async def _commit(self, only: set[TopicPartition] | None = None) -> None:
        """pre_commit (which flushes) the current positions, then commits what it returned."""
        if self._broken:
            return
        assert self._consumer is not None
        assigned = self.assignment()
        await self._dead_letters_acknowledged()
        with self.plugin_call("pre_commit"):  # flush, unless the task overrides it
            committable = await self.task.pre_commit(self._offsets.for_pre_commit(assigned, only))
        self._raise_errant()
        await self._dead_letters_acknowledged()  # what the task reported while flushing
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


@dataclass
class Prepared:
    """One fetch, converted, waiting for the task (``epoch``: the rebalances and seeks seen
    before it; ``changes``: the task's requests; ``fetched_at``: when it was fetched,
    monotonic), with the messages it came from (``moved``: those a transform gave another topic
    or partition, by where their record says it is)."""

    epoch: int
    changes: int
    fetched_at: float
    columns: list[SinkBatch] = field(default_factory=list)
    records: list[SinkRecord] = field(default_factory=list)
    consumed: Consumed = field(default_factory=Consumed)  # a converted task's, as they came
    positions: dict[TopicPartition, int] = field(default_factory=dict)
    fetched: int = 0
    refused: list[tuple[Message, RecordError]] = field(default_factory=list)
    messages: dict[TopicPartition, Sequence[Message]] = field(default_factory=dict)
    moved: dict[Where, Message] = field(default_factory=dict)


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
