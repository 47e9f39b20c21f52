"""The worker group: membership, rebalances, and the two-phase hand-over of units.

One asyncio task (:meth:`Group.run`) owns all of the group's state and changes it only in
response to events from its queue: members joining, heartbeating, acknowledging revocations or
leaving; the configs changing; the clock ticking. A rebalance appends the new generation to the
assignments log, then sends revocations, waits until every member that lost units has stopped
them (or is dropped after the session timeout), and only then sends the new assignments, so a
unit never runs in two places.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import structlog

from headrace.coordinator import assignmentlog
from headrace.coordinator.assignor import Assignment, Plan, Unit, assign, desired_units
from headrace.core import log
from headrace.core.configstate import ConfigState
from headrace.v1 import coordinator_pb2, events_pb2

Outbox = asyncio.Queue[coordinator_pb2.CoordinatorMessage | None]


@dataclass(frozen=True)
class Joined:
    worker_id: str
    running: frozenset[Unit]
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
class Tick:
    pass


Event = Joined | Left | Beat | RevocationsDone | ConfigsChanged | Tick


@dataclass
class Member:
    outbox: Outbox
    last_seen: float


@dataclass
class Handover:
    """A rebalance waiting for revocations to be acknowledged."""

    generation: int
    plan: Plan
    waiting: set[str]
    deadline: float


@dataclass
class Group:
    """The coordinator's state; see the module docstring."""

    append: Callable[[assignmentlog.Generation], Awaitable[None]]
    session_timeout: float = 10.0
    generation: int = 0
    configs: ConfigState = field(default_factory=ConfigState)
    members: dict[str, Member] = field(default_factory=dict)
    current: dict[str, frozenset[Unit]] = field(default_factory=dict)
    handover: Handover | None = None
    dirty: bool = False
    last_sent: dict[str, coordinator_pb2.Assignment] = field(default_factory=dict)
    queue: asyncio.Queue[Event] = field(default_factory=asyncio.Queue)
    # After a restart: the members of the last generation, given a session to rejoin before
    # anything is handed out, so that units still running on them are not started twice.
    awaited: set[str] = field(default_factory=set)
    hold_until: float = 0.0

    def resume(self, last: assignmentlog.Generation) -> None:
        """Continues from the last generation in the log."""
        self.generation = last.number
        self.awaited = set(last.plan.assignment)
        self.hold_until = time.monotonic() + self.session_timeout

    def _holding(self) -> bool:
        if self.awaited - set(self.members) and time.monotonic() < self.hold_until:
            return True
        self.awaited = set()
        return False

    def submit(self, event: Event) -> None:
        self.queue.put_nowait(event)

    async def run(self) -> None:
        while True:
            events = [await self.queue.get()]
            while not self.queue.empty():
                events.append(self.queue.get_nowait())
            for event in events:
                self._handle(event)
            if self.handover is not None and not self.handover.waiting:
                await self._finish(self.handover)
            if self.handover is None and self.dirty and not self._holding():
                self.dirty = False
                await self._rebalance()

    def _handle(self, event: Event) -> None:
        now = time.monotonic()
        match event:
            case Joined(worker_id, running, outbox):
                old = self.members.get(worker_id)
                if old is not None and old.outbox is not outbox:
                    old.outbox.put_nowait(None)  # a newer stream of the same worker wins
                self.members[worker_id] = Member(outbox, now)
                self.current[worker_id] = running
                self.last_sent.pop(worker_id, None)
                self.dirty = True
                log.get().info("worker_joined", worker=worker_id, running=len(running))
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
            case Tick():
                for worker_id, member in list(self.members.items()):
                    if now - member.last_seen > self.session_timeout:
                        self._drop(worker_id, "session_timeout")
                if self.handover is not None and now > self.handover.deadline:
                    for worker_id in list(self.handover.waiting):
                        self._drop(worker_id, "revocation_timeout")

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

    async def _rebalance(self) -> None:
        if not self.members:
            return
        counts = {name: len(self.configs.tasks_of(name)) for name in self.configs.connectors}
        plan = assign(
            self.current,
            self.members,
            desired_units(counts),
            frozenset(self.configs.connectors),
        )
        if not plan.moved() and self._messages(plan.assignment) == self._last_sent_units():
            return
        self.generation += 1
        structlog.contextvars.bind_contextvars(generation=self.generation)
        await self.append(assignmentlog.Generation(self.generation, plan))
        log.get().info(
            "rebalance_started",
            generation=self.generation,
            members=len(self.members),
            revocations=sum(len(r) for r in plan.revocations.values()),
        )
        if not plan.moved():
            await self._finish(Handover(self.generation, plan, set(), 0.0))
            return
        for worker_id, revoked in plan.revocations.items():
            keep = self.current.get(worker_id, frozenset()) - {r.unit for r in revoked}
            message = self._assignment(keep)
            message.revoked.extend(
                events_pb2.Revocation(unit=assignmentlog.unit_pb(r.unit), deleted=r.deleted)
                for r in sorted(revoked)
            )
            self.current[worker_id] = keep
            self._send(worker_id, message)
        self.handover = Handover(
            self.generation,
            plan,
            set(plan.revocations),
            time.monotonic() + self.session_timeout,
        )

    async def _finish(self, handover: Handover) -> None:
        self.handover = None
        assignment = {m: u for m, u in handover.plan.assignment.items() if m in self.members}
        for worker_id, units in assignment.items():
            self.current[worker_id] = units
            self._send(worker_id, self._assignment(units, handover.generation))
        log.get().info("rebalance_finished", generation=handover.generation)

    def _assignment(
        self, units: frozenset[Unit], generation: int | None = None
    ) -> coordinator_pb2.Assignment:
        message = coordinator_pb2.Assignment(generation=generation or self.generation)
        for unit in sorted(units):
            name, task = unit
            connector_config = self.configs.connectors.get(name, {})
            tasks = self.configs.tasks_of(name)
            task_config = tasks[task] if 0 <= task < len(tasks) else {}
            message.units.append(
                coordinator_pb2.AssignedUnit(
                    unit=assignmentlog.unit_pb(unit),
                    connector_config=dict(connector_config),
                    task_config=dict(task_config),
                )
            )
        return message

    def _messages(self, assignment: Assignment) -> dict[str, bytes]:
        return {
            m: self._assignment(u, 0).SerializeToString(deterministic=True)
            for m, u in assignment.items()
        }

    def _last_sent_units(self) -> dict[str, bytes]:
        out = {}
        for m, msg in self.last_sent.items():
            copy = coordinator_pb2.Assignment()
            copy.CopyFrom(msg)
            copy.generation = 0
            out[m] = copy.SerializeToString(deterministic=True)
        return out

    def _send(self, worker_id: str, message: coordinator_pb2.Assignment) -> None:
        member = self.members.get(worker_id)
        if member is None:
            return
        if not message.revoked:
            self.last_sent[worker_id] = message
        member.outbox.put_nowait(coordinator_pb2.CoordinatorMessage(assignment=message))
