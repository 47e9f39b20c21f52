"""The next generation of the group, as a pure function of the group's state: what the group
records, sends and keeps after a rebalance. ``Group._rebalance`` takes the plan, replaces its
state with the plan's, appends the generation and sends the revocations; nothing here does I/O.

A plan takes, in order:

1. what each live member runs (with the units kept for one that came back in its grace period),
   the units kept for members in their grace period, and those no member has;
2. a pending deletion for each of those units whose connector incarnation was deleted, which
   leaves every placement (``deletions.found``);
3. the assignor's placement of the units the configs want, connectors whose deletion is still
   owed aside (``assignor.assign``);
4. where each pending deletion is delivered (``deletions.deliver``): with a revocation that
   carries the deletion marker, or as a cleanup;
5. the revocations each live member must acknowledge before anyone else starts what it gives up.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from headrace.coordinator import deletions
from headrace.coordinator.assignmentlog import Generation, Placement
from headrace.coordinator.assignor import assign, desired_units
from headrace.coordinator.deletions import PendingDeletion, Retired
from headrace.core.model.configstate import ConfigState
from headrace.core.model.structs import Cleanup, Instance, Revocation, WorkUnit


@dataclass(frozen=True)
class GroupState:
    """What a plan is made from: the group's state when the rebalance begins."""

    number: int  # the last generation recorded
    configs: ConfigState
    live: Sequence[str]  # live members, longest-standing first
    current: Mapping[str, Placement]  # what each live member runs
    returning: Mapping[str, Placement]  # kept for a member back in its grace period
    departed: Mapping[str, Placement]  # kept for each member in its grace period
    unassigned: Placement  # units that ran and have no member
    pending: Mapping[Instance, PendingDeletion]
    retired: Retired


@dataclass(frozen=True)
class NextGeneration:
    """The plan: the generation to record, the cleanups to send with it, and the group's state
    afterwards (deleted units gone from what is kept, deletions owed, retired configs still
    needed)."""

    generation: Generation
    cleanups: Mapping[str, tuple[Cleanup, ...]]
    departed: Mapping[str, Placement]
    unassigned: Placement
    pending: Mapping[Instance, PendingDeletion]
    retired: Retired


def _live(units: Mapping[WorkUnit, str], configs: ConfigState) -> dict[WorkUnit, str]:
    """The units whose connector incarnation is not deleted."""
    return {u: i for u, i in units.items() if not deletions.is_deleted(u, i, configs)}


def plan(state: GroupState, recorded_at: float, coordinator: str) -> NextGeneration:
    """The next generation; see the module docstring."""
    configs = state.configs
    placed = {m: {**state.returning.get(m, {}), **state.current.get(m, {})} for m in state.live}
    everywhere = [("", state.unassigned), *state.departed.items(), *placed.items()]
    pending = dict(state.pending)
    for deletion in deletions.found(everywhere, configs, state.retired):
        pending.setdefault(deletion.instance, deletion)
    placed = {m: _live(units, configs) for m, units in placed.items()}
    kept = {m: _live(units, configs) for m, units in state.departed.items()}
    unassigned = _live(state.unassigned, configs)
    blocked = deletions.blocked(pending.values())
    counts = {n: len(configs.tasks_of(n)) for n in configs.connectors if n not in blocked}
    assigned = assign(
        {m: frozenset(placed[m]) for m in state.live},
        state.live,
        desired_units(counts),
        held={m: frozenset(units) for m, units in kept.items()},
    )
    incarnations = configs.incarnations
    assignment = {
        m: {u: incarnations.get(u.connector, "") for u in units}
        for m, units in assigned.assignment.items()
    }
    delivered = deletions.deliver(
        pending.values(),
        {m: state.current.get(m, {}) for m in state.live},
        kept,
        {m: len(units) for m, units in assignment.items()},
    )
    pending = {p.instance: p for p in delivered.pending}
    revocations = {
        m: frozenset(
            Revocation(r.unit, incarnation=state.current[m].get(r.unit, ""))
            for r in assigned.revocations.get(m, ())
            if r.unit in state.current.get(m, {})
        )
        | delivered.revocations.get(m, frozenset())
        for m in state.live
    }
    if state.live:
        unassigned = {}  # placed, or no longer wanted
    needed = {(p.unit.connector, p.incarnation) for p in pending.values()}
    generation = Generation(
        state.number + 1,
        assignment,
        {m: r for m, r in revocations.items() if r},
        kept,
        tuple(sorted(pending.values(), key=lambda p: p.instance)),
        unassigned,
        recorded_at,
        coordinator,
    )
    return NextGeneration(
        generation,
        delivered.cleanups,
        kept,
        unassigned,
        pending,
        {k: v for k, v in state.retired.items() if k in needed},
    )
