"""A sink task's fetch made into what the task takes: columns where its converters make them
and it takes batches, records otherwise (through the connector's transforms, one at a time),
or, for a task converted where it runs (a Java task), the record batches as the broker sent
them. A record a converter or a transform refuses fails the task, or under
``errors.tolerance=all`` is kept aside, to be skipped when the fetch is handed over.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass, field

from aiokafka import TopicPartition as KafkaTopicPartition

from headrace.components.converters import (
    Converter,
    HeaderConverter,
    converter_for,
    header_converter_for,
)
from headrace.components.errorpolicy import ErrorPolicy, RecordError, sink_record_error
from headrace.components.transforms import TransformChain, parse_chain
from headrace.core.storage.fetch import Batches, Consumed, Fetched
from headrace.runtime.converted import Converted
from headrace.runtime.sink.records import (
    Message,
    Where,
    to_sink_batch,
    to_sink_record,
)
from headrace.sdk.errors import DataError
from headrace.sdk.records import SinkBatch, SinkRecord, TopicPartition
from headrace.sdk.task import SinkTask


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


class Preparer:
    def __init__(
        self,
        task: SinkTask,
        converters: tuple[Converter, Converter, HeaderConverter],
        chain: TransformChain,
        tolerate_all: bool,
    ) -> None:
        """``converters``: the key's, the value's and the headers', in the order the
        ``records`` functions take them; ``tolerate_all``, ``errors.tolerance=all``."""
        self._task = task
        self.converters = converters
        self._chain = chain
        self._tolerate_all = tolerate_all
        # A task that keeps the SDK's put_batch (which calls put) is given records one by one,
        # and so is every task whose records go through transforms, which take one at a time.
        self._wants_batches = type(task).put_batch is not SinkTask.put_batch and chain.takes_batches

    @classmethod
    def of(cls, task: SinkTask, config: Mapping[str, str], policy: ErrorPolicy) -> Preparer:
        """The connector's converters and transforms; a task converted where it runs (by the
        JVM) brings its own converters, which take bytes here."""
        if isinstance(task, Converted):
            converters = (task.key_converter, task.value_converter, task.header_converter)
            return cls(task, converters, TransformChain(), policy.tolerate_all)
        converters = (
            converter_for(config, "key"),
            converter_for(config, "value"),
            header_converter_for(config),
        )
        return cls(task, converters, parse_chain(config), policy.tolerate_all)

    def close(self) -> None:
        self._chain.close()

    def prepare(
        self,
        batch: Mapping[KafkaTopicPartition, Fetched | Batches],
        assigned: Set[TopicPartition],
        epoch: int,
        changes: int,
    ) -> Prepared:
        """A fetch converted for the task: columns where its converters allow, records
        otherwise. A record they refuse fails the task here, or is kept aside to be skipped
        when the fetch is handed over (a dropped fetch skips nothing)."""
        prepared = Prepared(epoch, changes, time.monotonic())  # as the fetch returned
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
        if isinstance(self._task, Converted):
            prepared.consumed.pieces.append(messages)
            return
        columns = (
            to_sink_batch(tp, messages, *self.converters, arrow_values=self._task.ARROW_VALUES)
            if self._wants_batches
            else None
        )
        if columns is not None:
            prepared.columns.append(columns)
            return
        for message in messages:
            try:
                record = self._transformed(message, to_sink_record(message, *self.converters))
            except RecordError as exc:
                if not self._tolerate_all:
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
