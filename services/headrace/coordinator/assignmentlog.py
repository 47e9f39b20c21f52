"""The protocol of the assignments topic (``<cluster>-assignments``): one partition, compacted.

| key | value | meaning |
| --- | --- | --- |
| ``generation-<n>`` | ``GenerationRecorded`` | generation n of the group, whole |
| ``generation-<n>`` | tombstone | generation n has left the history |
| ``told-<instance>`` | ``DeletionTold`` | a worker told the unit (``core.storage.told``) |
| ``told-<instance>`` | tombstone | a generation without that deletion pending was recorded |

Each generation is its own record: the live members with what each runs and must stop, the
members in their grace period with the units kept for them, and every pending deletion. The
coordinator appends a generation *before* it tells any worker about it, so what a crash
interrupts is found again on replay. A deletion acknowledged while a hand-over waits has the
last generation written again under its key, without it: what resumes from the log never
delivers an acknowledged deletion again. Only the active coordinator writes generations.

A worker whose plugin returned from ``stop(deleted=True)`` appends a ``told-`` record, besides
acknowledging it over its stream: a leader that resumes reads it as that acknowledgement, even if
the worker never rejoins. The leader tombstones it with the first generation it appends that no
longer has the deletion pending (after it, in the same batch: on any replay, either the record
or that generation is there).

With generation n it tombstones generation n - :data:`HISTORY`, so the topic holds the last
:data:`HISTORY` generations and compaction never removes the latest: a pending deletion, being
in every generation until its plugin has acknowledged it, cannot be compacted away.

:func:`decode` turns a record into an event, :func:`apply` folds it into the
:class:`History`, and :class:`AssignmentLog` is the I/O around them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field, replace

import immutables

from headrace.coordinator.deletions import PendingDeletion
from headrace.core.model import wire
from headrace.core.model.configstate import frozen_config
from headrace.core.model.structs import Revocation, WorkUnit
from headrace.core.storage import told
from headrace.core.storage.told import DeletionTold, ToldForgotten
from headrace.core.storage.topiclog import LogFactory, LogRecord, Record
from headrace.v1 import events_pb2

PREFIX = "generation-"
HISTORY = 50
"""Generations the topic keeps: enough to see what the last rebalances moved."""

Placement = Mapping[WorkUnit, str]
"""The units a member runs or has kept for it, each with its connector's incarnation."""


@dataclass(frozen=True)
class Generation:
    number: int
    members: Mapping[str, Placement]
    revocations: Mapping[str, frozenset[Revocation]] = field(default_factory=dict)
    departed: Mapping[str, Placement] = field(default_factory=dict)
    pending: tuple[PendingDeletion, ...] = ()
    unassigned: Placement = field(default_factory=dict)  # units that ran and have no member
    recorded_at: float = 0.0  # wall-clock seconds
    coordinator: str = ""


@dataclass(frozen=True)
class GenerationRecorded:
    generation: Generation


@dataclass(frozen=True)
class GenerationForgotten:
    number: int


Event = GenerationRecorded | GenerationForgotten | DeletionTold | ToldForgotten


def key(number: int) -> str:
    # Zero-padded, so keys sort as generations do.
    return f"{PREFIX}{number:012d}"


def _member(
    worker: str, units: Placement, revoked: frozenset[Revocation] = frozenset()
) -> events_pb2.MemberUnits:
    return events_pb2.MemberUnits(
        worker_id=worker,
        units=[wire.instance_to_pb((u, units[u])) for u in sorted(units)],
        revoked=[wire.revocation_to_pb(r) for r in sorted(revoked)],
    )


def encode(generation: Generation, told_keys: Collection[str] = ()) -> list[Record]:
    """The records that append ``generation``: itself, the tombstone of the generation that
    leaves the history, and those of the ``told_keys`` whose deletion it no longer has pending."""
    members = sorted(set(generation.members) | set(generation.revocations))
    msg = events_pb2.GenerationRecorded(
        generation=generation.number,
        members=[
            _member(
                m,
                generation.members.get(m, {}),
                generation.revocations.get(m, frozenset()),
            )
            for m in members
        ],
        departed=[_member(m, units) for m, units in sorted(generation.departed.items())],
        pending=[
            events_pb2.PendingDeletion(
                unit=wire.unit_to_pb(p.unit),
                incarnation=p.incarnation,
                connector_config=dict(p.connector_config),
                task_config=dict(p.task_config),
                owner=p.owner,
            )
            for p in sorted(generation.pending, key=lambda p: p.instance)
        ],
        unassigned=[wire.instance_to_pb((u, i)) for u, i in sorted(generation.unassigned.items())],
        recorded_at_ms=int(generation.recorded_at * 1000),
        coordinator=generation.coordinator,
    )
    records: list[Record] = [(key(generation.number), msg.SerializeToString())]
    if generation.number > HISTORY:
        records.append((key(generation.number - HISTORY), None))
    owed = {told.key(p.instance) for p in generation.pending}
    records += [(k, None) for k in sorted(told_keys) if k not in owed]
    return records


def _placement(member: events_pb2.MemberUnits) -> dict[WorkUnit, str]:
    return dict(wire.instance_from_pb(u) for u in member.units)


def decode(record_key: str, value: bytes | None) -> Event | None:
    """The event a record carries; None for a key this protocol does not know."""
    if not record_key.startswith(PREFIX):
        return told.decode(record_key, value)
    number = int(record_key.removeprefix(PREFIX))
    if value is None:
        return GenerationForgotten(number)
    msg = events_pb2.GenerationRecorded.FromString(value)
    return GenerationRecorded(
        Generation(
            number=msg.generation,
            members={m.worker_id: _placement(m) for m in msg.members},
            revocations={
                m.worker_id: frozenset(wire.revocation_from_pb(r) for r in m.revoked)
                for m in msg.members
                if m.revoked
            },
            departed={m.worker_id: _placement(m) for m in msg.departed},
            pending=tuple(
                PendingDeletion(
                    wire.unit_from_pb(p.unit),
                    p.incarnation,
                    frozen_config(p.connector_config),
                    frozen_config(p.task_config),
                    p.owner,
                )
                for p in msg.pending
            ),
            unassigned=dict(wire.instance_from_pb(u) for u in msg.unassigned),
            recorded_at=msg.recorded_at_ms / 1000,
            coordinator=msg.coordinator,
        )
    )


@dataclass(frozen=True)
class History:
    """The generations the topic holds, by number; the last is what a restart resumes from.
    ``told`` is the deletions workers told whose records are not tombstoned yet, by key."""

    generations: Mapping[int, Generation] = field(default_factory=dict)
    # Persistent: a replay of n deletions told folds in O(n log n), not O(n^2).
    told: immutables.Map[str, DeletionTold] = field(default_factory=immutables.Map)

    @property
    def last(self) -> Generation | None:
        return self.generations[max(self.generations)] if self.generations else None

    def latest(self, count: int) -> list[Generation]:
        """The last ``count`` generations, oldest first."""
        return [self.generations[n] for n in sorted(self.generations)[-count:]]


def apply(state: History, event: Event) -> History:
    """Folds one event into the history."""
    match event:
        case GenerationRecorded(generation):
            return replace(state, generations={**state.generations, generation.number: generation})
        case GenerationForgotten(number):
            generations = dict(state.generations)
            generations.pop(number, None)
            return replace(state, generations=generations)
        case DeletionTold(instance):
            return replace(state, told=state.told.set(told.key(instance), event))
        case ToldForgotten(record_key):
            if record_key not in state.told:
                return state
            return replace(state, told=state.told.delete(record_key))


class AssignmentLog:
    """The assignments topic as a store: replayed once at start, then appended to.

    ``logs`` makes the log with this store's record handler: a ``TopicLog`` on the assignments
    topic (:func:`headrace.core.storage.topiclog.kafka_logs`), or a ``MemoryLog`` (``memory_logs``).
    """

    def __init__(self, logs: LogFactory) -> None:
        self.history = History()
        self._log = logs(self._on_record)
        self.on_told: Callable[[DeletionTold], None] = lambda _: None
        """Called with each deletion told read from when it is set (the leader sets it once it
        has resumed from the replay, whose deletions told are in :attr:`History.told`)."""

    @property
    def last(self) -> Generation | None:
        return self.history.last

    def _on_record(self, record: LogRecord) -> None:
        event = decode(record.key, record.value)
        if event is not None:
            self.history = apply(self.history, event)
        if isinstance(event, DeletionTold):
            self.on_told(event)

    async def start(self, *, writer: bool = True, follow: bool = True) -> None:
        """Replays the topic, so that :attr:`last` is the generation to resume from."""
        await self._log.start(writer=writer, follow=follow)

    @property
    def reader(self) -> asyncio.Task[None] | None:
        return self._log.reader

    async def close(self) -> None:
        await self._log.close()

    async def append(self, generation: Generation) -> None:
        await self._log.append_many(encode(generation, self.history.told))
