"""The protocol of the assignments topic (``<cluster>-assignments``): one partition, compacted.

| key | value | meaning |
| --- | --- | --- |
| ``generation-<n>`` | ``GenerationRecorded`` | generation n of the group, whole |
| ``generation-<n>`` | tombstone | generation n has left the history |

Each generation is its own record: the live members with what each runs and must stop, the
members in their grace period with the units kept for them, and every pending deletion. The
coordinator appends a generation *before* it tells any worker about it, so what a crash
interrupts is found again on replay. A deletion acknowledged while a hand-over waits has the
last generation written again under its key, without it: what resumes from the log never
delivers an acknowledged deletion again. Only the active coordinator writes.

With generation n it tombstones generation n - :data:`HISTORY`, so the topic holds the last
:data:`HISTORY` generations and compaction never removes the latest: a pending deletion, being
in every generation until its plugin has acknowledged it, cannot be compacted away.

:func:`decode` turns a record into an event, :func:`apply` folds it into the
:class:`History`, and :class:`AssignmentLog` is the I/O around them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field

from headrace.coordinator.deletions import PendingDeletion
from headrace.core.model import wire
from headrace.core.model.configstate import frozen_config
from headrace.core.model.structs import Revocation, WorkUnit
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


Event = GenerationRecorded | GenerationForgotten


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


def encode(generation: Generation) -> list[Record]:
    """The records that append ``generation``: itself, and the tombstone of the generation that
    leaves the history."""
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
    return records


def _placement(member: events_pb2.MemberUnits) -> dict[WorkUnit, str]:
    return dict(wire.instance_from_pb(u) for u in member.units)


def decode(record_key: str, value: bytes | None) -> Event | None:
    """The event a record carries; None for a key this protocol does not know."""
    if not record_key.startswith(PREFIX):
        return None
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
    """The generations the topic holds, by number; the last is what a restart resumes from."""

    generations: Mapping[int, Generation] = field(default_factory=dict)

    @property
    def last(self) -> Generation | None:
        return self.generations[max(self.generations)] if self.generations else None

    def latest(self, count: int) -> list[Generation]:
        """The last ``count`` generations, oldest first."""
        return [self.generations[n] for n in sorted(self.generations)[-count:]]


def apply(state: History, event: Event) -> History:
    """Folds one event into the history."""
    generations = dict(state.generations)
    match event:
        case GenerationRecorded(generation):
            generations[generation.number] = generation
        case GenerationForgotten(number):
            generations.pop(number, None)
    return History(generations)


class AssignmentLog:
    """The assignments topic as a store: replayed once at start, then appended to.

    ``logs`` makes the log with this store's record handler: a ``TopicLog`` on the assignments
    topic (:func:`headrace.core.storage.topiclog.kafka_logs`), or a ``MemoryLog`` (``memory_logs``).
    """

    def __init__(self, logs: LogFactory) -> None:
        self.history = History()
        self._log = logs(self._on_record)

    @property
    def last(self) -> Generation | None:
        return self.history.last

    def _on_record(self, record: LogRecord) -> None:
        event = decode(record.key, record.value)
        if event is not None:
            self.history = apply(self.history, event)

    async def start(self, *, writer: bool = True, follow: bool = True) -> None:
        """Replays the topic, so that :attr:`last` is the generation to resume from."""
        await self._log.start(writer=writer, follow=follow)

    @property
    def reader(self) -> asyncio.Task[None] | None:
        return self._log.reader

    async def close(self) -> None:
        await self._log.close()

    async def append(self, generation: Generation) -> None:
        await self._log.append_many(encode(generation))
