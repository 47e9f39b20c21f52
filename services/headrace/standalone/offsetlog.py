"""Serves the offsets file to the plugin processes: they read and store source offsets through
``OffsetLogService`` (``headrace.core.storage.remotelog`` is their side), and this process alone
writes the file."""

from __future__ import annotations

import grpc

from headrace.core.storage.filelog import FileTopic, LogFileError
from headrace.v1 import internal_pb2, internal_pb2_grpc


class OffsetLogServicer(internal_pb2_grpc.OffsetLogServiceServicer):
    def __init__(self, topic: FileTopic) -> None:
        self._topic = topic

    async def ReadOffsets(
        self, request: internal_pb2.ReadOffsetsRequest, context: grpc.aio.ServicerContext
    ) -> internal_pb2.OffsetRecords:
        return internal_pb2.OffsetRecords(
            records=[
                internal_pb2.OffsetRecord(key=r.key, value=r.value, offset=r.offset)
                for r in self._topic.records
            ]
        )

    async def AppendOffsets(
        self, request: internal_pb2.OffsetRecords, context: grpc.aio.ServicerContext
    ) -> internal_pb2.AppendOffsetsResponse:
        records = [(r.key, r.value if r.HasField("value") else None) for r in request.records]
        try:
            landed = await self._topic.append_many(records)
            if request.durable:
                await self._topic.flush()
        except (OSError, LogFileError) as exc:
            await context.abort(grpc.StatusCode.UNAVAILABLE, f"offsets not stored: {exc}")
        return internal_pb2.AppendOffsetsResponse(offsets=[r.offset for r in landed])
