"""A Java plugin inside a Python plugin process: the JVM host beside it, and adapters that make
the Java connector look like an SDK connector to the rest of the process.

The Python process keeps the task loop, as for a Python connector: offsets, transactions,
retries, the dead letter queue, metrics and status have one implementation. For each batch the
loop asks the JVM (``JvmPluginHost``, over a Unix socket in the process's private folder) once:
a source's ``poll`` comes back as records already transformed and converted by Connect's own
classes, exactly the bytes Connect would write; a sink's records go over as the bytes consumed,
and Connect's converters and transformations run in the JVM before the task's ``put``. So a
record crosses one process boundary, and the loop runs with pass-through converters and no
transformations of its own (``Converted``).

The JVM is this process's child: it reads its standard input, which this process holds, and
exits when that closes, however this process ends. If the JVM exits first (a crash, an
OutOfMemoryError), this process exits too (``JVM_LOST``), and the worker fails only its units.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import grpc

from headrace.components.errorpolicy import RecordError
from headrace.core.model.configinfo import ConfigInfos
from headrace.core.model.errors import PluginError
from headrace.core.model.wire import config_infos_from_pb
from headrace.core.observability import log, metrics
from headrace.core.rpc import GRPC_OPTIONS
from headrace.core.storage.stores import OffsetStore
from headrace.isolation import jvm
from headrace.isolation.plugins import PluginDescriptor
from headrace.runtime.converted import Converted
from headrace.sdk.config import ConfigDef, ConfigKey, ConfigValue, Type
from headrace.sdk.connector import (
    Connector,
    ConnectorTransactionBoundaries,
    ExactlyOnceSupport,
    SinkConnector,
    SourceConnector,
)
from headrace.sdk.errors import ConnectError, RetriableError
from headrace.sdk.records import RecordMetadata, SinkRecord, SourceRecord, TopicPartition
from headrace.sdk.task import SinkTask, SourceTask, Task
from headrace.v1 import jvm_pb2 as pb
from headrace.v1 import jvm_pb2_grpc as pb_grpc

JVM_LOST = 76
"""This process's exit code when its JVM exited under it."""
READY_WAIT_S = 120.0
STOP_WAIT_S = 5.0


class JavaError(ConnectError):
    """The Java plugin raised; the message is its stack trace."""


class JavaRetriableError(RetriableError):
    """The Java plugin raised Connect's RetriableException: the loop retries, as Connect's
    worker does."""


def _error(exc: grpc.RpcError) -> ConnectError:
    details = (exc.details() if hasattr(exc, "details") else None) or str(exc)
    if hasattr(exc, "code") and exc.code() == grpc.StatusCode.UNAVAILABLE:
        return JavaRetriableError(details)
    return JavaError(details)


class JvmHost:
    """The JVM of this plugin process: started once, its stubs, its connectors' contexts."""

    def __init__(self, descriptor: PluginDescriptor, folder: Path, heap: str) -> None:
        self.descriptor = descriptor
        self._socket = folder / "jvm.sock"
        self._temp = folder / "tmp"
        self._heap = heap
        self._proc: asyncio.subprocess.Process | None = None
        self._channel: grpc.aio.Channel | None = None
        self._sync_channel: grpc.Channel | None = None
        self.stub: pb_grpc.JvmPluginHostStub
        self.sync: pb_grpc.JvmPluginHostStub
        self.contexts: dict[str, Any] = {}
        self._closing = False
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self, wait_s: float = READY_WAIT_S) -> None:
        self._temp.mkdir(mode=0o700, exist_ok=True)
        self._proc = await asyncio.create_subprocess_exec(
            *jvm.command(
                self.descriptor.folder, self._heap, self._temp, "--socket", str(self._socket)
            ),
            stdin=asyncio.subprocess.PIPE,
            stdout=sys.stderr.fileno(),
            stderr=sys.stderr.fileno(),
        )
        target = f"unix:{self._socket}"
        self._channel = grpc.aio.insecure_channel(target, options=GRPC_OPTIONS)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait_s
        while True:
            if self._proc.returncode is not None:
                raise PluginError(f"the JVM host exited with {self._proc.returncode} as it started")
            try:
                await asyncio.wait_for(self._channel.channel_ready(), timeout=0.5)
                break
            except TimeoutError:
                if loop.time() > deadline:
                    raise PluginError(f"the JVM host did not serve in {wait_s:.0f}s") from None
        self._sync_channel = grpc.insecure_channel(target, options=GRPC_OPTIONS)
        self.stub = pb_grpc.JvmPluginHostStub(self._channel)
        self.sync = pb_grpc.JvmPluginHostStub(self._sync_channel)
        self._tasks = [
            asyncio.create_task(self._watch_exit(), name="jvm-exit"),
            asyncio.create_task(self._watch_events(), name="jvm-events"),
        ]

    async def _watch_exit(self) -> None:
        assert self._proc is not None
        code = await self._proc.wait()
        if not self._closing:
            log.get().error("jvm_host_lost", code=code)
            metrics.process_exiting()
            os._exit(JVM_LOST)

    async def _watch_events(self) -> None:
        with contextlib.suppress(grpc.RpcError, asyncio.CancelledError):
            async for event in self.stub.Watch(pb.JvmWatchRequest()):
                context = self.contexts.get(event.connector)
                if context is None:
                    continue
                if event.reconfiguration_requested:
                    context.request_task_reconfiguration()
                if event.error:
                    context.raise_error(JavaError(event.error))

    async def close(self) -> None:
        """Ends the JVM: its input closes, then it is killed if it lingers."""
        self._closing = True
        for task in self._tasks:
            task.cancel()
        if self._proc is not None and self._proc.returncode is None:
            assert self._proc.stdin is not None
            self._proc.stdin.close()
            try:
                await asyncio.wait_for(self._proc.wait(), STOP_WAIT_S)
            except TimeoutError:
                self._proc.kill()
                await self._proc.wait()
        if self._channel is not None:
            await self._channel.close()
        if self._sync_channel is not None:
            self._sync_channel.close()

    def call(self, method: str, request: Any) -> Any:
        """A call that plugin code answers at once (definitions, task configs): synchronous,
        as the SDK's methods it stands for are."""
        try:
            return getattr(self.sync, method)(request)
        except grpc.RpcError as exc:
            raise _error(exc) from exc

    async def acall(self, method: str, request: Any) -> Any:
        try:
            return await getattr(self.stub, method)(request)
        except grpc.RpcError as exc:
            raise _error(exc) from exc


def _failure(failure: pb.RecordFailure) -> RecordError:
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


def _config_def(infos: ConfigInfos) -> ConfigDef:
    keys = {}
    for info in infos.configs:
        kind = info.definition.type
        keys[info.definition.name] = ConfigKey(
            info.definition.name, Type(kind) if kind in Type.__members__ else Type.STRING
        )
    return ConfigDef(keys)


def connector_class(descriptor: PluginDescriptor, host: JvmHost) -> type[Connector]:
    """An SDK connector class standing for the Java connector ``descriptor`` names."""
    name = descriptor.class_name
    definition = config_infos_from_pb(
        host.call("Validate", pb.JvmValidateRequest(connector_class=name, definition_only=True))
    )
    source = descriptor.type == "source"

    class JavaConnector(SourceConnector if source else SinkConnector):  # type: ignore[misc]
        VERSION = descriptor.version
        java_class = name

        async def start(self, config: Mapping[str, str]) -> None:
            self._name = config.get("name", self.context.name)
            host.contexts[self._name] = self.context
            await host.acall(
                "StartConnector",
                pb.JvmStartConnectorRequest(
                    connector_class=name, name=self._name, config=dict(config), max_tasks=1
                ),
            )

        def task_class(self) -> type[Task]:
            return JavaSourceTask if source else JavaSinkTask

        def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
            answer = host.call(
                "TaskConfigs",
                pb.JvmStartConnectorRequest(
                    connector_class=name, name=self._name, max_tasks=max_tasks
                ),
            )
            return [dict(t.config) for t in answer.tasks]

        async def stop(self, deleted: bool = False) -> None:
            host.contexts.pop(getattr(self, "_name", ""), None)
            await host.acall(
                "Stop", pb.JvmStopRequest(connector=self._name, task=-1, deleted=deleted)
            )

        def config(self) -> ConfigDef:
            return _config_def(definition)

        def java_infos(self, config: Mapping[str, str], definition_only: bool) -> ConfigInfos:
            """The Java connector's own validation, as Connect's REST API gives it."""
            request = pb.JvmValidateRequest(
                connector_class=name, config=dict(config), definition_only=definition_only
            )
            return config_infos_from_pb(host.call("Validate", request))

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

        def exactly_once_support(self, config: Mapping[str, str]) -> ExactlyOnceSupport | None:
            answer = self._capabilities(config).exactly_once_support
            return ExactlyOnceSupport(answer.lower()) if answer else None

        def can_define_transaction_boundaries(
            self, config: Mapping[str, str]
        ) -> ConnectorTransactionBoundaries:
            answer = self._capabilities(config).transaction_boundaries
            if answer == "SUPPORTED":
                return ConnectorTransactionBoundaries.SUPPORTED
            return ConnectorTransactionBoundaries.UNSUPPORTED

        def _capabilities(self, config: Mapping[str, str]) -> pb.CapabilitiesResponse:
            request = pb.CapabilitiesRequest(connector_class=name, config=dict(config))
            return host.call("Capabilities", request)

    class JavaSourceTask(Converted, SourceTask):
        VERSION = descriptor.version

        async def start(self, config: Mapping[str, str]) -> None:
            self._unit = (self.context.connector, self.context.task)
            self._polled: dict[int, int] = {}
            self._outcomes: dict[int, RecordError | None] = {}
            self._acknowledged: list[pb.Acknowledged] = []
            reader = self.context.offset_reader
            offsets = [
                pb.SourceOffset(partition=partition, offset=json.dumps(dict(offset)))
                for partition, offset in (
                    reader.state.items() if isinstance(reader, OffsetStore) else ()
                )
            ]
            transactions = self.context.transaction_context is not None
            await _start_task(self, config, offsets=offsets, transactions=transactions)

        async def poll(self) -> list[SourceRecord]:
            answer = await host.acall(
                "Poll", pb.PollRequest(connector=self._unit[0], task=self._unit[1])
            )
            if answer.HasField("failed"):
                raise _failure(answer.failed)
            self._outcomes.clear()
            records = [self._record(r) for r in answer.records]
            context = self.context.transaction_context
            if context is not None:
                for record, produced in zip(records, answer.records, strict=True):
                    if produced.commit_after:
                        context.commit_transaction(record)
                    if produced.abort_after:
                        context.abort_transaction(record)
                if answer.commit_requested:
                    context.commit_transaction()
                if answer.abort_requested:
                    context.abort_transaction()
            return records

        def _record(self, produced: pb.ProducedRecord) -> SourceRecord:
            record = SourceRecord(
                source_partition=json.loads(produced.source_partition),
                source_offset=json.loads(produced.source_offset) if produced.source_offset else {},
                topic=produced.topic,
                value=produced.value if produced.HasField("value") else None,
                key=produced.key if produced.HasField("key") else None,
                partition=produced.partition if produced.HasField("partition") else None,
                headers=tuple(
                    (h.key, h.value if h.HasField("value") else None) for h in produced.headers
                ),
                timestamp=produced.timestamp if produced.HasField("timestamp") else None,
            )
            self._polled[id(record)] = produced.polled
            if produced.dropped:
                self._outcomes[id(record)] = None
            elif produced.HasField("failure"):
                self._outcomes[id(record)] = _failure(produced.failure)
            return record

        def outcome(self, record: SourceRecord) -> SourceRecord | None:
            """The record as the loop's transformation step sees it: None when the JVM's
            transformations dropped it; RecordError when it failed a stage there."""
            if id(record) not in self._outcomes:
                return record
            failure = self._outcomes[id(record)]
            if failure is not None:
                raise failure
            return None

        async def commit_record(
            self, record: SourceRecord, metadata: RecordMetadata | None
        ) -> None:
            polled = self._polled.pop(id(record), None)
            if polled is None:
                return
            ack = pb.Acknowledged(polled=polled, written=metadata is not None)
            if metadata is not None:
                ack.topic = metadata.topic
                ack.partition = metadata.partition
                ack.offset = metadata.offset
                ack.timestamp = metadata.timestamp or -1
            self._acknowledged.append(ack)

        async def commit(self) -> None:
            acknowledged, self._acknowledged = self._acknowledged, []
            await host.acall(
                "Commit",
                pb.CommitRequest(
                    connector=self._unit[0], task=self._unit[1], records=acknowledged, commit=True
                ),
            )

        async def stop(self, deleted: bool = False) -> None:
            await _stop_task(host, self.context.connector, self.context.task, deleted)

    class JavaSinkTask(Converted, SinkTask):
        VERSION = descriptor.version

        async def start(self, config: Mapping[str, str]) -> None:
            self._unit = (self.context.connector, self.context.task)
            await _start_task(self, config)

        async def put(self, records: list[SinkRecord]) -> None:
            answer = await host.acall(
                "Put",
                pb.PutRequest(
                    connector=self._unit[0],
                    task=self._unit[1],
                    records=[_consumed(r) for r in records],
                ),
            )
            self._follow(answer.requests)
            for failure in answer.skipped:
                record = records[failure.index] if 0 <= failure.index < len(records) else None
                if record is None:
                    raise _failure(failure)
                await self.context.errant_record_reporter.report(record, _failure(failure))

        async def pre_commit(self, offsets: dict[TopicPartition, int]) -> dict[TopicPartition, int]:
            answer = await host.acall(
                "PreCommit",
                pb.PreCommitRequest(
                    connector=self._unit[0],
                    task=self._unit[1],
                    offsets=[_tpo(tp, o) for tp, o in offsets.items()],
                ),
            )
            self._follow(answer.requests)
            return {TopicPartition(o.topic, o.partition): o.offset for o in answer.offsets}

        async def open(self, partitions: set[TopicPartition]) -> None:
            await self._partitions(partitions, close=False)

        async def close(self, partitions: set[TopicPartition]) -> None:
            await self._partitions(partitions, close=True)

        async def _partitions(self, partitions: set[TopicPartition], close: bool) -> None:
            answer = await host.acall(
                "Partitions",
                pb.PartitionsRequest(
                    connector=self._unit[0],
                    task=self._unit[1],
                    partitions=[_tpo(tp, 0) for tp in sorted(partitions, key=str)],
                    close=close,
                ),
            )
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
                self.context.resume(
                    *(TopicPartition(p.topic, p.partition) for p in requests.resumed)
                )
            if requests.commit_requested:
                self.context.request_commit()

        async def stop(self, deleted: bool = False) -> None:
            await _stop_task(host, self.context.connector, self.context.task, deleted)

    async def _start_task(
        task: JavaSourceTask | JavaSinkTask, config: Mapping[str, str], **more: Any
    ) -> None:
        request = pb.JvmStartTaskRequest(
            connector_class=name,
            connector=task.context.connector,
            task=task.context.task,
            connector_config=dict(task.connector_config),
            task_config=dict(config),
            **more,
        )
        await host.acall("StartTask", request)

    JavaConnector.__name__ = JavaConnector.__qualname__ = name.rsplit(".", 1)[-1]
    return JavaConnector


async def _stop_task(host: JvmHost, connector: str, task: int, deleted: bool) -> None:
    await host.acall("Stop", pb.JvmStopRequest(connector=connector, task=task, deleted=deleted))


def _consumed(record: SinkRecord) -> pb.ConsumedRecord:
    consumed = pb.ConsumedRecord(
        topic=record.topic,
        partition=record.partition,
        offset=record.offset,
        headers=[
            pb.Header(key=k, value=v) if v is not None else pb.Header(key=k)
            for k, v in record.headers
        ],
        timestamp=record.timestamp if record.timestamp is not None else -1,
        timestamp_type="CreateTime" if record.timestamp is not None else "NoTimestampType",
    )
    if record.key is not None:
        consumed.key = record.key
    if record.value is not None:
        consumed.value = record.value
    return consumed


def _tpo(tp: TopicPartition, offset: int) -> pb.TopicPartitionOffset:
    return pb.TopicPartitionOffset(topic=tp.topic, partition=tp.partition, offset=offset)


def heap(descriptor: PluginDescriptor) -> str:
    """The JVM's maximum heap: ``HEADRACE_JVM_HEAP``, else the default."""
    return os.environ.get("HEADRACE_JVM_HEAP") or jvm.DEFAULT_HEAP
