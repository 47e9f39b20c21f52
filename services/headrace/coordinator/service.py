"""The coordinator's gRPC edge: each worker's Join stream feeds the group's queue and drains the
worker's outbox, and ``History`` answers what the last generations moved. No group state is
touched here; protobuf is converted to the group's events and from its ``AssignmentUpdate``s and
generation summaries here, and nowhere else."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import grpc

from headrace.coordinator import group as g
from headrace.coordinator.assignmentlog import History
from headrace.coordinator.history import GenerationSummary, describe_all
from headrace.core.model import wire
from headrace.core.model.configstate import InstalledPlugin, LogLevel, TopicsReset
from headrace.core.model.structs import AssignmentUpdate
from headrace.core.observability import log
from headrace.core.rpc import GO_AHEAD
from headrace.core.runner import cancel
from headrace.v1 import coordinator_pb2, coordinator_pb2_grpc, events_pb2


def joined(join: coordinator_pb2.Join, outbox: g.Outbox) -> g.Joined:
    running = dict(wire.instance_from_pb(u) for u in join.running)
    delivered = frozenset(wire.instance_from_pb(u) for u in join.delivered)
    return g.Joined(join.worker_id, running, outbox, delivered)


def worker_event(worker_id: str, message: coordinator_pb2.WorkerMessage) -> g.Event | None:
    """The group event a message after Join carries; None for one the group has no use for
    (a heartbeat is answered by the edge itself, then handed on; Leave ends the stream)."""
    match message.WhichOneof("kind"):
        case "heartbeat":
            return g.Beat(worker_id)
        case "revocations_done":
            return g.RevocationsDone(worker_id, message.revocations_done.generation)
        case "deletions_done":
            done = frozenset(wire.instance_from_pb(u) for u in message.deletions_done.units)
            return g.DeletionsDone(worker_id, done)
    return None


def coordinator_message(update: AssignmentUpdate) -> coordinator_pb2.CoordinatorMessage:
    return coordinator_pb2.CoordinatorMessage(assignment=wire.assignment_to_pb(update))


def welcome(session_timeout: float, name: str) -> coordinator_pb2.CoordinatorMessage:
    return coordinator_pb2.CoordinatorMessage(
        welcome=coordinator_pb2.Welcome(
            session_timeout_ms=int(session_timeout * 1000), coordinator=name
        )
    )


def heartbeat_ack(sequence: int) -> coordinator_pb2.CoordinatorMessage:
    return coordinator_pb2.CoordinatorMessage(
        heartbeat_ack=coordinator_pb2.HeartbeatAck(sequence=sequence)
    )


HISTORY_DEFAULT = 10
"""Generations ``History`` answers when the request names no count."""


def summary_to_pb(summary: GenerationSummary) -> coordinator_pb2.GenerationSummary:
    return coordinator_pb2.GenerationSummary(
        generation=summary.number,
        recorded_at_ms=round(summary.recorded_at * 1000),
        coordinator=summary.coordinator,
        members=[
            coordinator_pb2.MemberLoad(worker_id=m, connectors=load.connectors, tasks=load.tasks)
            for m, load in summary.members.items()
        ],
        new_units=[str(u) for u in summary.new],
        moved=[
            coordinator_pb2.UnitMove(unit=str(m.unit), from_worker=m.source, to_worker=m.target)
            for m in summary.moved
        ],
        revoked=[
            coordinator_pb2.MemberRevocations(
                worker_id=m,
                units=[
                    coordinator_pb2.RevokedUnit(unit=str(u), deleted=d) for u, d in units.items()
                ],
            )
            for m, units in summary.revoked.items()
        ],
        departed=[
            coordinator_pb2.DepartedMember(worker_id=m, units=n)
            for m, n in summary.departed.items()
        ],
        pending_deletions=[
            coordinator_pb2.OwedDeletion(
                unit=str(p.unit),
                incarnation=p.incarnation,
                owner=p.owner,
                connector=p.unit.connector,
                connector_class=p.connector_class,
                plugin_version=p.plugin_version,
            )
            for p in summary.pending
        ],
    )


def names_worker(message: coordinator_pb2.WorkerMessage) -> bool:
    """Whether a stream's first message is a Join that names its worker."""
    return message.WhichOneof("kind") == "join" and bool(message.join.worker_id)


class CoordinatorServicer(coordinator_pb2_grpc.CoordinatorServicer):
    """Refuses workers while this replica stands by; once it leads (:meth:`lead`), feeds each
    worker's stream to the group and answers its heartbeats, as long as ``fresh`` says the
    lease is this replica's."""

    def __init__(
        self,
        name: str,
        fresh: Callable[[], bool],
        join_refusal: Callable[[str, Any], str | None] = lambda worker_id, context: None,
    ) -> None:
        self._name = name
        self._fresh = fresh
        # Why a caller may not join under a worker id (its credential names another): with
        # auth on, no caller cuts a worker off by joining under its id.
        self._join_refusal = join_refusal
        self._group: g.Group | None = None
        self._history: Callable[[], History] | None = None
        # The cluster's log levels (KIP-976), sent to each worker as it joins and to all of them
        # as they change.
        self._levels = coordinator_pb2.CoordinatorMessage(log_levels=coordinator_pb2.LogLevels())
        self._outboxes: set[g.Outbox] = set()
        self._resets: dict[str, coordinator_pb2.CoordinatorMessage] = {}  # the last, by connector
        # The Java plugins installed for the whole cluster: each worker installs them as it
        # joins, before its first assignment, and as they change.
        self._plugins = coordinator_pb2.CoordinatorMessage(
            plugins=coordinator_pb2.InstalledPlugins()
        )

    def set_log_levels(self, levels: Mapping[str, LogLevel]) -> None:
        """The cluster's log levels are now ``levels``: every worker connected hears of them."""
        self._levels = coordinator_pb2.CoordinatorMessage(
            log_levels=coordinator_pb2.LogLevels(
                levels={
                    logger: coordinator_pb2.LogLevel(level=lv.level, at_ms=lv.at_ms)
                    for logger, lv in levels.items()
                }
            )
        )
        for outbox in self._outboxes:
            outbox.put_nowait(self._levels)

    def set_plugins(self, plugins: Mapping[str, InstalledPlugin]) -> None:
        """The cluster's installed Java plugins are now ``plugins``: every worker hears of it."""
        self._plugins = coordinator_pb2.CoordinatorMessage(
            plugins=coordinator_pb2.InstalledPlugins(
                sha512={coordinate: p.sha512 for coordinate, p in plugins.items()}
            )
        )
        for outbox in self._outboxes:
            outbox.put_nowait(self._plugins)

    def topics_reset(self, reset: TopicsReset) -> None:
        """A connector's topics were reset (KIP-558): every worker connected hears of it, and
        has the connector's running tasks report the topics they use again. Each joining
        worker hears of the last reset of every connector too, and acts on those newer than it
        saw: one that joins another replica just as a reset is made misses none."""
        message = coordinator_pb2.CoordinatorMessage(
            topics_reset=events_pb2.TopicsReset(connector=reset.connector, at_ms=reset.at_ms)
        )
        self._resets[reset.connector] = message
        for outbox in self._outboxes:
            outbox.put_nowait(message)

    def lead(self, group: g.Group | None, history: Callable[[], History] | None = None) -> None:
        """Leads with ``group``, reading the assignments topic's history with ``history``;
        ``None`` stands by again."""
        self._group = group
        self._history = history

    async def History(
        self, request: coordinator_pb2.HistoryRequest, context: grpc.aio.ServicerContext
    ) -> coordinator_pb2.HistoryResponse:
        history = self._history
        if history is None or not self._fresh():
            await context.abort(
                grpc.StatusCode.UNAVAILABLE, f"coordinator {self._name} is standing by"
            )
        assert history is not None
        count = request.last if request.last > 0 else HISTORY_DEFAULT
        summaries = describe_all(history().latest(count + 1))[-count:]
        return coordinator_pb2.HistoryResponse(generations=[summary_to_pb(s) for s in summaries])

    async def Join(
        self,
        request_iterator: AsyncIterator[coordinator_pb2.WorkerMessage],
        context: grpc.aio.ServicerContext,
    ) -> AsyncIterator[coordinator_pb2.CoordinatorMessage]:
        group = self._group
        if group is None or not self._fresh():
            await context.abort(
                grpc.StatusCode.UNAVAILABLE, f"coordinator {self._name} is standing by"
            )
            return
        await context.send_initial_metadata(GO_AHEAD)  # the go-ahead (headrace.core.rpc)
        first = await anext(request_iterator, None)
        if first is None or not names_worker(first):
            await context.abort(
                grpc.StatusCode.INVALID_ARGUMENT, "join: the first message must name the worker"
            )
            return
        worker_id = first.join.worker_id
        refused = self._join_refusal(worker_id, context)
        if refused is not None:
            await context.abort(grpc.StatusCode.PERMISSION_DENIED, refused)
            return
        outbox: g.Outbox = asyncio.Queue()
        acks: asyncio.Queue[int] = asyncio.Queue()
        left = asyncio.Event()
        # Heard of from now on: a level or a reset made while the snapshot below goes out
        # follows it through the outbox, rather than being missed.
        self._outboxes.add(outbox)
        try:
            yield welcome(group.session_timeout, self._name)
            yield self._plugins
            if self._levels.log_levels.levels:
                yield self._levels
            for reset in list(self._resets.values()):
                yield reset
        except BaseException:
            self._outboxes.discard(outbox)  # gone before it joined the group
            raise
        group.submit(joined(first.join, outbox))
        pump = asyncio.create_task(
            self._pump(group, worker_id, request_iterator, outbox, acks, left)
        )
        try:
            async for message in merged(outbox, acks):
                yield message
        finally:
            self._outboxes.discard(outbox)
            await cancel(pump)
            group.submit(g.Left(worker_id, outbox, clean=left.is_set()))

    async def _pump(
        self,
        group: g.Group,
        worker_id: str,
        messages: AsyncIterator[coordinator_pb2.WorkerMessage],
        outbox: g.Outbox,
        acks: asyncio.Queue[int],
        left: asyncio.Event,
    ) -> None:
        try:
            async for message in messages:
                if not self._fresh():
                    break  # the lease ran out: the worker must look for the active replica
                if message.WhichOneof("kind") == "heartbeat":
                    acks.put_nowait(message.heartbeat.sequence)
                if message.WhichOneof("kind") == "leave":
                    left.set()
                    break
                event = worker_event(worker_id, message)
                if event is not None:
                    group.submit(event)
        except (grpc.aio.AioRpcError, asyncio.CancelledError):
            pass
        finally:
            log.get().info("worker_stream_closed", worker=worker_id, left=left.is_set())
            outbox.put_nowait(None)  # the worker went away: end the response stream too


async def merged(
    outbox: g.Outbox, acks: asyncio.Queue[int]
) -> AsyncIterator[coordinator_pb2.CoordinatorMessage]:
    """The group's updates and the heartbeat acknowledgements, as they come, until the group
    ends the stream. A wait is never given up once begun: the message it takes is sent."""
    update_wait = asyncio.ensure_future(outbox.get())
    ack_wait = asyncio.ensure_future(acks.get())
    try:
        while True:
            done, _ = await asyncio.wait(
                {update_wait, ack_wait}, return_when=asyncio.FIRST_COMPLETED
            )
            if ack_wait in done:
                sequence = ack_wait.result()
                ack_wait = asyncio.ensure_future(acks.get())
                yield heartbeat_ack(sequence)
            if update_wait in done:
                update = update_wait.result()
                if update is None:
                    return
                update_wait = asyncio.ensure_future(outbox.get())
                if isinstance(update, coordinator_pb2.CoordinatorMessage):
                    yield update  # the edge's own, for every member
                else:
                    yield coordinator_message(update)
    finally:
        update_wait.cancel()  # the stream is over: what it would have taken goes nowhere
        ack_wait.cancel()
