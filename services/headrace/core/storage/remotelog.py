"""A log another process keeps, read and appended through its ``OffsetLogService``: how the
plugin processes of standalone mode reach the source offsets its one process keeps in a file
(``headrace.core.storage.filelog``).

It keeps a :class:`~headrace.core.storage.topiclog.Log`'s promises as a source task uses them:
``start`` replays every record the log holds, and an append returns once the records are the
log's, each handed to this log's handler as it would have read it. It does not follow the log:
a source task is the only writer of its partitions while it runs.
"""

from __future__ import annotations

import asyncio

import grpc

from headrace.core.model.errors import LogReaderStopped
from headrace.core.security import tls
from headrace.core.settings import Settings
from headrace.core.storage.topiclog import Handler, LogFactory, LogRecord, Record
from headrace.v1 import internal_pb2, internal_pb2_grpc

CALL_TIMEOUT_S = 30.0


class RemoteLog:
    """The log served at ``address``, under the name ``topic``."""

    def __init__(self, settings: Settings, address: str, topic: str, on_record: Handler) -> None:
        self._settings = settings
        self._address = address
        self._topic = topic
        self._on_record = on_record
        self._channel: grpc.aio.Channel | None = None
        self._stub: internal_pb2_grpc.OffsetLogServiceStub | None = None

    @property
    def topic(self) -> str:
        return self._topic

    @property
    def reader(self) -> asyncio.Task[None] | None:
        return None  # nothing reads in the background

    def _client(self) -> internal_pb2_grpc.OffsetLogServiceStub:
        if self._stub is None:
            self._channel = tls.aio_channel(self._address, self._settings)
            self._stub = internal_pb2_grpc.OffsetLogServiceStub(self._channel)
        return self._stub

    async def start(self, *, writer: bool = True, reader: bool = True, follow: bool = True) -> None:
        if not reader:
            return
        answer = await self._client().ReadOffsets(
            internal_pb2.ReadOffsetsRequest(), timeout=CALL_TIMEOUT_S
        )
        for record in answer.records:
            self._on_record(
                LogRecord(
                    0, record.offset, record.key, record.value if record.HasField("value") else None
                )
            )

    async def close(self) -> None:
        if self._channel is not None:
            await self._channel.close()
            self._channel, self._stub = None, None

    async def append(self, key: str, value: bytes | None) -> tuple[int, int]:
        return (await self.append_many([(key, value)]))[-1]

    async def append_many(
        self, records: list[Record], *, durable: bool = False
    ) -> list[tuple[int, int]]:
        request = internal_pb2.OffsetRecords(
            records=[internal_pb2.OffsetRecord(key=key, value=value) for key, value in records],
            durable=durable,
        )
        answer = await self._client().AppendOffsets(request, timeout=CALL_TIMEOUT_S)
        if len(answer.offsets) != len(records):
            raise RuntimeError(
                f"{self._address} took {len(records)} records and answered "
                f"{len(answer.offsets)} offsets"
            )
        for (key, value), offset in zip(records, answer.offsets, strict=True):
            self._on_record(LogRecord(0, offset, key, value))
        return [(0, offset) for offset in answer.offsets]

    async def write_and_read_back(self, records: list[Record]) -> None:
        await self.append_many(records)

    async def catch_up(self) -> None:
        raise LogReaderStopped(f"{self._topic} at {self._address} is not followed")


def remote_logs(settings: Settings, address: str, topic: str) -> LogFactory:
    """Logs on the log served at ``address``."""
    return lambda handler: RemoteLog(settings, address, topic, handler)
