"""What the last generations of the group looked like, and what moved in each: the pure part of
``headrace coordinator history``, which reads the assignments topic."""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from typing import Any

from headrace.coordinator.assignmentlog import Generation
from headrace.core.model.structs import WorkUnit


def owners(generation: Generation) -> dict[WorkUnit, str]:
    """Where each unit runs in a generation, or is kept (for a member in its grace period)."""
    out = {u: m for m, units in generation.departed.items() for u in units}
    out.update({u: m for m, units in generation.members.items() for u in units})
    return out


def describe(generation: Generation, previous: Generation | None) -> dict[str, Any]:
    """One generation as JSON: its members' loads, what moved since ``previous``, what it
    revoked, who is away, and the deletions still owed."""
    before = owners(previous) if previous is not None else {}
    after = owners(generation)
    moved = [
        {"unit": str(u), "from": before[u], "to": after[u]}
        for u in sorted(after)
        if u in before and before[u] != after[u]
    ]
    recorded = datetime.datetime.fromtimestamp(generation.recorded_at, tz=datetime.UTC)
    return {
        "generation": generation.number,
        "recorded_at": recorded.isoformat(timespec="milliseconds"),
        "coordinator": generation.coordinator,
        "members": {
            m: {
                "connectors": sum(1 for u in units if u.is_connector),
                "tasks": sum(1 for u in units if not u.is_connector),
            }
            for m, units in sorted(generation.members.items())
        },
        "new": sorted(str(u) for u in after if u not in before),
        "moved": moved,
        "revoked": {
            m: sorted(f"{r.unit}{' (deleted)' if r.deleted else ''}" for r in revoked)
            for m, revoked in sorted(generation.revocations.items())
        },
        "departed": {m: len(units) for m, units in sorted(generation.departed.items())},
        "pending_deletions": [
            {"unit": str(p.unit), "incarnation": p.incarnation, "owner": p.owner}
            for p in generation.pending
        ],
    }


def describe_all(generations: Sequence[Generation]) -> list[dict[str, Any]]:
    """Each generation, oldest first, against the one before it."""
    return [describe(g, generations[i - 1] if i > 0 else None) for i, g in enumerate(generations)]
