"""The source task loop: poll -> convert -> produce in a transaction -> at its boundary, store
offsets and commit -> commit_record -> commit.

Each batch ``poll`` returns is produced as a whole, in one Kafka batch per topic-partition
(``produce.py``), into the task's open Kafka transaction (``transactions.py``). Where a
transaction ends is the connector's ``transaction.boundary`` (``boundaries.py``): after every
poll by default, after an interval, or where the task asks. At the end, the latest source
offset of each source partition it holds is written to the offsets topic in the same
transaction, and it commits: after a crash the task resumes exactly where its committed data
ends, and a deterministic source neither skips nor repeats a record (exactly once). Once a
poll's records are converted, the next poll is under way while they are produced and their
transaction ends, as Connect's worker polls while the producer sends. A stop
commits the open transaction, unless the task ends its own transactions: then it is aborted,
and its records are polled again after the restart. A transaction the producer fails to write
with a retriable error is aborted and written again whole, as ``errors.retry.*`` say for
``poll`` (``transactions.py``).
"""

from __future__ import annotations

import asyncio
import copy
import functools
import time
from collections.abc import Mapping, Sequence
from itertools import repeat
from typing import Any

from headrace.components.converters import (
    Converter,
    converter_for,
    encode_column,
    encode_headers,
    header_converter_for,
)
from headrace.components.errorpolicy import (
    ErrorPolicy,
    RecordError,
    connect_stage,
    qualified_name,
    source_record_error,
)
from headrace.components.topiccreation import TopicCreation, topic_creation
from headrace.components.transforms import TransformChain, parse_chain
from headrace.core.model.clientconfig import Client
from headrace.core.model.connectorconfig import Boundary, offsets_topic, transactions
from headrace.core.model.offsets import canonical_partition
from headrace.core.observability import log, metrics
from headrace.core.storage.stores import OffsetStore
from headrace.core.storage.topics import ensure_topic, internal_topic
from headrace.runtime import kafka
from headrace.runtime.converted import Converted, Outcomes
from headrace.runtime.lifecycle import abandon, sleep_unless_stopped, unless_stopped
from headrace.runtime.placement import LoopBase, Placement
from headrace.runtime.source.boundaries import End, Requests, is_due, plan
from headrace.runtime.source.deliveries import SourceDeliveries
from headrace.runtime.source.pending import committed
from headrace.runtime.source.produce import Outgoing, TopicLayout
from headrace.runtime.source.transactions import Landed, SourceTransactions
from headrace.sdk.errors import ConnectError, DataError
from headrace.sdk.records import SourceBatch, SourceRecord
from headrace.sdk.task import SourceTask, SourceTaskContext

EMPTY_POLL_BACKOFF_S = 0.1
"""Pause after a poll that returned nothing: a poll that returns [] at once must not spin the
event loop (a coroutine that never really awaits would starve every other task)."""


class SourceRunner(LoopBase):
    """Runs one source task inside the plugin process."""

    def __init__(self, placement: Placement, task: SourceTask) -> None:
        super().__init__(placement)
        self.task = task
        self.produced = 0
        self._transactions: SourceTransactions | SourceDeliveries | None = None
        self._requests: Requests | None = None
        self._chain: TransformChain | Outcomes = TransformChain()
        self._offsets: OffsetStore | None = None
        self._log = log.get(connector=self.connector, task=self.task_id)
        self._creation: TopicCreation | None = None
        self._existing: set[str] = set()  # topics seen to exist: not created again
        self._admin_tuning: dict[str, Any] = {}  # the admin client's that creates them
        self._metrics: metrics.SourceTaskMetrics | None = None  # once its loop may run
        self._ahead: asyncio.Future[list[SourceRecord] | SourceBatch] | None = None

    async def start(self, loop: bool = True) -> None:
        """Reads the framework config, loads stored offsets, then starts the plugin's task;
        without ``loop`` (a clean-up, which produces nothing) there is no producer."""
        self._policy = ErrorPolicy.from_config(self.connector_config)
        self._settings = transactions(self.connector_config, self.settings.exactly_once_source)
        self._creation = topic_creation(self.connector_config)
        if self._creation is not None:
            client_id = kafka.task_client_id(self.settings, self.connector, self.task_id)
            defaults = {"client_id": f"{client_id}-admin"}
            self._admin_tuning = kafka.tuning(
                self.settings, Client.ADMIN, self.connector_config, defaults
            )
        if isinstance(self.task, Converted):  # by the JVM: bytes here
            self._chain = Outcomes(self.task)
            self._key_converter = self.task.key_converter
            self._value_converter = self.task.value_converter
            self._header_converter = self.task.header_converter
        else:
            self._chain = parse_chain(self.connector_config)
            self._key_converter = converter_for(self.connector_config, "key")
            self._value_converter = converter_for(self.connector_config, "value")
            self._header_converter = header_converter_for(self.connector_config)
        send, owner = None, None
        if loop:
            client_id = kafka.task_client_id(self.settings, self.connector, self.task_id)
            transactional = self._settings.transactional
            owner = client_id if transactional else None
            producer = kafka.producer(
                self.settings,
                client_id,
                transactional_id=client_id if transactional else None,
                config=self.connector_config,
            )
            # Transactional, it fences every earlier instance of this task first, which also
            # settles its last transaction: the offsets read next include all it committed.
            await producer.start()
            name = f"task {self.task_id} of {self.connector!r}"
            writes = SourceTransactions if transactional else SourceDeliveries
            self._transactions = writes(producer, name, self.retry_policy, self._log)
            send = self._transactions.send
            self._metrics = metrics.SourceTaskMetrics(self.connector, self.task_id)
        own = offsets_topic(self.connector_config, self.settings.cluster)
        self._offsets = OffsetStore(
            self.settings, self.connector, send=send, topic=own, owner=owner
        )
        await self._offsets.load()
        if owner is not None and self._offsets.two_phase:
            # The producer's start fenced the earlier run, and its last transaction has ended.
            await self._offsets.resolve_with(functools.partial(committed, self.settings, owner))
        if self._transactions is not None:
            await self._transactions.bind(self._offsets)
        if self._settings.boundary is Boundary.CONNECTOR:
            self._requests = Requests()
        self.task.initialize(
            SourceTaskContext(
                self.connector,
                self.task_id,
                self._offsets,
                logger=self._log,
                paths=self.paths,
                transaction_context=self._requests,
            )
        )
        with self.plugin_call("start"):
            await self.task.start(self.task_config)
        # The SDK's commit_record does nothing: a task that keeps it is not called per record,
        # nor is a converted task that says it has none of its own where it runs.
        self._wants_commit_record = type(self.task).commit_record is not SourceTask.commit_record
        if isinstance(self.task, Converted):
            self._wants_commit_record = self.task.commits_records

    async def run(self) -> None:
        """Polls and produces until a stop is requested; a raising plugin ends it with its error."""
        try:
            while self._ahead is not None or not self.stop_requested.is_set():
                polled = await unless_stopped(self.stop_requested, self._next_poll())
                if polled is None:
                    break
                # A stop request is only checked between batches: once polled (ahead or not),
                # a batch is produced and its offsets stored, so a graceful stop leaves nothing
                # half done. A poll ahead that has not returned when the stop comes is
                # cancelled, as any pending poll is.
                polled_at, produced, skipped = time.monotonic(), self.produced, self.skipped
                if len(polled):
                    self._log.debug("batch_polled", records=len(polled))
                await self._process(polled)
                if not len(polled):
                    await sleep_unless_stopped(self.stop_requested, EMPTY_POLL_BACKOFF_S)
                elif self._metrics is not None:
                    self._metrics.batch(
                        len(polled),
                        self.produced - produced,
                        self.skipped - skipped,
                        time.monotonic() - polled_at,
                    )
        finally:
            ahead, self._ahead = self._ahead, None
            if ahead is not None:  # the loop failed, or was cancelled, meanwhile
                await abandon(ahead, grace=1.0)

    def _next_poll(self) -> asyncio.Future[list[SourceRecord] | SourceBatch]:
        """The poll under way ahead, if one is; else a poll started now."""
        ahead, self._ahead = self._ahead, None
        return ahead or self._poll()

    def _poll(self) -> asyncio.Future[list[SourceRecord] | SourceBatch]:
        return asyncio.ensure_future(self.retried("poll", self.task.poll))

    def _poll_ahead(self) -> None:
        """Starts the next poll while this one's records go to Kafka: the producer's
        acknowledgements and the transaction's end are round trips to the broker, which the
        loop would otherwise wait out idle. Called once the records are converted and
        transformed, so the task's next poll cannot change what they are."""
        if self._ahead is None and not self.stop_requested.is_set():
            self._ahead = self._poll()

    async def finish(self) -> None:
        """Commits the open transaction; a task that ends its own transactions has it aborted
        instead, since it did not ask for this end (its records are polled again)."""
        if self._transactions is None:
            return
        if self._settings.boundary is Boundary.CONNECTOR:
            await self._transactions.abandon()
        else:
            await self._ended(await self._transactions.commit())

    async def close(self) -> None:
        """Closes the transforms and the Kafka clients (after the task was stopped); a
        transaction still open (the loop failed, or a stop ran out of time) is aborted first."""
        self._chain.close()
        transactions, self._transactions = self._transactions, None
        if transactions is not None:
            await transactions.abandon()
            await transactions.close()
        if self._offsets is not None:
            await self._offsets.close()
            self._offsets = None

    async def _process(self, polled: list[SourceRecord] | SourceBatch) -> None:
        transactions = self._transactions
        assert transactions is not None
        asked = Requests() if self._requests is None else self._requests.take()
        due = is_due(transactions.opened_at, time.monotonic(), self._settings)
        if not len(polled):
            for segment in plan([], self._settings, asked, due):
                await self._end(segment.then)
            return
        # Columns only where the step between poll and produce takes them (``takes_batches``).
        batch = polled if isinstance(polled, SourceBatch) and self._chain.takes_batches else None
        columns = None
        if batch is not None:
            layouts = await self._layouts(transactions, {batch.topic})
            columns = self._encode_batch(batch, layouts[batch.topic])
        if batch is not None and columns is not None:
            # A batch is one segment: a request naming one of its records cannot match.
            told = batch.records() if self._wants_commit_record else []
            [segment] = plan([batch], self._settings, asked, due)
            offsets = held([(batch.source_partition, batch.source_offset)])
            self._poll_ahead()
            self.produced += await transactions.write(
                told, columns, offsets, layouts, last=segment.then is End.COMMIT
            )
            await self._end(segment.then)
            return
        # Per record, also for a batch whose columns did not convert whole: the record at
        # fault is then named, and skipped or not as errors.tolerance says.
        records = polled.records() if isinstance(polled, SourceBatch) else polled
        transformed = [self._transform(r) for r in records]
        # One metadata look-up per topic and poll, of the topics the transforms route to.
        topics = {r.topic for r in transformed if r is not None}
        layouts = await self._layouts(transactions, topics)
        encoded = [None if r is None else self._encode(r, layouts[r.topic]) for r in transformed]
        segments = plan(records, self._settings, asked, due)
        # A skipped record still moves the position.
        per_segment = [held(latest_offsets(records[s.start : s.end])) for s in segments]
        self._poll_ahead()
        for segment, latest in zip(segments, per_segment, strict=True):
            part = records[segment.start : segment.end]
            self.produced += await transactions.write(
                part if self._wants_commit_record else [],
                encoded[segment.start : segment.end],
                latest,
                layouts,
                last=segment.then is End.COMMIT,
            )
            await self._end(segment.then)

    async def _end(self, then: End | None) -> None:
        """Ends the open transaction as a segment says: commit, abort, or keep it open."""
        assert self._transactions is not None
        if then is End.COMMIT:
            await self._ended(await self._transactions.commit())
        elif then is End.ABORT:
            await self._ended(await self._transactions.abort_keeping_offsets())

    async def _ended(self, landed: Landed | None) -> None:
        """Tells the task of a transaction that ended: each record, then ``commit``."""
        if landed is None:
            return  # none was open
        with self.plugin_call("commit"):
            for record, metadata in landed:
                await self.task.commit_record(record, metadata)
            await self.task.commit()

    async def _layouts(
        self, transactions: SourceTransactions | SourceDeliveries, topics: set[str]
    ) -> dict[str, TopicLayout]:
        """The topics' partitions, once those the connector creates exist (KIP-158). A topic no
        connector may write (the cluster's configs or commands, Kafka's own) fails the task,
        whatever errors.tolerance says: it is no record's fault, and nothing of it is sent."""
        for topic in sorted(topics):
            what = internal_topic(topic, self.settings.cluster)
            if what is not None:
                raise ConnectError(f"a source record for {topic}, which is {what}: refused")
        if self._creation is not None:
            for topic in sorted(topics - self._existing):
                made = self._creation.settings_for(topic)
                await ensure_topic(
                    self.settings.bootstrap_servers,
                    topic,
                    made.partitions,
                    made.configs,
                    made.replication_factor,
                    security=kafka.security_for(self.settings, Client.ADMIN, self.connector_config),
                    tuning=self._admin_tuning,
                )
                self._existing.add(topic)
        layouts = await transactions.layouts(topics)
        self.used(topics)
        return layouts

    def _encode_batch(self, batch: SourceBatch, layout: TopicLayout) -> list[Outgoing] | None:
        """The batch's records, each column converted at once; None if a column or the batch's
        partition is refused (the per-record path then finds the record at fault)."""
        if batch.partition is not None and not layout.has(batch.partition):
            return None
        try:
            values = encode_column(
                self._value_converter, batch.topic, batch.value_schema, batch.values
            )
            keys: Sequence[bytes | None] = (
                [None] * len(values)  # what every converter makes of no key without a schema
                if batch.keys is None and batch.key_schema is None
                else encode_column(
                    self._key_converter,
                    batch.topic,
                    batch.key_schema,
                    [None] * len(values) if batch.keys is None else batch.keys,
                )
            )
            headers = encode_headers(self._header_converter, batch.topic, batch.headers)
        except DataError:
            return None
        # zip makes the tuples in C: no Python step per record.
        return list(
            zip(
                repeat(batch.topic),
                repeat(batch.partition),
                keys,
                values,
                repeat(headers),
                batch.stamps(),
                strict=False,  # the repeats are endless; keys and values are as long
            )
        )

    def _transform(self, record: SourceRecord) -> SourceRecord | None:
        """The record after the connector's transforms; None when one dropped it, or when it
        failed one and errors are tolerated."""
        try:
            return self._chain.apply(record)
        except DataError as exc:
            self._skip(
                record, source_record_error("transform", record.source_partition, record.topic, exc)
            )
        except RecordError as exc:  # a stage where a converted task's records were made
            self._skip(record, exc)
        return None

    def _encode(self, record: SourceRecord, layout: TopicLayout) -> Outgoing | None:
        try:
            return self._convert(record, layout)
        except RecordError as exc:
            self._skip(record, exc)
            return None

    def _skip(self, record: SourceRecord, error: RecordError) -> None:
        """Skips a record at fault if errors are tolerated, else fails the task with it."""
        if not self._policy.tolerate_all:
            raise error
        self.skipped += 1
        if self._policy.log_errors:  # errors.log.enable; counted either way
            self._log.error(
                "record_skipped",
                stage=connect_stage(error.stage),
                error=str(error.cause),
                error_class=qualified_name(type(error.cause)),
                topic=record.topic,
                skipped_total=self.skipped,
                record=repr(record) if self._policy.log_messages else None,
            )

    def _convert(self, record: SourceRecord, layout: TopicLayout) -> Outgoing:
        if record.partition is not None and not layout.has(record.partition):
            raise source_record_error(
                "partitioner",
                record.source_partition,
                record.topic,
                ValueError(
                    f"partition {record.partition} does not exist "
                    f"(the topic has {len(layout.partitions)})"
                ),
            )
        try:
            key = self._key_converter.from_connect_data(record.topic, record.key_schema, record.key)
        except DataError as exc:
            raise source_record_error(
                "key converter", record.source_partition, record.topic, exc
            ) from exc
        value = _convert_value(self._value_converter, record)
        try:
            headers = encode_headers(self._header_converter, record.topic, record.headers)
        except DataError as exc:
            raise source_record_error(
                "header converter", record.source_partition, record.topic, exc
            ) from exc
        return (record.topic, record.partition, key, value, headers, record.timestamp)


def _convert_value(converter: Converter, record: SourceRecord) -> bytes | None:
    try:
        return converter.from_connect_data(record.topic, record.value_schema, record.value)
    except DataError as exc:
        raise source_record_error(
            "value converter", record.source_partition, record.topic, exc
        ) from exc


def held(offsets: list[tuple[Mapping[str, Any], Any]]) -> list[tuple[Mapping[str, Any], Any]]:
    """Source partitions and offsets as they are now, whatever the task does to the mappings
    it returned them in next: its next poll runs before they are stored (a task that keeps
    one position dict and moves it in place would otherwise store a batch with the position
    after the next one, and a crash in between would skip that one's records)."""
    return copy.deepcopy(offsets)


def latest_offsets(records: Sequence[SourceRecord]) -> list[tuple[Mapping[str, Any], Any]]:
    """The last source offset of each source partition in ``records``, in order of first
    appearance. Records of one source partition usually share one mapping, so each distinct
    mapping object is put in canonical form only once."""
    canonical: dict[int, str] = {}
    latest: dict[str, tuple[Mapping[str, Any], Any]] = {}
    for record in records:
        partition = record.source_partition
        key = canonical.get(id(partition))
        if key is None:
            key = canonical[id(partition)] = canonical_partition(partition)
        latest[key] = (partition, record.source_offset)
    return list(latest.values())
