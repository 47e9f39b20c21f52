"""A Java connector as an SDK connector: the adapters a Java plugin's Python plugin process runs,
each call one request to the JVM host beside it (``headrace.runtime.host.jvm``).

The Python process keeps the task loop, as for a Python connector: offsets, transactions,
retries, the dead letter queue, metrics and status have one implementation. For each batch the
loop asks the JVM once: a source's ``poll`` comes back as records already transformed and
converted by Connect's own classes, exactly the bytes Connect would write; a sink's records go
over as the bytes consumed, and Connect's converters and transformations run in the JVM before
the task's ``put``. So a record crosses one process boundary, and the loop runs with
pass-through converters and no transformations of its own (``Converted``).

The classes here are unbound: :func:`connector_class` makes subclasses that name the JVM host
and the Java class. What crosses the socket is translated by the pure functions below them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from itertools import groupby
from operator import attrgetter
from typing import Any, ClassVar, NamedTuple, cast

from headrace.components.converters import Converter, HeaderConverter
from headrace.components.errorpolicy import Message, RecordError
from headrace.core.model.configinfo import ConfigInfos
from headrace.core.model.plugins import PluginDescriptor
from headrace.core.model.wire import config_infos_from_pb
from headrace.core.storage.fetch import Batches, Consumed, Fetched
from headrace.core.storage.stores import OffsetStore
from headrace.runtime.converted import Converted
from headrace.runtime.host.jvm import JavaError, JvmHost
from headrace.runtime.sink.records import as_consumed, to_sink_record
from headrace.sdk.config import ConfigDef, ConfigKey, ConfigValue, Type
from headrace.sdk.connector import (
    Connector,
    ConnectorTransactionBoundaries,
    ExactlyOnceSupport,
    SinkConnector,
    SinkOffsets,
    SourceConnector,
    SourceOffsets,
)
from headrace.sdk.errors import ConnectError
from headrace.sdk.records import (
    RecordMetadata,
    SinkRecord,
    SourceBatch,
    SourceRecord,
    TopicPartition,
)
from headrace.sdk.task import SinkTask, SourceTask
from headrace.v1 import jvm_pb2 as pb


def connector_class(descriptor: PluginDescriptor, host: JvmHost) -> type[Connector]:
    """An SDK connector class standing for the Java connector ``descriptor`` names, in ``host``."""
    name = descriptor.class_name
    definition = config_infos_from_pb(
        host.call("Validate", pb.JvmValidateRequest(connector_class=name, definition_only=True))
    )
    bound = {"host": host, "java_class": name, "VERSION": descriptor.version}
    source = descriptor.type == "source"
    task = type(
        "JavaSourceTask" if source else "JavaSinkTask",
        (JavaSourceTask if source else JavaSinkTask,),
        bound,
    )
    short = name.rsplit(".", 1)[-1]
    base = JavaSourceConnector if source else JavaSinkConnector
    made = type(short, (base,), {**bound, "definition": definition, "TASK": task})
    return cast("type[Connector]", made)


class _Java:
    """What every adapter is bound to."""

    host: ClassVar[JvmHost]
    java_class: ClassVar[str]


def stored_offsets(reader: object) -> list[pb.SourceOffset]:
    """What a source's offset reader holds, as its JVM takes it (none but a store's)."""
    stored = reader.state.items() if isinstance(reader, OffsetStore) else ()
    return [
        pb.SourceOffset(partition=partition, offset=json.dumps(dict(offset)))
        for partition, offset in stored
    ]


class _JavaConnector(_Java):
    definition: ClassVar[ConfigInfos]
    context: Any
    _name: str

    async def start(self, config: Mapping[str, str]) -> None:
        self._name = config.get("name", self.context.name)
        self.host.contexts[self._name] = self.context
        await self.host.acall(
            "StartConnector",
            pb.JvmStartConnectorRequest(
                connector_class=self.java_class,
                name=self._name,
                config=dict(config),
                max_tasks=1,
                offsets=stored_offsets(self.context.offset_reader),
            ),
        )

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        answer = self.host.call(
            "TaskConfigs",
            pb.JvmStartConnectorRequest(
                connector_class=self.java_class, name=self._name, max_tasks=max_tasks
            ),
        )
        return [dict(t.config) for t in answer.tasks]

    async def stop(self, deleted: bool = False) -> None:
        name = getattr(self, "_name", "")
        self.host.contexts.pop(name, None)
        await self.host.acall("Stop", pb.JvmStopRequest(connector=name, task=-1, deleted=deleted))

    def config(self) -> ConfigDef:
        return config_def(self.definition)

    def java_infos(self, config: Mapping[str, str], definition_only: bool) -> ConfigInfos:
        """The Java connector's own validation, as Connect's REST API gives it."""
        request = pb.JvmValidateRequest(
            connector_class=self.java_class, config=dict(config), definition_only=definition_only
        )
        return config_infos_from_pb(self.host.call("Validate", request))

    def _alter_offsets(self, config: Mapping[str, str], entries: list[dict[str, Any]]) -> bool:
        """KIP-875's alterOffsets() of a new instance of the Java class: what it threw raised
        as its Python counterpart (UnsupportedOperationException: NotImplementedError;
        ConnectException: ConnectError, with its message)."""
        request = pb.JvmAlterOffsetsRequest(
            connector_class=self.java_class,
            config=dict(config),
            offsets_json=json.dumps({"entries": entries}),
        )
        answer = self.host.call("AlterOffsets", request)
        if answer.unsupported:
            raise NotImplementedError(answer.message)
        if answer.connect_exception:
            raise ConnectError(answer.message)
        if answer.failed:
            raise RuntimeError(answer.message)
        return bool(answer.handled)

    def validate(self, config: Mapping[str, str]) -> list[ConfigValue]:
        """What the Java connector's validate() says of each of its keys."""
        return [
            ConfigValue(
                info.value.name,
                info.value.value,
                errors=list(info.value.errors),
                recommended_values=list(info.value.recommended_values),
                visible=info.value.visible,
            )
            for info in self.java_infos(config, definition_only=False).configs
        ]


class JavaSinkConnector(_JavaConnector, SinkConnector):
    """A Java SinkConnector."""

    TASK: ClassVar[type[SinkTask]]

    def task_class(self) -> type[SinkTask]:
        return self.TASK

    def alter_offsets(self, config: Mapping[str, str], offsets: SinkOffsets) -> bool:
        entries = [
            {
                "partition": {"kafka_topic": topic, "kafka_partition": partition},
                "offset": None if offset is None else {"kafka_offset": offset},
            }
            for (topic, partition), offset in offsets.items()
        ]
        return self._alter_offsets(config, entries)


class JavaSourceConnector(_JavaConnector, SourceConnector):
    """A Java SourceConnector, with what it says of exactly-once and transactions."""

    TASK: ClassVar[type[SourceTask]]

    def task_class(self) -> type[SourceTask]:
        return self.TASK

    def exactly_once_support(self, config: Mapping[str, str]) -> ExactlyOnceSupport | None:
        answer = self._capabilities(config).exactly_once_support
        return ExactlyOnceSupport(answer.lower()) if answer else None

    def alter_offsets(self, config: Mapping[str, str], offsets: SourceOffsets) -> bool:
        entries = [
            {"partition": dict(partition), "offset": None if offset is None else dict(offset)}
            for partition, offset in offsets
        ]
        return self._alter_offsets(config, entries)

    def can_define_transaction_boundaries(
        self, config: Mapping[str, str]
    ) -> ConnectorTransactionBoundaries:
        answer = self._capabilities(config).transaction_boundaries
        if answer == "SUPPORTED":
            return ConnectorTransactionBoundaries.SUPPORTED
        return ConnectorTransactionBoundaries.UNSUPPORTED

    def _capabilities(self, config: Mapping[str, str]) -> pb.CapabilitiesResponse:
        request = pb.CapabilitiesRequest(connector_class=self.java_class, config=dict(config))
        return self.host.call("Capabilities", request)


class _JavaTask(_Java):
    context: Any
    connector_config: Mapping[str, str]  # Converted's, set by the host before start

    async def _start_task(self, config: Mapping[str, str], **more: Any) -> pb.JvmStartTaskResponse:
        request = pb.JvmStartTaskRequest(
            connector_class=self.java_class,
            connector=self.context.connector,
            task=self.context.task,
            connector_config=dict(self.connector_config),
            task_config=dict(config),
            **more,
        )
        return await self.host.acall("StartTask", request)

    async def stop(self, deleted: bool = False) -> None:
        request = pb.JvmStopRequest(
            connector=self.context.connector, task=self.context.task, deleted=deleted
        )
        await self.host.acall("Stop", request)


class JavaSourceTask(_JavaTask, Converted, SourceTask):
    """A Java SourceTask: each poll one request, each record acknowledged back when the task
    has a commitRecord of its own, each offset commit one request (commit)."""

    async def start(self, config: Mapping[str, str]) -> None:
        self._polled: dict[int, Polled] = {}
        self._acknowledged: list[pb.Acknowledged] = []
        offsets = stored_offsets(self.context.offset_reader)
        transactions = self.context.transaction_context is not None
        started = await self._start_task(config, offsets=offsets, transactions=transactions)
        self.commits_records = started.commits_records

    async def poll(self) -> list[SourceRecord] | SourceBatch:
        request = pb.PollRequest(connector=self.context.connector, task=self.context.task)
        answer = await self.host.acall("Poll", request)
        if answer.HasField("failed"):
            raise failure_error(answer.failed)
        if answer.HasField("batch"):
            self._polled = {}
            self._request_boundaries(answer)
            return source_batch(answer.batch)
        partitions: dict[str, Any] = {}
        polled = [source_record(produced, partitions) for produced in answer.records]
        if self.commits_records:
            for one in polled:
                # The entry keeps the record alive, so its id is not reused while it is pending.
                self._polled[id(one.record)] = one
        else:  # only what the loop asks of this poll's records: the outcomes not kept
            self._polled = {id(one.record): one for one in polled if not one.kept}
        context = self.context.transaction_context
        if context is not None:
            for one, produced in zip(polled, answer.records, strict=True):
                if produced.commit_after:
                    context.commit_transaction(one.record)
                if produced.abort_after:
                    context.abort_transaction(one.record)
        self._request_boundaries(answer)
        return [one.record for one in polled]

    def _request_boundaries(self, answer: pb.PollResponse) -> None:
        """What the task asked of its TransactionContext for the whole poll."""
        context = self.context.transaction_context
        if context is None:
            return
        if answer.commit_requested:
            context.commit_transaction()
        if answer.abort_requested:
            context.abort_transaction()

    def outcome(self, record: SourceRecord) -> SourceRecord | None:
        """The record as the loop's transformation step sees it: None when the JVM's
        transformations dropped it; RecordError when it failed a stage there."""
        one = self._polled.get(id(record))
        if one is None or one.kept:
            return record
        if one.failure is not None:
            raise one.failure
        return None

    async def commit_record(self, record: SourceRecord, metadata: RecordMetadata | None) -> None:
        one = self._polled.pop(id(record), None)
        if one is not None:
            self._acknowledged.append(acknowledgement(one.polled, metadata))

    async def commit(self) -> None:
        acknowledged, self._acknowledged = self._acknowledged, []
        request = pb.CommitRequest(
            connector=self.context.connector,
            task=self.context.task,
            records=acknowledged,
            commit=True,
        )
        await self.host.acall("Commit", request)


class JavaSinkTask(_JavaTask, Converted, SinkTask):
    """A Java SinkTask: each put one request, of the messages as consumed; what the task asked
    of its context during a call comes back with the answer and is done here."""

    async def start(self, config: Mapping[str, str]) -> None:
        await self._start_task(config)

    async def put(self, records: list[SinkRecord]) -> None:
        await self.put_consumed([as_consumed(r, *self._converters) for r in records])

    @property
    def _converters(self) -> tuple[Converter, Converter, HeaderConverter]:
        """The pass-through converters, for a record made of a message or the other way."""
        return self.key_converter, self.value_converter, self.header_converter

    async def put_consumed(self, messages: Sequence[Message]) -> None:
        request, messages = put_request(self.context.connector, self.context.task, messages)
        answer = await self.host.acall("Put", request)
        self._follow(answer.requests)
        for failure in answer.skipped:
            if not 0 <= failure.index < len(messages):
                raise failure_error(failure)
            record = to_sink_record(messages[failure.index], *self._converters)
            await self.context.errant_record_reporter.report(record, failure_error(failure))

    async def pre_commit(self, offsets: dict[TopicPartition, int]) -> dict[TopicPartition, int]:
        request = pb.PreCommitRequest(
            connector=self.context.connector,
            task=self.context.task,
            offsets=[partition_offset(tp, o) for tp, o in offsets.items()],
        )
        answer = await self.host.acall("PreCommit", request)
        self._follow(answer.requests)
        return {TopicPartition(o.topic, o.partition): o.offset for o in answer.offsets}

    async def open(self, partitions: set[TopicPartition]) -> None:
        await self._partitions(partitions, close=False)

    async def close(self, partitions: set[TopicPartition]) -> None:
        await self._partitions(partitions, close=True)

    async def _partitions(self, partitions: set[TopicPartition], close: bool) -> None:
        request = pb.PartitionsRequest(
            connector=self.context.connector,
            task=self.context.task,
            partitions=[partition_offset(tp, 0) for tp in sorted(partitions, key=str)],
            close=close,
        )
        answer = await self.host.acall("Partitions", request)
        self._follow(answer.requests)

    def _follow(self, requests: pb.SinkRequests) -> None:
        """Does what the Java task asked of its context during the call."""
        if requests.offsets:
            self.context.offset(
                {TopicPartition(o.topic, o.partition): o.offset for o in requests.offsets}
            )
        if requests.paused:
            self.context.pause(*(TopicPartition(p.topic, p.partition) for p in requests.paused))
        if requests.resumed:
            self.context.resume(*(TopicPartition(p.topic, p.partition) for p in requests.resumed))
        if requests.commit_requested:
            self.context.request_commit()


class Polled(NamedTuple):
    """A record a Java source task's poll gave, with what happened to it in the JVM."""

    record: SourceRecord
    polled: int
    """Its place among the records the JVM keeps for commitRecord."""
    kept: bool
    failure: RecordError | None


def source_record(produced: pb.ProducedRecord, partitions: dict[str, Any] | None = None) -> Polled:
    """A record as the JVM produced it (converted, transformed), for the source loop. The
    records of one poll share ``partitions``: one source partition is read once, and its records
    share the mapping, which the loop then puts in canonical form once."""
    partitions = {} if partitions is None else partitions
    partition = partitions.get(produced.source_partition)
    if partition is None:
        partition = partitions[produced.source_partition] = json.loads(produced.source_partition)
    record = SourceRecord(
        source_partition=partition,
        source_offset=json.loads(produced.source_offset) if produced.source_offset else {},
        topic=produced.topic,
        value=produced.value if produced.HasField("value") else None,
        key=produced.key if produced.HasField("key") else None,
        partition=produced.partition if produced.HasField("partition") else None,
        headers=tuple((h.key, h.value if h.HasField("value") else None) for h in produced.headers),
        timestamp=produced.timestamp if produced.HasField("timestamp") else None,
    )
    failure = failure_error(produced.failure) if produced.HasField("failure") else None
    kept = not produced.dropped and failure is None
    return Polled(record, produced.polled, kept, failure)


def source_batch(batch: pb.ProducedBatch) -> SourceBatch:
    """A poll the JVM gave as columns (converted, transformed), for the loop's batch path."""
    return SourceBatch(
        source_partition=json.loads(batch.source_partition),
        source_offset=json.loads(batch.source_offset) if batch.source_offset else {},
        topic=batch.topic,
        values=list(batch.values),
        keys=list(batch.keys) if batch.keys else None,
        partition=batch.partition if batch.HasField("partition") else None,
        timestamps=list(batch.timestamps) if batch.timestamps else None,
    )


def acknowledgement(polled: int, metadata: RecordMetadata | None) -> pb.Acknowledged:
    """What commitRecord is told of a record: where it was written, or that it was not."""
    ack = pb.Acknowledged(polled=polled, written=metadata is not None)
    if metadata is not None:
        ack.topic = metadata.topic
        ack.partition = metadata.partition
        ack.offset = metadata.offset
        ack.timestamp = metadata.timestamp if metadata.timestamp is not None else -1
    return ack


TIMESTAMP_TYPES = {0: "CreateTime", 1: "LogAppendTime"}
"""Kafka's timestamp types by the number a consumed message carries, named as Connect's."""


def consumed_record(message: Message) -> pb.ConsumedRecord:
    """A consumed message as the JVM takes it: the bytes, before any converter."""
    known = message.timestamp is not None and message.timestamp >= 0
    consumed = pb.ConsumedRecord(
        topic=message.topic,
        partition=message.partition,
        offset=message.offset,
        timestamp=message.timestamp if known else -1,
        timestamp_type=TIMESTAMP_TYPES.get(message.timestamp_type, "CreateTime")
        if known
        else "NoTimestampType",
        key=message.key,
        value=message.value,
    )
    if message.headers:
        consumed.headers.extend(
            pb.Header(key=k, value=v) if v is not None else pb.Header(key=k)
            for k, v in message.headers
        )
    return consumed


def put_request(
    connector: str, task: int, messages: Sequence[Message]
) -> tuple[pb.PutRequest, Sequence[Message]]:
    """A put of consumed messages as the JVM takes it, and the messages in the order the JVM
    counts them (a failure it names is an index in that order): those unpacked as columns first,
    one by one if any has headers, else as batches; then the record sets, whole."""
    request = pb.PutRequest(connector=connector, task=task)
    record_sets: list[Batches] = []
    columns = messages
    if isinstance(messages, Consumed):
        record_sets = [p for p in messages.pieces if isinstance(p, Batches)]
        unpacked = Consumed(p for p in messages.pieces if isinstance(p, Fetched))
        columns, messages = unpacked, Consumed([*unpacked.pieces, *record_sets])
        headers = unpacked.has_headers()
    else:
        headers = any(m.headers for m in messages)
    if headers:
        request.records.extend(consumed_record(m) for m in columns)
    else:
        request.batches.extend(consumed_batches(columns))
    request.record_sets.extend(
        pb.RecordSet(topic=s.topic, partition=s.partition, batches=s.data) for s in record_sets
    )
    return request, messages


def consumed_batches(messages: Sequence[Message]) -> list[pb.ConsumedBatch]:
    """Consumed messages without headers as the JVM takes them: each run of one
    topic-partition (and timestamp type) as columns, in order."""
    if isinstance(messages, Consumed):
        pieces = (p for p in messages.pieces if isinstance(p, Fetched))
        return [batch for piece in pieces for batch in _fetched_batches(piece)]
    batches = []
    for (topic, partition, kind), run in groupby(messages, _run_of):
        group = list(run)
        batches.append(
            _batch(
                topic,
                partition,
                kind,
                [m.offset for m in group],
                [-1 if m.timestamp is None else m.timestamp for m in group],
                [m.key for m in group],
                [m.value for m in group],
            )
        )
    return batches


def _fetched_batches(piece: Fetched) -> list[pb.ConsumedBatch]:
    """One partition's fetch, from its columns: a batch per run of one timestamp type."""
    kinds = piece.timestamp_types
    if kinds.count(kinds[0]) == len(kinds):  # one run: no step per message
        runs = [(kinds[0], 0, len(kinds))]
    else:
        runs, start = [], 0
        for kind, run in groupby(kinds):
            end = start + sum(1 for _ in run)
            runs.append((kind, start, end))
            start = end
    return [
        _batch(
            piece.topic,
            piece.partition,
            kind,
            piece.offsets[start:end],
            piece.timestamps[start:end],
            piece.keys[start:end],
            piece.values[start:end],
        )
        for kind, start, end in runs
    ]


def _batch(
    topic: str,
    partition: int,
    kind: int,
    offsets: list[int],
    timestamps: list[int],
    keys: list[bytes | None],
    values: list[bytes | None],
) -> pb.ConsumedBatch:
    batch = pb.ConsumedBatch(
        topic=topic,
        partition=partition,
        offsets=offsets,
        timestamps=timestamps,
        timestamp_type=TIMESTAMP_TYPES.get(kind, "CreateTime"),
    )
    batch.keys, lengths = _column(keys)
    batch.key_lengths.extend(lengths)
    batch.values, lengths = _column(values)
    batch.value_lengths.extend(lengths)
    return batch


_run_of = attrgetter("topic", "partition", "timestamp_type")


def _column(cells: list[bytes | None]) -> tuple[bytes, list[int]]:
    """A batch's keys or values: their bytes end to end, and each one's length (-1: null);
    no lengths when all are null."""
    nulls = cells.count(None)
    if nulls == len(cells):
        return b"", []
    if nulls:
        lengths = [-1 if cell is None else len(cell) for cell in cells]
        return b"".join(cell for cell in cells if cell is not None), lengths
    present = cast(list[bytes], cells)
    return b"".join(present), list(map(len, present))


def partition_offset(tp: TopicPartition, offset: int) -> pb.TopicPartitionOffset:
    return pb.TopicPartitionOffset(topic=tp.topic, partition=tp.partition, offset=offset)


def failure_error(failure: pb.RecordFailure) -> RecordError:
    """A stage's failure in the JVM as the loop's RecordError, named as a Python stage's is."""
    cause = JavaError(f"{failure.error_class}: {failure.message}\n{failure.trace}".strip())
    stage = failure.stage.lower().replace("_", " ")
    if stage == "transformation":
        stage = "transform"
    where = f"topic {failure.topic}" if failure.topic else "its way"
    return RecordError(
        f"{stage} failed for a record to {where}: {failure.error_class}: {failure.message}",
        stage,
        cause,
        failure.executing,
    )


def config_def(infos: ConfigInfos) -> ConfigDef:
    """The Java ConfigDef's keys with their types, for what reads an SDK ConfigDef."""
    keys = {}
    for info in infos.configs:
        kind = info.definition.type
        keys[info.definition.name] = ConfigKey(
            info.definition.name, Type(kind) if kind in Type.__members__ else Type.STRING
        )
    return ConfigDef(keys)
