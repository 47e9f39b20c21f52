"""The worker group: membership, rebalances, and the two-phase hand-over of units.

One asyncio task (:meth:`Group.run`) owns all of the group's state and changes it only in
response to events from its queue: members joining, heartbeating, acknowledging revocations or
leaving; the configs changing; the clock ticking. A rebalance appends the new generation to the
assignments log, then sends revocations, waits until every member that lost units has stopped
them, and only then sends the new assignments, so a unit never runs in two places.

A member is dropped only when its heartbeats stop (the session timeout) or its stream ends: a
live worker that is slow to stop its units is waited for, never handed around behind its back.
A rebalance is computed against one snapshot of the configs, and its hand-over finishes with
that same snapshot, so a config that changes meanwhile (a deletion, say) is dealt with by the
next rebalance, with its own revocations, rather than slipped into this one.

The group speaks the shared vocabulary only: each member's outbox takes ``AssignmentUpdate``s,
which the gRPC edge (``service``) turns into protobuf.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from types import MappingProxyType

import structlog

from headrace.coordinator import assignmentlog
from headrace.coordinator.assignor import Assignment, Plan, assign, desired_units
from headrace.core import log
from headrace.core.configstate import Config, ConfigState
from headrace.core.structs import AssignedUnit, AssignmentUpdate, Revocation, WorkUnit

Outbox = asyncio.Queue[AssignmentUpdate | None]
"""What the group sends one member's stream; None ends the stream."""

NO_CONFIG: Config = MappingProxyType({})


@dataclass(frozen=True)
class Joined:
    worker_id: str
    running: frozenset[WorkUnit]
    outbox: Outbox


@dataclass(frozen=True)
class Left:
    worker_id: str
    outbox: Outbox


@dataclass(frozen=True)
class Beat:
    worker_id: str


@dataclass(frozen=True)
class RevocationsDone:
    worker_id: str
    generation: int


@dataclass(frozen=True)
class ConfigsChanged:
    state: ConfigState


@dataclass(frozen=True)
class ConnectorDeleted:
    """A connector's config tombstone, seen as it was written (not found again on replay)."""

    name: str


@dataclass(frozen=True)
class Tick:
    pass


Event = Joined | Left | Beat | RevocationsDone | ConfigsChanged | ConnectorDeleted | Tick


@dataclass
class Member:
    outbox: Outbox
    last_seen: float
    session: int  # which join of this worker id this is


@dataclass
class Handover:
    """A rebalance waiting for revocations to be acknowledged."""

    generation: int
    plan: Plan
    configs: ConfigState
    sessions: dict[str, int]  # each member's session when the plan was made
    waiting: set[str]


def assigned_units(units: frozenset[WorkUnit], configs: ConfigState) -> tuple[AssignedUnit, ...]:
    """What one member runs, with the configs to run it with, in unit order."""
    return tuple(_assigned(unit, configs) for unit in sorted(units))


def _assigned(unit: WorkUnit, configs: ConfigState) -> AssignedUnit:
    tasks = configs.tasks_of(unit.connector)
    return AssignedUnit(
        unit,
        configs.connectors.get(unit.connector, NO_CONFIG),
        tasks[unit.task] if 0 <= unit.task < len(tasks) else NO_CONFIG,
    )


def revocation_update(
    keep: frozenset[WorkUnit],
    revoked: frozenset[Revocation],
    generation: int,
    configs: ConfigState,
) -> AssignmentUpdate:
    """What a member must stop first, with what it keeps meanwhile."""
    return AssignmentUpdate(generation, assigned_units(keep, configs), tuple(sorted(revoked)))


@dataclass
class Group:
    """The coordinator's state; see the module docstring."""

    append: Callable[[assignmentlog.Generation], Awaitable[None]]
    session_timeout: float = 10.0
    # Where "now" comes from, for session timeouts and the hold after a restart; tests pass
    # a clock they move by hand.
    clock: Callable[[], float] = time.monotonic
    generation: int = 0
    configs: ConfigState = field(default_factory=ConfigState)
    members: dict[str, Member] = field(default_factory=dict)
    current: dict[str, frozenset[WorkUnit]] = field(default_factory=dict)
    handover: Handover | None = None
    dirty: bool = False
    # What each member was last told to run (a revocation forgets it): a plan that would tell
    # every member the same again is not sent, and needs no new generation.
    last_sent: dict[str, tuple[AssignedUnit, ...]] = field(default_factory=dict)
    queue: asyncio.Queue[Event] = field(default_factory=asyncio.Queue)
    # After a restart: the members of the last generation, given a session to rejoin before
    # anything is handed out, so that units still running on them are not started twice.
    awaited: set[str] = field(default_factory=set)
    hold_until: float = 0.0
    # Connectors deleted since the last plan. One that is back already (deleted and created
    # again under its name) still has its old units stopped as deleted before the new ones run.
    tombstoned: set[str] = field(default_factory=set)
    _sessions: itertools.count[int] = field(default_factory=itertools.count)

    def resume(self, last: assignmentlog.Generation) -> None:
        """Continues from the last generation in the log."""
        self.generation = last.number
        self.awaited = set(last.plan.assignment)
        self.hold_until = self.clock() + self.session_timeout

    def _holding(self) -> bool:
        if self.awaited - set(self.members) and self.clock() < self.hold_until:
            return True
        self.awaited = set()
        return False

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
        if self.handover is None and self.dirty and not self._holding():
            self.dirty = False
            await self._rebalance()
            if self.handover is not None and not self.handover.waiting:
                self._finish(self.handover)  # nothing to revoke: hand out at once

    def _handle(self, event: Event) -> None:
        now = self.clock()
        match event:
            case Joined(worker_id, running, outbox):
                self._join(worker_id, running, outbox, now)
            case Left(worker_id, outbox):
                member = self.members.get(worker_id)
                if member is not None and member.outbox is outbox:
                    self._drop(worker_id, "left")
            case Beat(worker_id):
                if worker_id in self.members:
                    self.members[worker_id].last_seen = now
            case RevocationsDone(worker_id, generation):
                if self.handover is not None and self.handover.generation == generation:
                    self.handover.waiting.discard(worker_id)
            case ConfigsChanged(state):
                self.configs = state
                self.dirty = True
            case ConnectorDeleted(name):
                self.tombstoned.add(name)
                self.dirty = True
            case Tick():
                for worker_id, member in list(self.members.items()):
                    if now - member.last_seen > self.session_timeout:
                        self._drop(worker_id, "session_timeout")

    def _join(
        self, worker_id: str, running: frozenset[WorkUnit], outbox: Outbox, now: float
    ) -> None:
        old = self.members.get(worker_id)
        if old is not None and old.outbox is not outbox:
            old.outbox.put_nowait(None)  # a newer stream of the same worker wins
        self.members[worker_id] = Member(outbox, now, next(self._sessions))
        self.current[worker_id] = running
        self.last_sent.pop(worker_id, None)
        self.dirty = True
        log.get().info("worker_joined", worker=worker_id, running=len(running))
        if self.handover is not None and worker_id in self.handover.waiting:
            self._revoke_again(self.handover, worker_id, running)

    def _revoke_again(
        self, handover: Handover, worker_id: str, running: frozenset[WorkUnit]
    ) -> None:
        """A member's stream broke before it acknowledged: ask again for what it still runs."""
        revoked = frozenset(
            r for r in handover.plan.revocations.get(worker_id, ()) if r.unit in running
        )
        if not revoked:
            handover.waiting.discard(worker_id)
            return
        keep = running - {r.unit for r in revoked}
        self.current[worker_id] = keep
        handover.sessions[worker_id] = self.members[worker_id].session
        self._send(
            worker_id, revocation_update(keep, revoked, handover.generation, handover.configs)
        )

    def _drop(self, worker_id: str, reason: str) -> None:
        member = self.members.pop(worker_id, None)
        if member is not None:
            member.outbox.put_nowait(None)
        self.current.pop(worker_id, None)
        self.last_sent.pop(worker_id, None)
        if self.handover is not None:
            self.handover.waiting.discard(worker_id)
        self.dirty = True
        log.get().info("worker_dropped", worker=worker_id, reason=reason)

    def _plan(self) -> tuple[Plan, ConfigState]:
        """The next plan, against the configs as they are now."""
        configs = self.configs
        recreated = self.tombstoned & set(configs.connectors)
        self.tombstoned.clear()
        if recreated:
            self.dirty = True  # the new incarnations are handed out by the next plan
        live = frozenset(configs.connectors) - recreated
        counts = {name: len(configs.tasks_of(name)) for name in live}
        return assign(self.current, self.members, desired_units(counts), live), configs

    async def _rebalance(self) -> None:
        if not self.members:
            return
        plan, configs = self._plan()
        if not plan.moved() and self._unchanged(plan.assignment, configs):
            return
        self.generation += 1
        structlog.contextvars.bind_contextvars(generation=self.generation)
        # Written before anyone hears of it: a revocation with the deletion marker that a crash
        # interrupts is found again on replay.
        await self.append(assignmentlog.Generation(self.generation, plan))
        log.get().info(
            "rebalance_started",
            members=len(self.members),
            revocations=sum(len(r) for r in plan.revocations.values()),
        )
        handover = Handover(
            self.generation,
            plan,
            configs,
            {m: member.session for m, member in self.members.items()},
            set(plan.revocations),
        )
        for worker_id, revoked in plan.revocations.items():
            keep = self.current.get(worker_id, frozenset()) - {r.unit for r in revoked}
            self.current[worker_id] = keep
            self._send(worker_id, revocation_update(keep, revoked, self.generation, configs))
        self.handover = handover

    def _finish(self, handover: Handover) -> None:
        self.handover = None
        for worker_id, units in handover.plan.assignment.items():
            member = self.members.get(worker_id)
            if member is None or member.session != handover.sessions.get(worker_id):
                self.dirty = True  # gone, or back with a new session: the next plan sees it
                continue
            self.current[worker_id] = units
            update = AssignmentUpdate(handover.generation, assigned_units(units, handover.configs))
            self._send(worker_id, update)
        log.get().info("rebalance_finished", generation=handover.generation)

    def _unchanged(self, assignment: Assignment, configs: ConfigState) -> bool:
        """True when every member already runs exactly this, with these configs (the
        generation aside)."""
        return set(assignment) == set(self.last_sent) and all(
            self.last_sent[m] == assigned_units(u, configs) for m, u in assignment.items()
        )

    def _send(self, worker_id: str, update: AssignmentUpdate) -> None:
        member = self.members.get(worker_id)
        if member is None:
            return
        if update.revoked:
            self.last_sent.pop(worker_id, None)
        else:
            self.last_sent[worker_id] = update.units
        member.outbox.put_nowait(update)
