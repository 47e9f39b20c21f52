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

Unit = tuple[str, int]  # (connector, task); task -1 is the connector itself
Assignment = Mapping[str, frozenset[Unit]]


@dataclass(frozen=True, order=True)
class Revoked:
    unit: Unit
    deleted: bool


@dataclass(frozen=True)
class Plan:
    """The next assignment, and what each member must stop before anyone starts it elsewhere."""

    assignment: Assignment
    revocations: Mapping[str, frozenset[Revoked]]

    def moved(self) -> bool:
        return any(self.revocations.values())


def desired_units(task_counts: Mapping[str, int]) -> frozenset[Unit]:
    """Each connector, and each of its live tasks."""
    return frozenset(
        unit
        for name, count in task_counts.items()
        for unit in [(name, -1), *((name, i) for i in range(count))]
    )


def assign(
    current: Assignment,
    members: Iterable[str],
    desired: frozenset[Unit],
    live_connectors: frozenset[str],
) -> Plan:
    """Computes the next assignment; see the module docstring for the rules."""
    member_list = sorted(set(members))
    if not member_list:
        return Plan({}, {})
    revoked: dict[str, set[Revoked]] = {m: set() for m in member_list}
    kept: dict[str, set[Unit]] = {m: set() for m in member_list}
    claimed: set[Unit] = set()
    for member in member_list:
        for unit in sorted(current.get(member, frozenset())):
            if unit not in desired or unit in claimed:
                # Gone from the configs, or a duplicate left by a split brain: stop it here.
                gone = unit[0] not in live_connectors
                revoked[member].add(Revoked(unit, deleted=gone))
            else:
                kept[member].add(unit)
                claimed.add(unit)

    def load(m: str) -> tuple[int, str]:
        return len(kept[m]), m

    for unit in sorted(desired - claimed):
        kept[min(member_list, key=load)].add(unit)

    # Even out by count, taking from the fullest the units it sorts last (its newest tasks).
    while True:
        fullest, emptiest = max(member_list, key=load), min(member_list, key=load)
        if len(kept[fullest]) - len(kept[emptiest]) <= 1:
            break
        unit = max(kept[fullest])
        kept[fullest].remove(unit)
        kept[emptiest].add(unit)
        if unit in current.get(fullest, frozenset()):
            revoked[fullest].add(Revoked(unit, deleted=False))

    return Plan(
        {m: frozenset(kept[m]) for m in member_list},
        {m: frozenset(r) for m, r in revoked.items() if r},
    )
