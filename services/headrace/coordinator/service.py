"""The coordinator's gRPC edge: each worker's Join stream feeds the group's queue and drains the
worker's outbox. No group state is touched here."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import grpc

from headrace.coordinator import group as g
from headrace.coordinator.assignmentlog import unit_of
from headrace.core import log
from headrace.core.runner import cancel
from headrace.v1 import coordinator_pb2, coordinator_pb2_grpc


class CoordinatorServicer(coordinator_pb2_grpc.CoordinatorServicer):
    def __init__(self, group: g.Group) -> None:
        self._group = group

    async def Join(
        self,
        request_iterator: AsyncIterator[coordinator_pb2.WorkerMessage],
        context: grpc.aio.ServicerContext,
    ) -> AsyncIterator[coordinator_pb2.CoordinatorMessage]:
        first = await anext(request_iterator, None)
        if first is None or first.WhichOneof("kind") != "join" or not first.join.worker_id:
            await context.abort(
                grpc.StatusCode.INVALID_ARGUMENT, "join: the first message must name the worker"
            )
            return
        worker_id = first.join.worker_id
        outbox: g.Outbox = asyncio.Queue()
        self._group.submit(
            g.Joined(worker_id, frozenset(unit_of(u) for u in first.join.running), outbox)
        )
        pump = asyncio.create_task(self._pump(worker_id, request_iterator, outbox))
        try:
            while (message := await outbox.get()) is not None:
                yield message
        finally:
            await cancel(pump)
            self._group.submit(g.Left(worker_id, outbox))

    async def _pump(
        self,
        worker_id: str,
        messages: AsyncIterator[coordinator_pb2.WorkerMessage],
        outbox: g.Outbox,
    ) -> None:
        try:
            async for message in messages:
                kind = message.WhichOneof("kind")
                if kind == "heartbeat":
                    self._group.submit(g.Beat(worker_id))
                elif kind == "revocations_done":
                    self._group.submit(
                        g.RevocationsDone(worker_id, message.revocations_done.generation)
                    )
        except (grpc.aio.AioRpcError, asyncio.CancelledError):
            pass
        finally:
            log.get().info("worker_stream_closed", worker=worker_id)
            outbox.put_nowait(None)  # the worker went away: end the response stream too
