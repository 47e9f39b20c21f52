"""The protocol of the assignments topic (``<cluster>-assignments``): one partition, compacted.

Every record has the key ``generation`` and holds ``AssignmentGenerated``: the generation's
number, every member's units in it and the revocations it began with, deletion markers included.
The coordinator appends a generation *before* it tells any worker about it, so what a crash
interrupts is found again on replay. Only the coordinator writes. Compaction keeps the latest
record, which is all a restarted coordinator needs to resume from (no retention can expire it).

:func:`decode` turns a record into a :class:`GenerationRecorded` event, :func:`apply` folds it
into the state (the last :class:`Generation`, or None before the first one), and
:class:`AssignmentLog` is the I/O around them.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from headrace.coordinator.assignor import Plan
from headrace.core import wire
from headrace.core.topiclog import LogFactory, LogRecord
from headrace.v1 import events_pb2

KEY = "generation"


@dataclass(frozen=True)
class Generation:
    number: int
    plan: Plan


@dataclass(frozen=True)
class GenerationRecorded:
    """A record of the topic: the coordinator planned this generation."""

    generation: Generation


def encode(generation: Generation) -> tuple[str, bytes]:
    plan = generation.plan
    members = sorted(set(plan.assignment) | set(plan.revocations))
    msg = events_pb2.AssignmentGenerated(
        generation=generation.number,
        workers=[
            events_pb2.WorkerAssignment(
                worker_id=m,
                units=[wire.unit_to_pb(u) for u in sorted(plan.assignment.get(m, ()))],
                revoked=[wire.revocation_to_pb(r) for r in sorted(plan.revocations.get(m, ()))],
            )
            for m in members
        ],
    )
    return KEY, msg.SerializeToString()


def decode(key: str, value: bytes | None) -> GenerationRecorded | None:
    """The event a record carries; None for a tombstone, which records nothing."""
    if value is None:
        return None
    msg = events_pb2.AssignmentGenerated.FromString(value)
    plan = Plan(
        {w.worker_id: frozenset(wire.unit_from_pb(u) for u in w.units) for w in msg.workers},
        {
            w.worker_id: frozenset(wire.revocation_from_pb(r) for r in w.revoked)
            for w in msg.workers
            if w.revoked
        },
    )
    return GenerationRecorded(Generation(msg.generation, plan))


def apply(state: Generation | None, event: GenerationRecorded) -> Generation | None:
    """Folds one event into the state: the latest generation is all a restart resumes from."""
    return event.generation


class AssignmentLog:
    """The assignments topic as a store: replayed once at start, then appended to.

    ``logs`` makes the log with this store's record handler: a ``TopicLog`` on the assignments
    topic (:func:`headrace.core.topiclog.kafka_logs`), or a ``MemoryLog`` (``memory_logs``).
    """

    def __init__(self, logs: LogFactory) -> None:
        self.last: Generation | None = None
        self._log = logs(self._on_record)

    def _on_record(self, record: LogRecord) -> None:
        event = decode(record.key, record.value)
        if event is not None:
            self.last = apply(self.last, event)

    async def start(self) -> None:
        """Replays the topic, so that :attr:`last` is the generation to resume from."""
        await self._log.start()

    @property
    def reader(self) -> asyncio.Task[None] | None:
        return self._log.reader

    async def close(self) -> None:
        await self._log.close()

    async def append(self, generation: Generation) -> None:
        await self._log.append(*encode(generation))
