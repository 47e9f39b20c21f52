"""The assignor: a pure function from (current assignment, members, desired units) to the next
assignment and the revocations that must happen first.

It is incremental and cooperative in the manner of KIP-415: a unit stays where it runs unless it
must move, so a rebalance never stops work that can stay put. Units of departed members are
handed out again without a revocation (their owner is gone). A unit that is no longer desired is
revoked from its owner, with ``deleted`` set when its connector's config is gone: that is the
deletion marker the worker turns into ``stop(deleted=True)``. Balance is by count: afterwards no
member runs more than one unit more than another, moving as few units as it can.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from headrace.core.structs import Revocation, WorkUnit

Assignment = Mapping[str, frozenset[WorkUnit]]


@dataclass(frozen=True)
class Plan:
    """The next assignment, and what each member must stop before anyone starts it elsewhere."""

    assignment: Assignment
    revocations: Mapping[str, frozenset[Revocation]]

    def moved(self) -> bool:
        return any(self.revocations.values())


def desired_units(task_counts: Mapping[str, int]) -> frozenset[WorkUnit]:
    """Each connector, and each of its live tasks."""
    return frozenset(
        unit
        for name, count in task_counts.items()
        for unit in [WorkUnit.of(name), *(WorkUnit(name, i) for i in range(count))]
    )


def assign(
    current: Assignment,
    members: Iterable[str],
    desired: frozenset[WorkUnit],
    live_connectors: frozenset[str],
) -> Plan:
    """Computes the next assignment; see the module docstring for the rules."""
    member_list = sorted(set(members))
    if not member_list:
        return Plan({}, {})
    kept: dict[str, set[WorkUnit]] = {m: set() for m in member_list}
    revoked: dict[str, set[Revocation]] = {m: set() for m in member_list}
    claimed = _keep_or_revoke(current, desired, live_connectors, kept, revoked)
    for unit in sorted(desired - claimed):
        kept[min(member_list, key=lambda m: (len(kept[m]), m))].add(unit)
    _balance(current, kept, revoked)
    return Plan(
        {m: frozenset(kept[m]) for m in member_list},
        {m: frozenset(r) for m, r in revoked.items() if r},
    )


def _keep_or_revoke(
    current: Assignment,
    desired: frozenset[WorkUnit],
    live_connectors: frozenset[str],
    kept: dict[str, set[WorkUnit]],
    revoked: dict[str, set[Revocation]],
) -> set[WorkUnit]:
    """Leaves each member what it runs and is still desired; returns the units so kept."""
    claimed: set[WorkUnit] = set()
    for member in kept:
        for unit in sorted(current.get(member, frozenset())):
            if unit not in desired or unit in claimed:
                # Gone from the configs, or a duplicate left by a split brain: stop it here.
                gone = unit.connector not in live_connectors
                revoked[member].add(Revocation(unit, deleted=gone))
            else:
                kept[member].add(unit)
                claimed.add(unit)
    return claimed


def _balance(
    current: Assignment, kept: dict[str, set[WorkUnit]], revoked: dict[str, set[Revocation]]
) -> None:
    """Evens out by count, taking from the fullest the units it sorts last (its newest tasks);
    a moved unit its member already ran is revoked from it."""

    def load(m: str) -> tuple[int, str]:
        return len(kept[m]), m

    while True:
        fullest, emptiest = max(kept, key=load), min(kept, key=load)
        if len(kept[fullest]) - len(kept[emptiest]) <= 1:
            return
        unit = max(kept[fullest])
        kept[fullest].remove(unit)
        kept[emptiest].add(unit)
        if unit in current.get(fullest, frozenset()):
            revoked[fullest].add(Revocation(unit, deleted=False))
