"""The source task loop: poll -> convert -> produce -> commit_record -> store offsets -> commit.

Each batch ``poll`` returns is produced as a whole with an idempotent producer and awaited; only
then are the batch's source offsets written (the last one per source partition), so a stored
offset never points past data that is not in Kafka. After a crash the task resumes from the last
stored offset: a deterministic source neither skips nor repeats records across a graceful stop,
and repeats at most the last unacknowledged batch across a crash (at-least-once).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from aiokafka import AIOKafkaProducer

from headrace.core import log
from headrace.runtime import kafka
from headrace.runtime.converters import Converter, converter_for
from headrace.runtime.errors import ErrorPolicy, RecordError, source_record_error
from headrace.runtime.lifecycle import sleep_unless_stopped, unless_stopped
from headrace.runtime.offsets import OffsetStore, offset_key
from headrace.runtime.placement import LoopBase, Placement
from headrace.sdk.errors import DataError
from headrace.sdk.records import RecordMetadata, SourceRecord
from headrace.sdk.task import SourceTask, SourceTaskContext

EMPTY_POLL_BACKOFF_S = 0.1
"""Pause after a poll that returned nothing: a poll that returns [] at once must not spin the
event loop (a coroutine that never really awaits would starve every other task)."""

Encoded = tuple[bytes | None, bytes | None, list[tuple[str, bytes]]]


class SourceRunner(LoopBase):
    """Runs one source task inside the plugin process."""

    def __init__(self, placement: Placement, task: SourceTask) -> None:
        super().__init__(placement)
        self.task = task
        self.produced = 0
        self._producer: AIOKafkaProducer | None = None
        self._offsets: OffsetStore | None = None
        self._log = log.get(connector=self.connector, task=self.task_id)

    async def start(self) -> None:
        """Reads the framework config, loads stored offsets, then starts the plugin's task."""
        self._policy = ErrorPolicy.from_config(self.connector_config)
        self._key_converter = converter_for(self.connector_config, "key")
        self._value_converter = converter_for(self.connector_config, "value")
        self._offsets = OffsetStore(self.settings, self.connector)
        await self._offsets.load()
        client_id = f"{self.settings.cluster}-{self.connector}-{self.task_id}"
        self._producer = kafka.producer(self.settings, client_id)
        await self._producer.start()
        self.task.initialize(
            SourceTaskContext(
                self.connector, self.task_id, self._offsets, logger=self._log, paths=self.paths
            )
        )
        await self.task.start(self.task_config)

    async def run(self) -> None:
        """Polls and produces until a stop is requested; a raising plugin ends it with its error."""
        while not self.stop_requested.is_set():
            records = await unless_stopped(self.stop_requested, self.task.poll())
            if records is None:
                break
            if not records:
                await sleep_unless_stopped(self.stop_requested, EMPTY_POLL_BACKOFF_S)
                continue
            # A stop request is only checked between batches: once polled, a batch is produced
            # and its offsets stored, so a graceful stop leaves nothing half done.
            await self._process(records)

    async def finish(self) -> None:
        """Nothing to do: every batch stores its offsets before the next poll."""

    async def close(self) -> None:
        """Closes the Kafka clients (after the task was stopped)."""
        if self._producer is not None:
            await self._producer.stop()
            self._producer = None
        if self._offsets is not None:
            await self._offsets.close()
            self._offsets = None

    async def _process(self, records: list[SourceRecord]) -> None:
        assert self._producer is not None
        encoded = [self._encode(r) for r in records]
        futures = [
            None if enc is None else await self._send(record, enc)
            for record, enc in zip(records, encoded, strict=True)
        ]
        latest: dict[bytes, tuple[Mapping[str, Any], Any]] = {}
        for record, future in zip(records, futures, strict=True):
            meta = None
            if future is not None:
                sent = await future
                meta = RecordMetadata(sent.topic, sent.partition, sent.offset, sent.timestamp)
                self.produced += 1
            await self.task.commit_record(record, meta)
            # A skipped record still moves the position: it has been dealt with.
            latest[offset_key(self.connector, record.source_partition)] = (
                record.source_partition,
                record.source_offset,
            )
        assert self._offsets is not None
        await self._offsets.write(list(latest.values()))
        await self.task.commit()

    async def _send(self, record: SourceRecord, enc: Encoded) -> asyncio.Future[Any]:
        assert self._producer is not None
        key, value, headers = enc
        future: asyncio.Future[Any] = await self._producer.send(
            record.topic,
            value=value,
            key=key,
            partition=record.partition,
            timestamp_ms=record.timestamp,
            headers=headers or None,
        )
        return future

    def _encode(self, record: SourceRecord) -> Encoded | None:
        try:
            return self._convert(record)
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

    def _convert(self, record: SourceRecord) -> Encoded:
        try:
            key = self._key_converter.from_connect_data(record.topic, record.key_schema, record.key)
        except DataError as exc:
            raise source_record_error(
                "key converter", record.source_partition, record.topic, exc
            ) from exc
        value = _convert_value(self._value_converter, record)
        headers = [
            (name, v.encode() if isinstance(v, str) else (v or b"")) for name, v in record.headers
        ]
        return key, value, headers


def _convert_value(converter: Converter, record: SourceRecord) -> bytes | None:
    try:
        return converter.from_connect_data(record.topic, record.value_schema, record.value)
    except DataError as exc:
        raise source_record_error(
            "value converter", record.source_partition, record.topic, exc
        ) from exc
