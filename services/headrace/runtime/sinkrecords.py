"""The pure parts of the sink loop: subscription and flush settings, messages -> SinkRecord or
SinkBatch."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TypeAlias

import pyarrow as pa
from aiokafka import ConsumerRecord

from headrace.runtime.converters import Converter, decode_column
from headrace.runtime.errors import sink_record_error
from headrace.sdk.errors import ConfigException, DataError
from headrace.sdk.records import SinkBatch, SinkRecord, TopicPartition

Message: TypeAlias = ConsumerRecord[bytes, bytes]


def subscription(config: Mapping[str, str]) -> tuple[list[str], str | None]:
    """(topics, pattern) from ``topics`` or ``topics.regex``, exactly one of which must be set."""
    topics = [t.strip() for t in config.get("topics", "").split(",") if t.strip()]
    pattern = config.get("topics.regex", "").strip() or None
    if topics and pattern:
        raise ConfigException("topics and topics.regex are mutually exclusive; set only one")
    if not topics and not pattern:
        raise ConfigException("a sink connector needs topics or topics.regex")
    if pattern is not None:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ConfigException(f"topics.regex: invalid regular expression: {exc}") from None
    return topics, pattern


@dataclass(frozen=True)
class FlushPolicy:
    """When pending records are flushed and their offsets committed."""

    max_records: int = 0
    interval_ms: int = 0

    @classmethod
    def from_config(cls, config: Mapping[str, str]) -> FlushPolicy:
        try:
            max_records = int(config.get("flush.max.records", "0"))
            interval_ms = int(config.get("offset.flush.interval.ms", "0"))
        except ValueError as exc:
            raise ConfigException(f"flush settings must be integers: {exc}") from None
        if max_records < 0 or interval_ms < 0:
            raise ConfigException("flush.max.records and offset.flush.interval.ms must be >= 0")
        return cls(max_records, interval_ms)

    def due(self, pending: int, since_flush_ms: float, requested: bool = False) -> bool:
        """Whether to flush now, given pending records and time since the last flush."""
        if requested:
            return True
        if pending == 0:
            return False
        if self.max_records == 0 and self.interval_ms == 0:
            return True
        return bool(
            (self.max_records and pending >= self.max_records)
            or (self.interval_ms and since_flush_ms >= self.interval_ms)
        )


def to_sink_record(
    message: Message, key_converter: Converter, value_converter: Converter
) -> SinkRecord:
    """A consumed message as a SinkRecord; RecordError names the topic, partition and offset."""
    where = (message.topic, message.partition, message.offset)
    try:
        key = key_converter.to_connect_data(message.topic, message.key)
    except DataError as exc:
        raise sink_record_error("key converter", *where, exc) from exc
    try:
        value = value_converter.to_connect_data(message.topic, message.value)
    except DataError as exc:
        raise sink_record_error("value converter", *where, exc) from exc
    return SinkRecord(
        topic=message.topic,
        partition=message.partition,
        offset=message.offset,
        key=key.value,
        value=value.value,
        timestamp=message.timestamp,
        headers=tuple(message.headers or ()),
        key_schema=key.schema,
        value_schema=value.schema,
    )


def to_sink_batch(
    tp: TopicPartition,
    messages: Sequence[Message],
    key_converter: Converter,
    value_converter: Converter,
) -> SinkBatch | None:
    """One partition's messages as a SinkBatch, when both converters make whole columns of them;
    None otherwise (then they go record by record, and a bad one is named)."""
    keys = decode_column(key_converter, tp.topic, [m.key for m in messages])
    values = decode_column(value_converter, tp.topic, [m.value for m in messages])
    if keys is None or values is None:
        return None
    has_headers = any(m.headers for m in messages)
    return SinkBatch(
        tp.topic,
        tp.partition,
        offsets=pa.array([m.offset for m in messages], pa.int64()),
        timestamps=pa.array([m.timestamp for m in messages], pa.int64()),
        keys=keys[1],
        values=values[1],
        headers=[tuple(m.headers or ()) for m in messages] if has_headers else None,
        key_schema=keys[0],
        value_schema=values[0],
    )
