"""The coordinator's gRPC edge: each worker's Join stream feeds the group's queue and drains the
worker's outbox. No group state is touched here; protobuf is converted to the group's events and
from its ``AssignmentUpdate``s here, and nowhere else."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import grpc

from headrace.coordinator import group as g
from headrace.core import log, wire
from headrace.core.runner import cancel
from headrace.core.structs import AssignmentUpdate
from headrace.v1 import coordinator_pb2, coordinator_pb2_grpc


def joined(join: coordinator_pb2.Join, outbox: g.Outbox) -> g.Joined:
    return g.Joined(join.worker_id, frozenset(wire.unit_from_pb(u) for u in join.running), outbox)


def worker_event(worker_id: str, message: coordinator_pb2.WorkerMessage) -> g.Event | None:
    """The group event a message after Join carries; None for one the group has no use for."""
    match message.WhichOneof("kind"):
        case "heartbeat":
            return g.Beat(worker_id)
        case "revocations_done":
            return g.RevocationsDone(worker_id, message.revocations_done.generation)
    return None


def coordinator_message(update: AssignmentUpdate) -> coordinator_pb2.CoordinatorMessage:
    return coordinator_pb2.CoordinatorMessage(assignment=wire.assignment_to_pb(update))


def names_worker(message: coordinator_pb2.WorkerMessage) -> bool:
    """Whether a stream's first message is a Join that names its worker."""
    return message.WhichOneof("kind") == "join" and bool(message.join.worker_id)


class CoordinatorServicer(coordinator_pb2_grpc.CoordinatorServicer):
    def __init__(self, group: g.Group) -> None:
        self._group = group

    async def Join(
        self,
        request_iterator: AsyncIterator[coordinator_pb2.WorkerMessage],
        context: grpc.aio.ServicerContext,
    ) -> AsyncIterator[coordinator_pb2.CoordinatorMessage]:
        first = await anext(request_iterator, None)
        if first is None or not names_worker(first):
            await context.abort(
                grpc.StatusCode.INVALID_ARGUMENT, "join: the first message must name the worker"
            )
            return
        worker_id = first.join.worker_id
        outbox: g.Outbox = asyncio.Queue()
        self._group.submit(joined(first.join, outbox))
        pump = asyncio.create_task(self._pump(worker_id, request_iterator, outbox))
        try:
            while (update := await outbox.get()) is not None:
                yield coordinator_message(update)
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
                event = worker_event(worker_id, message)
                if event is not None:
                    self._group.submit(event)
        except (grpc.aio.AioRpcError, asyncio.CancelledError):
            pass
        finally:
            log.get().info("worker_stream_closed", worker=worker_id)
            outbox.put_nowait(None)  # the worker went away: end the response stream too
