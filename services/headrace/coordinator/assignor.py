"""The assignor: a pure function from what runs where to what should run where next.

Its inputs are what each live member runs now, the members in their grace period with the units
kept for them, and the units that should run. Its output is the next assignment and what each
live member must stop before anyone else starts it. It is incremental and cooperative, in the
manner of KIP-415:

- A unit stays where it runs unless balance needs it elsewhere, so a rebalance stops nothing
  that could stay put.
- The units of a member in its grace period are kept for it, not handed out: a worker that comes
  back in time finds its own work waiting, and nothing is stopped anywhere else. Such a unit is
  not started anywhere else even when it is no longer wanted there, since it may still run.
- Connectors and tasks are balanced separately: afterwards no two live members differ by more
  than one in connectors, nor by more than one in tasks. Balance moves as few units as it can,
  and it picks the units to move, and the members to take them, so that each connector's tasks
  spread across the members.
- Each connector's tasks spread as far as those fewest moves allow, so that losing one worker
  stops only a share of a pipeline: units leaving a member alternate connectors (the ones it
  holds most of beyond a fair share first, and those others are not giving up), the members
  keeping one more than the rest are, among equally loaded ones, the least bunched, and each
  unit goes to a member holding the fewest of its connector's. Nothing moves for spreading
  alone: a move the counts do not need would be undone when a rebalance comes before the
  hand-over ends, and units would go back and forth.
- A unit that no longer runs anywhere (new, or its member's grace period is over) is placed
  without a revocation. A unit a live member must give up is revoked from it, and the hand-over
  waits until the member has stopped it.

Deletion is not decided here: the group takes a deleted connector's units out of ``current``
first and revokes them with the deletion marker itself (see ``deletions``). Every revocation
this function makes is a plain stop.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from headrace.core.model.structs import Revocation, WorkUnit

Assignment = Mapping[str, frozenset[WorkUnit]]


@dataclass(frozen=True)
class Plan:
    """The next assignment of the live members, the units kept for members in their grace
    period, and what each live member must stop before anyone starts it elsewhere."""

    assignment: Assignment
    revocations: Mapping[str, frozenset[Revocation]]
    reserved: Assignment = field(default_factory=dict)

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
    held: Assignment | None = None,
) -> Plan:
    """Computes the next assignment; see the module docstring for the rules.

    ``current`` is what each member runs (members not in ``members`` are ignored: their units are
    placed again, unless ``held`` keeps them); ``held`` maps each member in its grace period to
    the units kept for it. When two members run one unit, the one earlier in ``members`` keeps
    it.
    """
    live = list(dict.fromkeys(members))
    held = held or {}
    kept: dict[str, set[WorkUnit]] = {m: set() for m in live}
    revoked: dict[str, set[WorkUnit]] = {m: set() for m in live}
    claimed: set[WorkUnit] = set()
    for member in live:
        for unit in sorted(current.get(member, frozenset())):
            if unit in desired and unit not in claimed:
                kept[member].add(unit)
                claimed.add(unit)
            else:
                # No longer wanted, or a second copy (a member that came back still running
                # what had moved on): stop it here.
                revoked[member].add(unit)
    held = {m: units for m, units in held.items() if m not in kept}
    reserved = {
        m: frozenset(u for u in units if u in desired and u not in claimed)
        for m, units in held.items()
    }
    # A held unit may still run on its member, wanted or not: nobody else may start it.
    claimed.update(*held.values())
    if live:
        unplaced = sorted(desired - claimed)
        for kind in (True, False):  # connectors, then tasks
            _balance(kept, revoked, [u for u in unplaced if u.is_connector == kind], kind)
    return Plan(
        {m: frozenset(units) for m, units in kept.items()},
        {m: frozenset(Revocation(u) for u in units) for m, units in revoked.items() if units},
        {m: units for m, units in reserved.items() if units},
    )


def _balance(
    kept: dict[str, set[WorkUnit]],
    revoked: dict[str, set[WorkUnit]],
    unplaced: list[WorkUnit],
    connectors: bool,
) -> None:
    """Places ``unplaced`` (all of one kind) and evens that kind out across the members.

    The members that end with one more than the rest are those that hold the most already
    (the least bunched among equals), so the fewest units move; a member over its share gives
    units up one at a time (``_give_up``); which of the members at the share take the one-more
    slots left is decided as units need them; and each unit goes to the member with room that
    holds the fewest of its connector's units.
    """
    load = {m: sum(1 for u in units if u.is_connector == connectors) for m, units in kept.items()}
    spread = {
        m: Counter(u.connector for u in units if u.is_connector == connectors)
        for m, units in kept.items()
    }
    share, extra = divmod(sum(load.values()) + len(unplaced), len(kept))
    totals = Counter(u.connector for u in unplaced)
    for counts in spread.values():
        totals.update(counts)
    fair = {name: -(-total // len(kept)) for name, total in totals.items()}
    floors = {name: total // len(kept) for name, total in totals.items()}
    # Among equally loaded members, the least bunched keeps the one-more slot.
    by_load = sorted(kept, key=lambda m: (-load[m], max(spread[m].values(), default=0), m))
    target = {m: share + (1 if i < extra else 0) for i, m in enumerate(by_load)}
    pool = list(unplaced)
    for member in by_load:
        surplus = load[member] - target[member]
        if surplus <= 0:
            continue
        _give_up(
            kept[member], revoked[member], spread[member], surplus, fair, floors, pool, connectors
        )
        load[member] = target[member]
    # Which of the members at the share take the one-more slots still free is left open until
    # a unit needs one: a member that holds none of its connector's. The connectors with the
    # most units to place go first, while every member still has room to take one of each.
    free_extra = extra - sum(1 for m in kept if load[m] == share + 1)
    below = {m for m in kept if load[m] < share}
    at_share = {m for m in kept if load[m] == share}
    size = Counter(u.connector for u in pool)
    for unit in sorted(pool, key=lambda u: (-size[u.connector], u)):
        room = below | at_share if free_extra else below
        taker = min(room, key=lambda m: (spread[m][unit.connector], load[m], m))
        kept[taker].add(unit)
        spread[taker][unit.connector] += 1
        load[taker] += 1
        if taker in at_share:  # it took a one-more slot
            at_share.discard(taker)
            free_extra -= 1
        elif load[taker] == share:
            below.discard(taker)
            at_share.add(taker)


def _give_up(
    units: set[WorkUnit],
    revoked: set[WorkUnit],
    held: Counter[str],
    surplus: int,
    fair: Mapping[str, int],
    floors: Mapping[str, int],
    pool: list[WorkUnit],
    connectors: bool,
) -> None:
    """Takes ``surplus`` units of one kind from a member over its share, into ``pool``, one at a
    time: of the connector it then holds the most of beyond its fair share (its units over the
    members, rounded up); then one it would not leave below the share rounded down; then the one
    the pool holds the fewest of; then the one it holds the most of. A member with two
    connectors' tasks gives up one of each before a second of either, and members giving up in
    turn give up different connectors where they can."""
    mine: dict[str, list[WorkUnit]] = {}
    for unit in sorted(units, reverse=True):
        if unit.is_connector == connectors:
            mine.setdefault(unit.connector, []).append(unit)
    pooled = Counter(u.connector for u in pool)

    def rank(name: str) -> tuple[int, bool, int, int, str]:
        count = len(mine[name])
        # At its fair share or below, below the floor (the share rounded down) goes last.
        return (fair[name] - count, count <= floors[name], pooled[name], -count, name)

    # Ranks only grow as units leave (and join the pool): a popped rank gone stale is pushed
    # back as it is now, and the least one left is always current when taken.
    ranked = [rank(name) for name in mine]
    heapq.heapify(ranked)
    while surplus:
        stored = heapq.heappop(ranked)
        name = stored[-1]
        now = rank(name)
        if now != stored:
            heapq.heappush(ranked, now)
            continue
        unit = mine[name].pop()  # its lowest unit
        if mine[name]:
            heapq.heappush(ranked, rank(name))
        units.discard(unit)
        revoked.add(unit)
        held[name] -= 1
        pooled[name] += 1
        pool.append(unit)
        surplus -= 1
