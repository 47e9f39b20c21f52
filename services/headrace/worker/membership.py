"""The worker's side of the group: a Join stream to the coordinator, kept up across outages.

It sends Join (with what the worker runs now), a heartbeat every second, and revocation
acknowledgements; every assignment that arrives is handed to ``on_assignment`` as an
``AssignmentUpdate``, so protobuf goes no further than this module. When the stream breaks (the
coordinator restarted), it reconnects with backoff and the worker keeps running its units
meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

import grpc

from headrace.core import log, wire
from headrace.core.rpc import GRPC_OPTIONS
from headrace.core.runner import cancel
from headrace.core.structs import AssignmentUpdate, WorkUnit
from headrace.v1 import coordinator_pb2, coordinator_pb2_grpc


class Membership:
    def __init__(
        self,
        address: str,
        worker_id: str,
        running: Callable[[], set[WorkUnit]],
        on_assignment: Callable[[AssignmentUpdate], None],
        heartbeat: float = 1.0,
    ) -> None:
        self._address = address
        self._worker_id = worker_id
        self._running = running
        self._on_assignment = on_assignment
        self._heartbeat = heartbeat
        self._outgoing: asyncio.Queue[coordinator_pb2.WorkerMessage | None] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._leaving = False

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="membership")

    def acknowledge(self, generation: int) -> None:
        self._outgoing.put_nowait(
            coordinator_pb2.WorkerMessage(
                revocations_done=coordinator_pb2.RevocationsDone(generation=generation)
            )
        )

    async def leave(self) -> None:
        """Ends the stream: the coordinator hands this worker's units to the others."""
        self._leaving = True
        self._outgoing.put_nowait(None)
        if self._task is not None:
            try:
                await asyncio.wait_for(asyncio.shield(self._task), timeout=3)
            except TimeoutError:
                await cancel(self._task)

    async def _run(self) -> None:
        backoff = 0.2
        while not self._leaving:
            try:
                if await self._session():
                    return
                backoff = 0.2
            except grpc.aio.AioRpcError as exc:
                log.get().warning("coordinator_unreachable", code=exc.code().name)
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, 2.0)

    async def _session(self) -> bool:
        """One Join stream; True when the worker left on purpose."""
        async with grpc.aio.insecure_channel(self._address, options=GRPC_OPTIONS) as channel:
            call = coordinator_pb2_grpc.CoordinatorStub(channel).Join()
            running = [wire.unit_to_pb(u) for u in sorted(self._running())]
            join = coordinator_pb2.Join(worker_id=self._worker_id, running=running)
            await call.write(coordinator_pb2.WorkerMessage(join=join))
            writer = asyncio.create_task(self._write(call))
            beat = asyncio.create_task(self._beat())
            try:
                while True:
                    message = await call.read()
                    if message is grpc.aio.EOF:
                        return self._leaving
                    if message.WhichOneof("kind") == "assignment":
                        self._on_assignment(wire.assignment_from_pb(message.assignment))
            finally:
                await cancel(beat)
                await cancel(writer)
                with contextlib.suppress(grpc.aio.AioRpcError):
                    call.cancel()

    async def _beat(self) -> None:
        while True:
            await asyncio.sleep(self._heartbeat)
            self._outgoing.put_nowait(
                coordinator_pb2.WorkerMessage(heartbeat=coordinator_pb2.Heartbeat())
            )

    async def _write(
        self, call: grpc.aio.StreamStreamCall[coordinator_pb2.WorkerMessage, Any]
    ) -> None:
        while (message := await self._outgoing.get()) is not None:
            await call.write(message)
        await call.done_writing()
