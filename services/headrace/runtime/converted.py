"""Tasks whose records are converted and transformed elsewhere: a Java plugin's, whose JVM runs
Connect's own converters and transformations (``headrace.runtime.host.java``). Their loop gives and
takes bytes as they are, and runs no transformation of its own; what the JVM's transformations
dropped, or a stage skipped under ``errors.tolerance=all``, reaches the source loop through
:class:`Outcomes`, where a Python transformation's result would."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from headrace.components.converters import (
    ByteArrayConverter,
    ByteArrayHeaderConverter,
    Converter,
    HeaderConverter,
)
from headrace.components.errorpolicy import Message
from headrace.sdk.records import SourceRecord


class Converted:
    """Mixed into a task whose records come and go as Kafka bytes. A sink's are handed over
    as consumed (``put_consumed``), with no SinkRecord made of them on the way."""

    key_converter: Converter = ByteArrayConverter()
    value_converter: Converter = ByteArrayConverter()
    header_converter: HeaderConverter = ByteArrayHeaderConverter()
    connector_config: Mapping[str, str] = {}
    """Set by the host before the task starts: what the converters and transformations are
    made from where they run."""
    commits_records = True
    """A source task's: whether it is told of each record written (``commit_record``)."""

    def outcome(self, record: SourceRecord) -> SourceRecord | None:
        """The record, None when it was dropped; raises RecordError when it failed a stage."""
        return record

    async def put_consumed(self, messages: Sequence[Message]) -> None:
        """A sink task's ``put``, of the messages as consumed."""
        raise NotImplementedError


class Outcomes:
    """The source loop's transformation step for a converted task: what happened to each
    record where it was transformed."""

    takes_batches = True
    """A converted task's batch holds records transformed, and kept, where they were made."""

    def __init__(self, task: Converted) -> None:
        self._task = task

    def apply(self, record: SourceRecord) -> SourceRecord | None:
        return self._task.outcome(record)

    def close(self) -> None:
        pass
