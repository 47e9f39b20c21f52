"""The protocol of the assignments topic (``<cluster>-assignments``): one partition, compacted.

Every record has the key ``generation`` and holds ``AssignmentGenerated``: the generation's
number, every member's units in it and the revocations it began with, deletion markers included.
The coordinator appends a generation *before* it tells any worker about it, so what a crash
interrupts is found again on replay. Only the coordinator writes. Compaction keeps the latest
record, which is all a restarted coordinator needs to resume from (no retention can expire it).
"""

from __future__ import annotations

from dataclasses import dataclass

from headrace.coordinator.assignor import Plan, Revoked, Unit
from headrace.v1 import events_pb2

KEY = "generation"


@dataclass(frozen=True)
class Generation:
    number: int
    plan: Plan


def unit_pb(unit: Unit) -> events_pb2.WorkUnit:
    return events_pb2.WorkUnit(connector=unit[0], task=unit[1])


def unit_of(msg: events_pb2.WorkUnit) -> Unit:
    return msg.connector, msg.task


def encode(generation: Generation) -> tuple[str, bytes]:
    plan = generation.plan
    members = sorted(set(plan.assignment) | set(plan.revocations))
    msg = events_pb2.AssignmentGenerated(
        generation=generation.number,
        workers=[
            events_pb2.WorkerAssignment(
                worker_id=m,
                units=[unit_pb(u) for u in sorted(plan.assignment.get(m, ()))],
                revoked=[
                    events_pb2.Revocation(unit=unit_pb(r.unit), deleted=r.deleted)
                    for r in sorted(plan.revocations.get(m, ()))
                ],
            )
            for m in members
        ],
    )
    return KEY, msg.SerializeToString()


def decode(value: bytes) -> Generation:
    msg = events_pb2.AssignmentGenerated.FromString(value)
    return Generation(
        msg.generation,
        Plan(
            {w.worker_id: frozenset(unit_of(u) for u in w.units) for w in msg.workers},
            {
                w.worker_id: frozenset(Revoked(unit_of(r.unit), r.deleted) for r in w.revoked)
                for w in msg.workers
                if w.revoked
            },
        ),
    )
