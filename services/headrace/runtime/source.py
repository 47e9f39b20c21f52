"""The source task loop: poll -> convert -> produce and store offsets in one transaction ->
commit_record -> commit.

Each batch ``poll`` returns is produced as a whole, in one Kafka batch per topic-partition
(``produce.py``), and its source offsets (the last one per source partition) are written to the
offsets topic in the same Kafka transaction (KIP-618's ``poll`` boundary). Readers of either topic
read committed records only, so the records and the offsets that cover them appear together or
not at all: after a crash the task resumes exactly where its committed data ends, and a
deterministic source neither skips nor repeats a record (exactly once).

The transactional id is the task's own, the same on every worker. Starting the producer fences
every earlier instance of the task: a zombie (a task whose worker was cut off and replaced) has
its open transaction aborted and its next write refused, so it can never add a record once its
replacement has started. Its loop then ends with ``TaskFenced``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from itertools import repeat
from typing import Any

from aiokafka import AIOKafkaProducer
from aiokafka.errors import ProducerFenced

from headrace.core import log
from headrace.core.topiclog import Record, send_records
from headrace.runtime import kafka
from headrace.runtime.converters import Converter, converter_for, encode_column
from headrace.runtime.errors import ErrorPolicy, RecordError, TaskFenced, source_record_error
from headrace.runtime.lifecycle import sleep_unless_stopped, unless_stopped
from headrace.runtime.offsets import OffsetStore, canonical_partition
from headrace.runtime.placement import LoopBase, Placement
from headrace.runtime.produce import BatchProducer, Outgoing, Receipt, TopicLayout, per_record
from headrace.sdk.errors import DataError
from headrace.sdk.records import Headers, RecordMetadata, SourceBatch, SourceRecord
from headrace.sdk.task import SourceTask, SourceTaskContext

ABORT_TIMEOUT_S = 10.0
"""How long a failed batch's transaction may take to abort before it is left to Kafka."""

EMPTY_POLL_BACKOFF_S = 0.1
"""Pause after a poll that returned nothing: a poll that returns [] at once must not spin the
event loop (a coroutine that never really awaits would starve every other task)."""


class SourceRunner(LoopBase):
    """Runs one source task inside the plugin process."""

    def __init__(self, placement: Placement, task: SourceTask) -> None:
        super().__init__(placement)
        self.task = task
        self.produced = 0
        self._producer: AIOKafkaProducer | None = None
        self._batches: BatchProducer | None = None
        self._offsets: OffsetStore | None = None
        self._log = log.get(connector=self.connector, task=self.task_id)

    async def start(self, loop: bool = True) -> None:
        """Reads the framework config, loads stored offsets, then starts the plugin's task;
        without ``loop`` (a clean-up, which produces nothing) there is no producer."""
        self._policy = ErrorPolicy.from_config(self.connector_config)
        self._key_converter = converter_for(self.connector_config, "key")
        self._value_converter = converter_for(self.connector_config, "value")
        send = None
        if loop:
            client_id = kafka.task_client_id(self.settings, self.connector, self.task_id)
            self._producer = kafka.producer(self.settings, client_id, transactional_id=client_id)
            # Fences every earlier instance of this task first, which also settles its last
            # transaction: the offsets read next include everything it committed.
            await self._producer.start()
            self._batches = BatchProducer(self._producer)
            send = self._send_in_transaction
        self._offsets = OffsetStore(self.settings, self.connector, send=send)
        await self._offsets.load()
        # The SDK's commit_record does nothing: a task that keeps it is not called per record.
        self._wants_commit_record = type(self.task).commit_record is not SourceTask.commit_record
        self.task.initialize(
            SourceTaskContext(
                self.connector, self.task_id, self._offsets, logger=self._log, paths=self.paths
            )
        )
        await self.task.start(self.task_config)

    async def run(self) -> None:
        """Polls and produces until a stop is requested; a raising plugin ends it with its error."""
        while not self.stop_requested.is_set():
            polled = await unless_stopped(self.stop_requested, self.task.poll())
            if polled is None:
                break
            if not len(polled):
                await sleep_unless_stopped(self.stop_requested, EMPTY_POLL_BACKOFF_S)
                continue
            # A stop request is only checked between batches: once polled, a batch is produced
            # and its offsets stored, so a graceful stop leaves nothing half done.
            await self._process(polled)

    async def finish(self) -> None:
        """Nothing to do: every batch stores its offsets before the next poll."""

    async def close(self) -> None:
        """Closes the Kafka clients (after the task was stopped)."""
        if self._producer is not None:
            await self._producer.stop()
            self._producer = self._batches = None
        if self._offsets is not None:
            await self._offsets.close()
            self._offsets = None

    async def _process(self, polled: list[SourceRecord] | SourceBatch) -> None:
        assert self._batches is not None and self._offsets is not None
        batch = polled if isinstance(polled, SourceBatch) else None
        topics = {polled.topic} if isinstance(polled, SourceBatch) else {r.topic for r in polled}
        layouts = await self._batches.layouts(topics)  # one metadata look-up per topic and poll
        columns = None if batch is None else self._encode_batch(batch, layouts[batch.topic])
        if batch is not None and columns is not None:
            records = batch.records() if self._wants_commit_record else []
            encoded: Sequence[Outgoing | None] = columns
            latest = [(batch.source_partition, batch.source_offset)]
        else:
            # Per record, also for a batch whose columns did not convert whole: the record at
            # fault is then named, and skipped or not as errors.tolerance says.
            records = polled.records() if isinstance(polled, SourceBatch) else polled
            encoded = [self._encode(r, layouts[r.topic]) for r in records]
            latest = latest_offsets(records)  # a skipped record still moves the position
        outgoing = [enc for enc in encoded if enc is not None]
        receipts, stamps = await self._in_transaction(outgoing, layouts, latest)
        self.produced += len(outgoing)
        if self._wants_commit_record:
            delivered = iter(per_record(receipts, stamps))
            for record, enc in zip(records, encoded, strict=True):
                meta = None if enc is None else RecordMetadata(record.topic, *next(delivered))
                await self.task.commit_record(record, meta)
        await self.task.commit()

    async def _in_transaction(
        self,
        outgoing: Sequence[Outgoing],
        layouts: Mapping[str, TopicLayout],
        latest: Sequence[tuple[Mapping[str, Any], Any]],
    ) -> tuple[list[Receipt], list[int]]:
        """Produces the records and stores the offsets in one transaction, and commits it."""
        assert self._producer is not None and self._batches is not None
        assert self._offsets is not None
        try:
            await self._producer.begin_transaction()
            produced = await self._batches.produce(outgoing, layouts)
            await self._offsets.write(latest)
            await self._producer.commit_transaction()
        except BaseException as exc:
            await self._abort()
            if isinstance(exc, ProducerFenced):
                raise TaskFenced(
                    f"task {self.task_id} of {self.connector!r} was fenced: another instance "
                    "of it started, so this one writes nothing more"
                ) from exc
            raise
        return produced

    async def _abort(self) -> None:
        """Aborts the open transaction, so nothing of a failed batch is ever read; a failure to
        abort leaves it to Kafka, which aborts it when the task starts again or times out."""
        assert self._producer is not None
        try:
            await asyncio.wait_for(self._producer.abort_transaction(), ABORT_TIMEOUT_S)
        except ProducerFenced:
            pass  # the newer instance's start aborted it already
        except Exception as exc:  # noqa: BLE001 - the batch's own error is the one to report
            self._log.warning("transaction_abort_failed", error=repr(exc))

    async def _send_in_transaction(
        self, topic: str, records: list[Record]
    ) -> list[tuple[int, int]]:
        assert self._producer is not None
        return await send_records(self._producer, topic, records)

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
        except DataError:
            return None
        headers = _encode_headers(batch.headers)
        # zip makes the tuples in C: no Python step per record.
        return list(
            zip(
                repeat(batch.topic),
                repeat(batch.partition),
                keys,
                values,
                repeat(headers),
                repeat(batch.timestamp),
                strict=False,  # the repeats are endless; keys and values are as long
            )
        )

    def _encode(self, record: SourceRecord, layout: TopicLayout) -> Outgoing | None:
        try:
            return self._convert(record, layout)
        except RecordError as exc:
            if not self._policy.tolerate_all:
                raise
            self.skipped += 1
            self._log.warning(
                "record_skipped",
                error=str(exc),
                topic=record.topic,
                skipped_total=self.skipped,
                record=repr(record) if self._policy.log_messages else None,
            )
            return None

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
        headers = _encode_headers(record.headers)
        return (record.topic, record.partition, key, value, headers, record.timestamp)


def _encode_headers(headers: Headers) -> list[tuple[str, bytes]]:
    return [(name, v.encode() if isinstance(v, str) else (v or b"")) for name, v in headers]


def _convert_value(converter: Converter, record: SourceRecord) -> bytes | None:
    try:
        return converter.from_connect_data(record.topic, record.value_schema, record.value)
    except DataError as exc:
        raise source_record_error(
            "value converter", record.source_partition, record.topic, exc
        ) from exc


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
