"""The pure parts of the sink loop: subscription and flush settings, messages -> SinkRecord or
SinkBatch, and back from a record the task reports as errant to the message it came from.

A message's key, value and headers go through the connector's key, value and header converters,
in that order, as in Connect; the first that refuses makes the record a RecordError of its stage
(``header converter``: Connect's ``HEADER_CONVERTER``), which ``errors.tolerance`` handles."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass, field
from typing import TypeAlias

from aiokafka import ConsumerRecord

from headrace.components.converters import (
    Converter,
    HeaderConverter,
    SimpleHeaderConverter,
    decode_column,
    decode_headers,
    encode_headers,
)
from headrace.components.errorpolicy import Message, sink_record_error
from headrace.components.java.regex import RegexTimeout, compile_java
from headrace.core.storage.fetch import Fetched
from headrace.core.storage.topics import internal_topic
from headrace.sdk.columns import int64_column
from headrace.sdk.errors import ConfigException, DataError
from headrace.sdk.records import SinkBatch, SinkRecord, TopicPartition


def subscription(config: Mapping[str, str]) -> tuple[list[str], str | None]:
    """(topics, pattern) from ``topics`` or ``topics.regex``, exactly one of which must be set."""
    topics = [t.strip() for t in config.get("topics", "").split(",") if t.strip()]
    pattern = config.get("topics.regex", "").strip() or None
    if topics and pattern:
        raise ConfigException("topics and topics.regex are mutually exclusive; set only one")
    if not topics and not pattern:
        raise ConfigException("a sink connector needs topics or topics.regex")
    if pattern is not None:
        topics_pattern(pattern)
    return topics, pattern


class TopicMatcher:
    """``topics.regex`` as the consumer's subscription takes topics with (``match``).

    Connect compiles it as a Java regex, and the Java consumer takes a topic only when the whole
    name matches: so does this (``fullmatch``, where aiokafka's own pattern would take a topic
    whose start matches). It never takes an internal topic (``internal_topic``), whatever the
    regex says: ``.*`` reads the cluster's data, not its configs or commands. A match that runs
    past the time bound (a regex that backtracks without end) takes nothing more and keeps the
    reason in :attr:`failure`, which the task fails with.
    """

    def __init__(self, regex: str, cluster: str) -> None:
        try:
            self._regex = compile_java(regex)
        except ValueError as exc:
            raise ConfigException(f"topics.regex: invalid regular expression: {exc}") from None
        self._cluster = cluster
        self.failure: str | None = None

    def match(self, topic: str) -> bool:
        if self.failure is not None or internal_topic(topic, self._cluster) is not None:
            return False
        try:
            return self._regex.fullmatch(topic) is not None
        except RegexTimeout as exc:
            self.failure = f"topics.regex: {exc}"
            return False

    def __str__(self) -> str:
        return self._regex.source


def topics_pattern(regex: str) -> TopicMatcher:
    """``topics.regex`` checked; ConfigException naming the key when it cannot be compiled."""
    return TopicMatcher(regex, "")


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


DEFAULT_HEADERS: HeaderConverter = SimpleHeaderConverter()
"""What a connector that names no ``header.converter`` uses: each header's bytes as they came."""


def to_sink_record(
    message: Message,
    key_converter: Converter,
    value_converter: Converter,
    header_converter: HeaderConverter = DEFAULT_HEADERS,
) -> SinkRecord:
    """A consumed message as a SinkRecord; RecordError names the topic, partition and offset."""
    where = (message.topic, message.partition, message.offset)
    try:
        key = key_converter.to_connect_data(message.topic, message.key)
    except DataError as exc:
        raise sink_record_error("key converter", *where, exc, type(key_converter)) from exc
    try:
        value = value_converter.to_connect_data(message.topic, message.value)
    except DataError as exc:
        raise sink_record_error("value converter", *where, exc, type(value_converter)) from exc
    try:
        headers = decode_headers(header_converter, message.topic, message.headers)
    except DataError as exc:
        raise sink_record_error("header converter", *where, exc, type(header_converter)) from exc
    return SinkRecord(
        topic=message.topic,
        partition=message.partition,
        offset=message.offset,
        key=key.value,
        value=value.value,
        timestamp=message.timestamp,
        headers=headers,
        key_schema=key.schema,
        value_schema=value.schema,
    )


def to_sink_batch(
    tp: TopicPartition,
    messages: Sequence[Message],
    key_converter: Converter,
    value_converter: Converter,
    header_converter: HeaderConverter = DEFAULT_HEADERS,
    arrow_values: bool = False,
) -> SinkBatch | None:
    """One partition's messages as a SinkBatch, when both converters make whole columns of them
    and the header converter takes every header; None otherwise (then they go record by record,
    and a bad one is named). ``arrow_values``: values read into Arrow where the value converter
    reads them so (``SinkTask.ARROW_VALUES``)."""
    fetched = (
        messages if isinstance(messages, Fetched) else Fetched.of(tp.topic, tp.partition, messages)
    )
    keys = decode_column(key_converter, tp.topic, fetched.keys)
    values = decode_column(value_converter, tp.topic, fetched.values, arrow_values)
    if keys is None or values is None:
        return None
    headers = None
    if any(fetched.headers):
        try:
            headers = [decode_headers(header_converter, tp.topic, h) for h in fetched.headers]
        except DataError:
            return None
    return SinkBatch(
        tp.topic,
        tp.partition,
        offsets=int64_column(fetched.offsets),
        timestamps=int64_column(fetched.timestamps),
        keys=keys[1],
        values=values[1],
        headers=headers,
        key_schema=keys[0],
        value_schema=values[0],
    )


Where: TypeAlias = tuple[str, int, int]
"""A record's (topic, partition, offset), as the task sees it."""


@dataclass(frozen=True)
class Originals:
    """The consumed messages behind the records handed to the task since its last flush, so a
    record it reports as errant goes to the dead letter queue as it was consumed.

    ``fetched``: each partition's messages, fetch by fetch, in offset order (found by bisection,
    with no step per record on the way in). ``moved``: the messages whose record a transform
    gave another topic or partition, by where the record says it is.
    """

    fetched: Mapping[TopicPartition, tuple[Sequence[Message], ...]] = field(default_factory=dict)
    moved: Mapping[Where, Message] = field(default_factory=dict)

    def with_fetch(
        self, fetched: Mapping[TopicPartition, Sequence[Message]], moved: Mapping[Where, Message]
    ) -> Originals:
        merged = dict(self.fetched)
        for tp, messages in fetched.items():
            merged[tp] = (*merged.get(tp, ()), messages)
        return Originals(merged, {**self.moved, **moved} if moved else self.moved)

    def without(self, partitions: Set[TopicPartition] | None) -> Originals:
        """Forgets what the task flushed: ``partitions``, or everything when None."""
        if partitions is None:
            return Originals()
        gone = {(tp.topic, tp.partition) for tp in partitions}
        return Originals(
            {tp: m for tp, m in self.fetched.items() if tp not in partitions},
            {w: m for w, m in self.moved.items() if (m.topic, m.partition) not in gone},
        )

    def find(self, record: SinkRecord) -> Message | None:
        """The message ``record`` came from, if the task was handed it since its last flush."""
        moved = self.moved.get((record.topic, record.partition, record.offset))
        if moved is not None:
            return moved
        for messages in self.fetched.get(record.topic_partition, ()):
            at = bisect_left(messages, record.offset, key=_offset)
            if at < len(messages) and messages[at].offset == record.offset:
                return messages[at]
        return None


def _offset(message: Message) -> int:
    return message.offset


def as_consumed(
    record: SinkRecord,
    key_converter: Converter,
    value_converter: Converter,
    header_converter: HeaderConverter = DEFAULT_HEADERS,
) -> Message:
    """A record no consumed message is known to be behind (the task made it, or reports it
    after flushing it), as the message it would have been: its key, value and headers through
    the converters, as Connect sends such a record to the dead letter queue."""
    key = key_converter.from_connect_data(record.topic, record.key_schema, record.key)
    value = value_converter.from_connect_data(record.topic, record.value_schema, record.value)
    headers = encode_headers(header_converter, record.topic, record.headers)
    return ConsumerRecord(
        topic=record.topic,
        partition=record.partition,
        offset=record.offset,
        timestamp=-1 if record.timestamp is None else record.timestamp,
        timestamp_type=0,
        key=key,
        value=value,
        checksum=None,
        serialized_key_size=-1 if key is None else len(key),
        serialized_value_size=-1 if value is None else len(value),
        headers=headers,  # a null value stays None, as consumed: aiokafka writes it as null
    )
