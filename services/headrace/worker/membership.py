"""The worker's side of the group: a Join stream to the active coordinator, kept up across
outages and failovers, and the watchdog that fences the worker when it is cut off.

It sends Join (with what the worker runs now, each unit with its incarnation), a numbered
heartbeat every ``heartbeat`` seconds, and the acknowledgements of revocations and deletions.
Every assignment that arrives is handed to ``on_assignment`` as an ``AssignmentUpdate``, so
protobuf goes no further than this module.

**Finding the coordinator.** ``addresses`` lists every coordinator replica; a standby refuses the
Join, and the worker tries the next address, with a short backoff once it has tried them all.

**Fencing.** The coordinator answers each heartbeat. The worker's last contact is when it *sent*
the newest heartbeat the coordinator answered, never later than when the coordinator last heard
it. Once that is :data:`FENCE_AFTER` of the session timeout ago, and the worker runs anything,
``on_fence`` is called: the worker stops all of its units itself, because from the session
timeout on the coordinator may hand them to another worker. A coordinator that restarts or fails
over within that time goes unnoticed.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

import grpc

from headrace.core.backoff import Backoff
from headrace.core.model import wire
from headrace.core.model.structs import AssignmentUpdate, Instance, WorkUnit
from headrace.core.observability import log
from headrace.core.rpc import GRPC_OPTIONS, accepted
from headrace.core.runner import cancel
from headrace.v1 import coordinator_pb2, coordinator_pb2_grpc

FENCE_AFTER = 0.7
"""The share of the session timeout after which a cut-off worker stops its units: the rest is
the time its plugins have to stop before the coordinator may start them elsewhere."""

DEFAULT_SESSION_TIMEOUT = 10.0  # until a coordinator's Welcome says otherwise


def _plaintext(address: str) -> grpc.aio.Channel:
    return grpc.aio.insecure_channel(address, options=GRPC_OPTIONS)


class Membership:
    def __init__(
        self,
        addresses: Sequence[str],
        worker_id: str,
        running: Callable[[], Mapping[WorkUnit, str]],
        on_assignment: Callable[[AssignmentUpdate], None],
        on_fence: Callable[[], None],
        heartbeat: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        connect: Callable[[str], grpc.aio.Channel] = _plaintext,
        on_levels: Callable[[], None] = lambda: None,
        on_topics_reset: Callable[[str], None] = lambda connector: None,
        on_plugins: Callable[[Mapping[str, str]], object] = lambda plugins: None,
        delivered: Callable[[], Collection[Instance]] = tuple,
    ) -> None:
        self._addresses = list(addresses)
        self._on_levels = on_levels  # the cluster's log levels it holds changed
        self._on_topics_reset = on_topics_reset  # a connector's topics reset (KIP-558)
        self._on_plugins = on_plugins  # the Java plugins installed for the cluster
        self._resets_seen: dict[str, int] = {}  # the last reset acted on, by connector
        # A channel to a coordinator (TLS and token: headrace.core.security.tls).
        self._connect = connect
        self._worker_id = worker_id
        self._running = running
        # The deletions this worker told most recently, acknowledged again with each Join.
        self._delivered = delivered
        self._on_assignment = on_assignment
        self._on_fence = on_fence
        self._heartbeat = heartbeat
        self._clock = clock
        self.session_timeout = DEFAULT_SESSION_TIMEOUT
        self.coordinator = ""  # the address of the coordinator this worker is joined to
        # Which Join stream this is, counted from 1 as each is welcomed: what arrived on an
        # earlier one is from a coordinator this worker has left since.
        self.session = 0
        self.last_contact = clock()
        self._fenced = False
        self._sent: dict[int, float] = {}
        self._sequence = itertools.count(1)
        self._outgoing: asyncio.Queue[coordinator_pb2.WorkerMessage | None] = asyncio.Queue()
        self._tasks: list[asyncio.Task[None]] = []
        self._leaving = False

    def start(self) -> None:
        self._tasks = [
            asyncio.create_task(self._run(), name="membership"),
            asyncio.create_task(self._watch(), name="fence-watch"),
        ]

    def acknowledge(self, generation: int) -> None:
        self._put(revocations_done=coordinator_pb2.RevocationsDone(generation=generation))

    def deletions_done(self, instances: Collection[Instance]) -> None:
        units = [wire.instance_to_pb(i) for i in sorted(instances)]
        self._put(deletions_done=coordinator_pb2.DeletionsDone(units=units))

    def _put(self, **kind: Any) -> None:
        self._outgoing.put_nowait(coordinator_pb2.WorkerMessage(**kind))

    async def leave(self) -> None:
        """Says the worker has stopped everything, and ends the stream: the coordinator hands
        this worker's units to the others at once."""
        self._leaving = True
        self._put(leave=coordinator_pb2.Leave())
        self._outgoing.put_nowait(None)
        run = self._tasks[0] if self._tasks else None
        if run is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(run), timeout=3)
        for task in self._tasks:
            await cancel(task)

    def cut_off_for(self) -> float:
        """Seconds since the coordinator last confirmed it heard from this worker."""
        return self._clock() - self.last_contact

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(min(0.2, self.session_timeout / 20))
            self._fence_if_cut_off()

    def _fence_if_cut_off(self) -> None:
        if self._fenced or self.cut_off_for() < FENCE_AFTER * self.session_timeout:
            return
        if self._running():
            self._fenced = True
            log.get().warning(
                "worker_fenced", cut_off_s=round(self.cut_off_for(), 1), units=len(self._running())
            )
            self._on_fence()

    def join_message(self) -> coordinator_pb2.Join:
        """The Join, saying what this worker runs, and which deletions it told last (their
        acknowledgements may have been lost with a coordinator that failed over before it
        recorded them: found by the nemesis). One cut off past its fencing time fences
        first, whether or not the watchdog got to it (a worker thawed after a long freeze
        rejoins at once): the coordinator may have given its units, and their deletions, to
        others meanwhile, and claiming them would have those deletions delivered here again."""
        self._fence_if_cut_off()
        running = [wire.instance_to_pb(i) for i in sorted(self._running().items())]
        delivered = [wire.instance_to_pb(i) for i in self._delivered()]
        return coordinator_pb2.Join(worker_id=self._worker_id, running=running, delivered=delivered)

    def _contact(self, at: float) -> None:
        self.last_contact = max(self.last_contact, at)
        self._fenced = False

    async def _run(self) -> None:
        waits = Backoff(0.1, 0.5)
        for attempt in itertools.count():
            if self._leaving:
                return
            address = self._addresses[attempt % len(self._addresses)]
            try:
                if await self._session(address):
                    return
                waits.reset()
            except grpc.aio.AioRpcError as exc:
                log.get().info(
                    "coordinator_unreachable",
                    address=address,
                    code=exc.code().name,
                    details=exc.details(),
                )
            if (attempt + 1) % len(self._addresses) == 0:
                await asyncio.sleep(waits.next_s())

    async def _session(self, address: str) -> bool:
        """One Join stream; True when the worker left on purpose."""
        async with self._connect(address) as channel:
            call = coordinator_pb2_grpc.CoordinatorStub(channel).Join()
            await accepted(call)  # a refusal or a standby arrives whole, before Join is sent
            joined_at = self._clock()
            join = self.join_message()
            await call.write(coordinator_pb2.WorkerMessage(join=join))
            writer = asyncio.create_task(self._write(call))
            beat: asyncio.Task[None] | None = None
            try:
                while True:
                    message = await call.read()
                    if message is grpc.aio.EOF:
                        return self._leaving
                    match message.WhichOneof("kind"):
                        case "welcome":
                            self.session_timeout = message.welcome.session_timeout_ms / 1000
                            self.coordinator = address
                            self.session += 1
                            self._contact(joined_at)
                            log.get().info("coordinator_joined", address=address)
                            beat = asyncio.create_task(self._beat())
                        case "heartbeat_ack":
                            sent = self._sent.pop(message.heartbeat_ack.sequence, None)
                            if sent is not None:
                                self._contact(sent)
                        case "assignment":
                            self._on_assignment(wire.assignment_from_pb(message.assignment))
                        case "log_levels":  # KIP-976: this worker's, and its plugins'
                            levels = message.log_levels.levels
                            if log.cluster_levels.apply(
                                {k: (v.level, v.at_ms) for k, v in levels.items()}
                            ):
                                self._on_levels()
                        case "plugins":  # installed before the assignments that follow start
                            self._on_plugins(dict(message.plugins.sha512))
                        case "topics_reset":
                            reset = message.topics_reset
                            # Every joining worker hears of past resets: act on new ones only.
                            if reset.at_ms != self._resets_seen.get(reset.connector):
                                self._resets_seen[reset.connector] = reset.at_ms
                                self._on_topics_reset(reset.connector)
            finally:
                await cancel(beat)
                await cancel(writer)
                self._sent.clear()
                with contextlib.suppress(grpc.aio.AioRpcError):
                    call.cancel()

    async def _beat(self) -> None:
        while True:
            # Several beats per fencing window, however short the session timeout is.
            await asyncio.sleep(min(self._heartbeat, self.session_timeout / 8))
            sequence = next(self._sequence)
            self._sent[sequence] = self._clock()
            self._put(heartbeat=coordinator_pb2.Heartbeat(sequence=sequence))

    async def _write(
        self, call: grpc.aio.StreamStreamCall[coordinator_pb2.WorkerMessage, Any]
    ) -> None:
        while (message := await self._outgoing.get()) is not None:
            await call.write(message)
        await call.done_writing()


class Freshness:
    """Whether the assignment a worker is applying may be stale: the worker is cut off from the
    group, or was since that assignment arrived (one read after a freeze may be long stale), or
    has joined anew since (a worker thawed in the middle of applying one rejoins at once). The
    coordinator may then have handed its units and deletions to other workers meanwhile, so
    the worker starts and tells none of them, and hears again what to run."""

    def __init__(self, membership: Membership) -> None:
        self._membership = membership
        self._fences = 0  # how often the worker was cut off and gave its units up
        self._fences_at_apply = 0  # how often, when the assignment being applied arrived
        self._session_at_apply = 0  # the Join stream it arrived on

    def applying(self) -> None:
        """An assignment arrived and is applied from now."""
        self._fences_at_apply = self._fences
        self._session_at_apply = self._membership.session

    def fenced(self) -> None:
        self._fences += 1

    def stale(self) -> bool:
        membership = self._membership
        return (
            self._fences != self._fences_at_apply
            or membership.session != self._session_at_apply
            or membership.cut_off_for() >= FENCE_AFTER * membership.session_timeout
        )
