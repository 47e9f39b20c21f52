"""The records that move between plugins and the runtime, as frozen dataclasses.

``SourceRecord`` is what a source task returns from ``poll``; ``SinkRecord`` is what a sink task
receives in ``put``. Headers are a tuple of ``(name, value)`` pairs, values as ``bytes`` (a ``str``
is encoded as UTF-8 when produced). Timestamps are milliseconds since the epoch.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from headrace.sdk.data import Schema

Headers = tuple[tuple[str, bytes | str | None], ...]


@dataclass(frozen=True, order=True)
class TopicPartition:
    """One partition of one Kafka topic."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass(frozen=True)
class SourceRecord:
    """A record read from the source system, with where it came from.

    ``source_partition`` names the stream in the source system (a file, a table) and
    ``source_offset`` the position just read in it; both must be JSON-serialisable, because the
    runtime stores the latest offset per source partition and hands it back after a restart.
    ``partition`` None lets the producer's partitioner pick one from the key.
    """

    source_partition: Mapping[str, Any]
    source_offset: Mapping[str, Any]
    topic: str
    value: Any
    key: Any = None
    partition: int | None = None
    headers: Headers = ()
    timestamp: int | None = None
    key_schema: Schema | None = None
    value_schema: Schema | None = None


@dataclass(frozen=True)
class SinkRecord:
    """A record consumed from Kafka, after the key and value converters ran."""

    topic: str
    partition: int
    offset: int
    key: Any
    value: Any
    timestamp: int | None = None
    headers: Headers = ()
    key_schema: Schema | None = None
    value_schema: Schema | None = None

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


@dataclass(frozen=True)
class RecordMetadata:
    """Where a source record landed in Kafka; given to ``SourceTask.commit_record``."""

    topic: str
    partition: int
    offset: int
    timestamp: int | None = field(default=None)
