"""The worker group: membership, grace periods, rebalances, and the two-phase hand-over.

One asyncio task (:meth:`Group.run`) owns all of the group's state and changes it only in
response to events from its queue: members joining, heartbeating, acknowledging revocations and
deletions, or leaving; the configs changing; the clock ticking.

**A rebalance** plans the next generation (``planning``, a pure function: ``assignor`` places
the units, ``deletions`` says where each pending deletion goes), appends it to the assignments log,
then sends revocations, waits until every member that lost units has stopped them, and only then
sends the new assignments, so a unit never runs in two places. A rebalance is planned against one
snapshot of the configs, and its hand-over finishes with that same snapshot; what changes meanwhile
is dealt with by the next rebalance.

**A member that leaves** after stopping its units (``Left(clean=True)``) has its units handed
out at once. **A member that is lost** (its stream broke, or its heartbeats stopped) may still be
running its units: it stops them itself once it has heard nothing for the session timeout. Its
units are kept for it until ``session timeout + grace period`` after its last heartbeat
(Connect's ``scheduled.rebalance.max.delay.ms``); a worker back by then finds its own work
waiting, and nothing is stopped anywhere else. A hand-over that waited for a lost member is
abandoned: what that member was to give up stays kept for it, with the rest of its units.

**After a restart** (:meth:`resume`), the deletions workers recorded as told since the last
generation are acknowledged (``core.storage.told``), and every member of that generation is taken
as lost at that moment: each unit is kept for the member that ran it before that generation
until the member rejoins, and a member that does not rejoin in time loses its units as any other
would.

The group speaks the shared vocabulary only: each member's outbox takes ``AssignmentUpdate``s,
which the gRPC edge (``service``) turns into protobuf.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

import structlog

from headrace.coordinator.assignmentlog import Generation, Placement
from headrace.coordinator.deletions import PendingDeletion
from headrace.coordinator.planning import GroupState, plan
from headrace.core.model.configstate import Config, ConfigState
from headrace.core.model.structs import (
    AssignedUnit,
    AssignmentUpdate,
    Cleanup,
    Instance,
    Revocation,
    WorkUnit,
)
from headrace.core.observability import log
from headrace.core.storage.told import DeletionTold
from headrace.v1 import coordinator_pb2

Outbox = asyncio.Queue[AssignmentUpdate | coordinator_pb2.CoordinatorMessage | None]
"""A member's stream: the group's updates, and what the edge sends every member besides (the
cluster's log levels); None ends it."""
"""What the group sends one member's stream; None ends the stream."""

NO_CONFIG: Config = MappingProxyType({})


@dataclass(frozen=True)
class Joined:
    worker_id: str
    running: Placement
    outbox: Outbox
    delivered: frozenset[Instance] = frozenset()
    """The deletions the worker told last, acknowledged again (a coordinator that failed over
    may have lost their acknowledgements)."""


@dataclass(frozen=True)
class Left:
    """A member's stream ended; ``clean`` when the worker said it had stopped all its units."""

    worker_id: str
    outbox: Outbox
    clean: bool = False


@dataclass(frozen=True)
class Beat:
    worker_id: str


@dataclass(frozen=True)
class RevocationsDone:
    worker_id: str
    generation: int


@dataclass(frozen=True)
class DeletionsDone:
    """The worker's plugins returned from ``stop(deleted=True)`` for these units."""

    worker_id: str
    instances: frozenset[Instance]


@dataclass(frozen=True)
class ConfigsChanged:
    state: ConfigState


@dataclass(frozen=True)
class ConnectorRetired:
    """An incarnation of a connector was deleted (or replaced under its name): its last configs,
    which a clean-up elsewhere may need once the configs topic has forgotten them."""

    name: str
    incarnation: str
    config: Config
    tasks: tuple[Config, ...]


@dataclass(frozen=True)
class Tick:
    pass


Event = (
    Joined
    | Left
    | Beat
    | RevocationsDone
    | DeletionsDone
    | ConfigsChanged
    | ConnectorRetired
    | Tick
)


@dataclass
class Member:
    outbox: Outbox
    last_seen: float
    session: int  # which join of this worker id this is


@dataclass
class Departed:
    """A lost member in its grace period, and the units kept for it until ``until``."""

    units: dict[WorkUnit, str]
    until: float


@dataclass
class Handover:
    """A rebalance waiting for revocations to be acknowledged."""

    generation: int
    assignment: Mapping[str, Placement]
    revocations: Mapping[str, frozenset[Revocation]]
    cleanups: Mapping[str, tuple[Cleanup, ...]]
    configs: ConfigState
    sessions: dict[str, int]  # each member's session when the plan was made
    waiting: set[str]


def assigned_units(units: Placement, configs: ConfigState) -> tuple[AssignedUnit, ...]:
    """What one member runs, with the configs to run it with, in unit order."""
    return tuple(_assigned(unit, units[unit], configs) for unit in sorted(units))


def _assigned(unit: WorkUnit, incarnation: str, configs: ConfigState) -> AssignedUnit:
    tasks = configs.tasks_of(unit.connector)
    return AssignedUnit(
        unit,
        configs.connectors.get(unit.connector, NO_CONFIG),
        tasks[unit.task] if 0 <= unit.task < len(tasks) else NO_CONFIG,
        incarnation,
        configs.target_of(unit.connector),
        configs.restart_of(unit.connector, unit.task),
        configs.config_versions.get(unit.connector, 0),
    )


def _without(units: Mapping[WorkUnit, str], gone: Iterable[WorkUnit]) -> dict[WorkUnit, str]:
    out = dict(units)
    for unit in gone:
        out.pop(unit, None)
    return out


@dataclass
class Group:
    """The coordinator's state; see the module docstring."""

    append: Callable[[Generation], Awaitable[None]]
    session_timeout: float = 10.0
    grace: float = 0.0  # Connect's scheduled.rebalance.max.delay.ms, in seconds
    # Where "now" comes from, for session timeouts and grace periods; tests pass a clock they
    # move by hand. The wall clock only stamps the generations for the history.
    clock: Callable[[], float] = time.monotonic
    wall: Callable[[], float] = time.time
    name: str = ""  # this coordinator, as the generations it records name it
    configs: ConfigState = field(default_factory=ConfigState)
    members: dict[str, Member] = field(default_factory=dict)
    departed: dict[str, Departed] = field(default_factory=dict)
    # What each live member runs, each unit with the incarnation it runs.
    current: dict[str, dict[WorkUnit, str]] = field(default_factory=dict)
    # The units kept for a member that came back in its grace period, until the next plan
    # hands them to it.
    returning: dict[str, dict[WorkUnit, str]] = field(default_factory=dict)
    # Units that ran and have no member now (the last one left): placed when one joins, and
    # cleaned up as any other if their connector is deleted meanwhile.
    unassigned: dict[WorkUnit, str] = field(default_factory=dict)
    pending: dict[Instance, PendingDeletion] = field(default_factory=dict)
    retired: dict[tuple[str, str], tuple[Config, tuple[Config, ...]]] = field(default_factory=dict)
    handover: Handover | None = None
    dirty: bool = False
    # A deletion was acknowledged since the last generation was recorded: its absence from the
    # pending deletions must be written before anything else happens (``_amend``).
    acknowledged: bool = False
    # What the last generation recorded, and what each member was last told to run (a
    # revocation forgets it): a plan that would change neither is not recorded nor sent.
    recorded: Generation | None = None
    last_sent: dict[str, tuple[tuple[AssignedUnit, ...], tuple[Cleanup, ...]]] = field(
        default_factory=dict
    )
    queue: asyncio.Queue[Event] = field(default_factory=asyncio.Queue)
    _sessions: itertools.count[int] = field(default_factory=itertools.count)

    def resume(self, last: Generation, told: Iterable[DeletionTold] = ()) -> None:
        """Continues from the last generation in the log, less the deletions ``told`` (a worker
        recorded that its plugin heard them); see the module docstring."""
        self.recorded = last
        self.pending = {p.instance: p for p in last.pending}
        for deletion in told:
            if self.pending.pop(deletion.instance, None) is not None:
                unit = str(deletion.instance[0])
                log.get().info("deletion_acknowledged", worker=deletion.worker_id, unit=unit)
        until = self.clock() + self.session_timeout + self.grace
        kept: dict[str, dict[WorkUnit, str]] = {
            m: dict(units) for m, units in [*last.departed.items(), *last.members.items()]
        }
        # Whether the crash interrupted a hand-over is not known: a unit revoked in the last
        # generation may still run on the member that was to give it up, or already on the one
        # that was to take it. It is kept for both until each has rejoined or expired.
        for member, revoked in last.revocations.items():
            for r in revoked:
                if not r.deleted:
                    kept.setdefault(member, {})[r.unit] = r.incarnation
        self.departed = {m: Departed(units, until) for m, units in kept.items()}
        self.unassigned = dict(last.unassigned)
        self.dirty = True

    @property
    def generation(self) -> int:
        """The number of the last generation recorded (0 before the first)."""
        return self.recorded.number if self.recorded is not None else 0

    def end_streams(self) -> None:
        """Ends every member's stream: this coordinator no longer leads."""
        for member in self.members.values():
            member.outbox.put_nowait(None)

    def submit(self, event: Event) -> None:
        self.queue.put_nowait(event)

    async def run(self) -> None:
        """Acts on queued events until cancelled; what queued up meanwhile is taken at once."""
        while True:
            events = [await self.queue.get()]
            while not self.queue.empty():
                events.append(self.queue.get_nowait())
            await self.process(events)

    async def process(self, events: list[Event]) -> None:
        """Applies events, then finishes a hand-over or starts a rebalance if one is due."""
        for event in events:
            self._handle(event)
        if self.handover is not None and not self.handover.waiting:
            self._finish(self.handover)
        if self.handover is None and self.dirty:
            self.dirty = False
            await self._rebalance()
            if self.handover is not None and not self.handover.waiting:
                self._finish(self.handover)  # nothing to revoke: hand out at once
        if self.acknowledged:
            await self._amend()

    def _handle(self, event: Event) -> None:
        now = self.clock()
        match event:
            case Joined(worker_id, running, outbox, delivered):
                self._join(worker_id, running, outbox, now)
                self._deleted(worker_id, delivered)
            case Left(worker_id, outbox, clean):
                member = self.members.get(worker_id)
                if member is not None and member.outbox is outbox:
                    if clean:
                        self._remove(worker_id, "left")
                    else:
                        self._lose(worker_id, "stream_closed")
            case Beat(worker_id):
                if worker_id in self.members:
                    self.members[worker_id].last_seen = now
            case RevocationsDone(worker_id, generation):
                self._revoked(worker_id, generation)
            case DeletionsDone(worker_id, instances):
                self._deleted(worker_id, instances)
            case ConfigsChanged(state):
                self.configs = state
                self.dirty = True
            case ConnectorRetired(name, incarnation, config, tasks):
                self.retired[(name, incarnation)] = (config, tasks)
            case Tick():
                self._expire(now)

    def _join(self, worker_id: str, running: Placement, outbox: Outbox, now: float) -> None:
        old = self.members.get(worker_id)
        if old is not None and old.outbox is not outbox:
            old.outbox.put_nowait(None)  # a newer stream of the same worker wins
        self.members[worker_id] = Member(outbox, now, next(self._sessions))
        self.current[worker_id] = dict(running)
        kept = self.departed.pop(worker_id, None)
        if kept is not None:
            # Its own units come back to it, save those that run elsewhere, or may: after a
            # restart, a unit whose hand-over the crash interrupted is kept for both members.
            elsewhere = {u for m, units in self.current.items() if m != worker_id for u in units}
            elsewhere.update(*(d.units for d in self.departed.values()))
            self.returning[worker_id] = _without(kept.units, {*running, *elsewhere})
        self.last_sent.pop(worker_id, None)
        self.dirty = True
        log.get().info(
            "worker_joined", worker=worker_id, running=len(running), returned=kept is not None
        )
        if self.handover is not None and worker_id in self.handover.waiting:
            self._revoke_again(self.handover, worker_id, running)

    def _revoke_again(self, handover: Handover, worker_id: str, running: Placement) -> None:
        """A member's stream broke before it acknowledged: ask again for what it still runs."""
        revoked = frozenset(r for r in handover.revocations.get(worker_id, ()) if r.unit in running)
        if not revoked:
            handover.waiting.discard(worker_id)
            return
        handover.sessions[worker_id] = self.members[worker_id].session
        keep = _without(running, (r.unit for r in revoked))
        self._send(worker_id, self._revocation(keep, revoked, handover))

    def _revoked(self, worker_id: str, generation: int) -> None:
        handover = self.handover
        if handover is None or generation != handover.generation:
            return
        if worker_id in handover.waiting:
            handover.waiting.discard(worker_id)
            revoked = handover.revocations.get(worker_id, ())
            self.current[worker_id] = _without(
                self.current.get(worker_id, {}), (r.unit for r in revoked)
            )
            # Stopped, and nobody's until the hand-over finishes: no one's if it is abandoned,
            # and a deletion meanwhile must still find them. (A deleted one was told already.)
            self.unassigned.update({r.unit: r.incarnation for r in revoked if not r.deleted})

    def _deleted(self, worker_id: str, instances: frozenset[Instance]) -> None:
        for unit, incarnation in instances:
            if self.pending.pop((unit, incarnation), None) is not None:
                self.acknowledged = True
                log.get().info("deletion_acknowledged", worker=worker_id, unit=str(unit))
            running = self.current.get(worker_id, {})
            if running.get(unit) == incarnation:
                del running[unit]
        self.dirty = True  # recorded, and a new incarnation may now be placed

    def _remove(self, worker_id: str, reason: str) -> None:
        """A member leaves, having stopped everything: its units are free at once."""
        member = self.members.pop(worker_id, None)
        if member is not None:
            member.outbox.put_nowait(None)
        self.unassigned.update(self.returning.pop(worker_id, {}))
        self.unassigned.update(self.current.pop(worker_id, {}))
        self.last_sent.pop(worker_id, None)
        if self.handover is not None:
            self.handover.waiting.discard(worker_id)
        self.dirty = True
        log.get().info("worker_left", worker=worker_id, reason=reason)

    def _lose(self, worker_id: str, reason: str) -> None:
        """A member is lost, and may still run its units: they are kept for it until its
        session and grace period are over."""
        member = self.members.pop(worker_id)
        member.outbox.put_nowait(None)
        units = {**self.returning.pop(worker_id, {}), **self.current.pop(worker_id, {})}
        until = member.last_seen + self.session_timeout + self.grace
        self.departed[worker_id] = Departed(units, until)
        self.last_sent.pop(worker_id, None)
        if self.handover is not None and worker_id in self.handover.waiting:
            # Its revoked units may still run there: they cannot go to anyone else yet.
            self.handover = None
        self.dirty = True
        log.get().info("worker_lost", worker=worker_id, reason=reason, kept=len(units))

    def _expire(self, now: float) -> None:
        for worker_id, member in list(self.members.items()):
            if now - member.last_seen > self.session_timeout:
                self._lose(worker_id, "session_timeout")
        for worker_id, departed in list(self.departed.items()):
            if now >= departed.until:
                del self.departed[worker_id]
                self.unassigned.update(departed.units)
                self.dirty = True
                log.get().info("worker_expired", worker=worker_id, freed=len(departed.units))

    def _order(self) -> list[str]:
        """Live members, longest-standing first: of two claiming one unit, that one keeps it."""
        return sorted(self.members, key=lambda m: self.members[m].session)

    async def _rebalance(self) -> None:
        """Plans the next generation (``planning.plan``, pure), takes the state it leaves, and
        unless it changes nothing, records it and sends its revocations."""
        configs = self.configs
        state = GroupState(
            self.generation,
            configs,
            self._order(),
            self.current,
            self.returning,
            {m: d.units for m, d in self.departed.items()},
            self.unassigned,
            self.pending,
            self.retired,
        )
        planned = plan(state, self.wall(), self.name)
        for member, units in planned.departed.items():
            self.departed[member].units = dict(units)
        self.unassigned = dict(planned.unassigned)
        self.pending = dict(planned.pending)
        self.retired = dict(planned.retired)
        self.returning = {}
        generation = planned.generation
        revocations = generation.revocations
        if not revocations and self._unchanged(generation, planned.cleanups, configs):
            return
        self.acknowledged = False  # the generation records what is still pending
        structlog.contextvars.bind_contextvars(generation=generation.number)
        # Written before anyone hears of it: a revocation with the deletion marker that a crash
        # interrupts is found again on replay.
        await self.append(generation)
        self.recorded = generation
        log.get().info(
            "rebalance_started",
            members=len(state.live),
            departed=len(self.departed),
            revocations=sum(len(r) for r in revocations.values()),
            pending_deletions=len(self.pending),
        )
        handover = Handover(
            generation.number,
            generation.members,
            revocations,
            planned.cleanups,
            configs,
            {m: member.session for m, member in self.members.items()},
            set(revocations),
        )
        self.handover = handover
        for worker_id, revoked in revocations.items():
            keep = _without(self.current.get(worker_id, {}), (r.unit for r in revoked))
            self._send(worker_id, self._revocation(keep, revoked, handover))

    async def _amend(self) -> None:
        """Records the last generation again, less the deletions acknowledged since: while a
        hand-over waits no generation follows, and a coordinator that took over meanwhile would
        resume with them pending, and have them told again, elsewhere if their worker is gone."""
        self.acknowledged = False
        if self.recorded is None:
            return
        still = tuple(p for p in self.recorded.pending if p.instance in self.pending)
        if still != self.recorded.pending:
            amended = replace(self.recorded, pending=still)
            await self.append(amended)
            self.recorded = amended

    def _revocation(
        self, keep: Placement, revoked: frozenset[Revocation], handover: Handover
    ) -> AssignmentUpdate:
        """What a member must stop first, with what it keeps meanwhile."""
        return AssignmentUpdate(
            handover.generation,
            assigned_units(keep, handover.configs),
            tuple(sorted(revoked)),
        )

    def _finish(self, handover: Handover) -> None:
        self.handover = None
        for worker_id, units in handover.assignment.items():
            member = self.members.get(worker_id)
            if member is None or member.session != handover.sessions.get(worker_id):
                self.dirty = True  # gone, or back with a new session: the next plan sees it
                continue
            self.current[worker_id] = dict(units)
            for unit in units:
                self.unassigned.pop(unit, None)
            cleanups = handover.cleanups.get(worker_id, ())
            update = AssignmentUpdate(
                handover.generation, assigned_units(units, handover.configs), (), cleanups
            )
            self._send(worker_id, update)
        log.get().info("rebalance_finished", generation=handover.generation)

    def _unchanged(
        self,
        generation: Generation,
        cleanups: Mapping[str, tuple[Cleanup, ...]],
        configs: ConfigState,
    ) -> bool:
        """True when the plan would record nothing new and tell every member what it was last
        told (the generation aside)."""
        recorded = self.recorded or Generation(0, {})
        if (recorded.departed, recorded.pending, recorded.unassigned) != (
            generation.departed,
            generation.pending,
            generation.unassigned,
        ):
            return False
        return set(generation.members) == set(self.last_sent) and all(
            self.last_sent[m] == (assigned_units(u, configs), cleanups.get(m, ()))
            for m, u in generation.members.items()
        )

    def _send(self, worker_id: str, update: AssignmentUpdate) -> None:
        member = self.members.get(worker_id)
        if member is None:
            return
        if update.revoked:
            self.last_sent.pop(worker_id, None)
        else:
            self.last_sent[worker_id] = (update.units, update.cleanups)
        member.outbox.put_nowait(update)
