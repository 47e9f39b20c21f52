"""What the last generations of the group looked like, and what moved in each: the pure part of
the coordinator's ``History`` call (``headrace coordinator history``, the console)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from headrace.coordinator.assignmentlog import Generation
from headrace.core.model.connectorconfig import requested_version
from headrace.core.model.structs import WorkUnit


@dataclass(frozen=True)
class Load:
    connectors: int
    tasks: int


@dataclass(frozen=True)
class Move:
    unit: WorkUnit
    source: str
    target: str


@dataclass(frozen=True)
class Owed:
    """A deletion stop not yet acknowledged; ``owner`` empty: any worker may run it. The
    plugin its connector's config asked for: what its deletion stop still needs."""

    unit: WorkUnit
    incarnation: str
    owner: str
    connector_class: str = ""
    plugin_version: str = ""


@dataclass(frozen=True)
class GenerationSummary:
    """One generation against the one before it: its members' loads, what is new and what
    moved, what it revoked (True: as deleted), who is away, and the deletions still owed."""

    number: int
    recorded_at: float  # wall-clock seconds
    coordinator: str
    members: Mapping[str, Load]
    new: tuple[WorkUnit, ...]
    moved: tuple[Move, ...]
    revoked: Mapping[str, Mapping[WorkUnit, bool]]
    departed: Mapping[str, int]
    pending: tuple[Owed, ...]


def owners(generation: Generation) -> dict[WorkUnit, str]:
    """Where each unit runs in a generation, or is kept (for a member in its grace period)."""
    out = {u: m for m, units in generation.departed.items() for u in units}
    out.update({u: m for m, units in generation.members.items() for u in units})
    return out


def describe(generation: Generation, previous: Generation | None) -> GenerationSummary:
    """One generation, against ``previous`` (None: the first known)."""
    before = owners(previous) if previous is not None else {}
    after = owners(generation)
    return GenerationSummary(
        number=generation.number,
        recorded_at=generation.recorded_at,
        coordinator=generation.coordinator,
        members={
            m: Load(
                connectors=sum(1 for u in units if u.is_connector),
                tasks=sum(1 for u in units if not u.is_connector),
            )
            for m, units in sorted(generation.members.items())
        },
        new=tuple(sorted(u for u in after if u not in before)),
        moved=tuple(
            Move(u, before[u], after[u])
            for u in sorted(after)
            if u in before and before[u] != after[u]
        ),
        revoked={
            m: {r.unit: r.deleted for r in sorted(revoked, key=lambda r: r.unit)}
            for m, revoked in sorted(generation.revocations.items())
        },
        departed={m: len(units) for m, units in sorted(generation.departed.items())},
        pending=tuple(
            Owed(
                p.unit,
                p.incarnation,
                p.owner,
                p.connector_config.get("connector.class", ""),
                requested_version(p.connector_config) or "",
            )
            for p in generation.pending
        ),
    )


def describe_all(generations: Sequence[Generation]) -> list[GenerationSummary]:
    """Each generation, oldest first, against the one before it."""
    return [describe(g, generations[i - 1] if i > 0 else None) for i, g in enumerate(generations)]
