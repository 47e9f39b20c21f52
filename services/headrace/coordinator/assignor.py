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
- Each connector's tasks are spread: no live member holds two more of them than another, so
  losing one worker stops at most a share of any pipeline. Where the fewest moves for the counts
  leave a connector bunched, tasks are swapped between members until it is not; each move
  beyond the counts' fewest lowers the bunching.
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
    *,
    spread: bool = True,
) -> Plan:
    """Computes the next assignment; see the module docstring for the rules.

    ``current`` is what each member runs (members not in ``members`` are ignored: their units are
    placed again, unless ``held`` keeps them); ``held`` maps each member in its grace period to
    the units kept for it. When two members run one unit, the one earlier in ``members`` keeps
    it. Without ``spread``, only the counts are balanced (``_spread`` is skipped): what the
    spreading costs can be told apart.
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
        if spread:
            _spread(kept, revoked, {m: current.get(m, frozenset()) for m in live})
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

    The members that end with one more than the rest are those that hold the most already, so
    the fewest units move; a member over its share gives up, one at a time, a unit of the
    connector it then holds the most of, and each unit goes to the member with room that holds
    the fewest of its connector's units.
    """
    load = {m: sum(1 for u in units if u.is_connector == connectors) for m, units in kept.items()}
    spread = {
        m: Counter(u.connector for u in units if u.is_connector == connectors)
        for m, units in kept.items()
    }
    share, extra = divmod(sum(load.values()) + len(unplaced), len(kept))
    by_load = sorted(kept, key=lambda m: (-load[m], m))
    target = {m: share + (1 if i < extra else 0) for i, m in enumerate(by_load)}
    pool = list(unplaced)
    for member in by_load:
        surplus = load[member] - target[member]
        if surplus <= 0:
            continue
        # One at a time, so that a member with two connectors' tasks gives up one of each
        # before a second of either: the units leaving together spread out in turn.
        mine: dict[str, list[WorkUnit]] = {}
        for unit in sorted(kept[member], reverse=True):
            if unit.is_connector == connectors:
                mine.setdefault(unit.connector, []).append(unit)
        fullest = [(-len(units), name) for name, units in mine.items()]
        heapq.heapify(fullest)
        for _ in range(surplus):
            _, name = heapq.heappop(fullest)
            unit = mine[name].pop()  # its lowest task
            if mine[name]:
                heapq.heappush(fullest, (-len(mine[name]), name))
            kept[member].discard(unit)
            revoked[member].add(unit)
            spread[member][unit.connector] -= 1
            pool.append(unit)
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


def _spread(
    kept: dict[str, set[WorkUnit]], revoked: dict[str, set[WorkUnit]], running: Assignment
) -> None:
    """Evens out each connector's tasks across the members, so that no member holds two more of
    one connector's tasks than another, while the loads stay balanced.

    Balancing the counts places and moves tasks spread already; what is left bunched (the
    members the counts chose to keep more were those holding the most of one connector) is
    evened out here: a task moves from the member holding the most of its connector to the one
    holding the fewest, and when that one is not lighter, it hands back a task of a connector
    it holds more of than the other, so both loads stay. A task not running yet is moved before
    a running one. Each step lowers the sum over members and connectors of the squared counts,
    so it ends.
    """
    tasks: dict[str, dict[str, set[WorkUnit]]] = {m: {} for m in kept}
    for member, units in kept.items():
        for unit in units:
            if not unit.is_connector:
                tasks[member].setdefault(unit.connector, set()).add(unit)
    counts = {m: Counter({c: len(us) for c, us in tasks[m].items()}) for m in kept}
    load = {m: sum(counts[m].values()) for m in kept}

    def move(unit: WorkUnit, source: str, to: str) -> None:
        kept[source].discard(unit)
        kept[to].add(unit)
        tasks[source][unit.connector].discard(unit)
        tasks[to].setdefault(unit.connector, set()).add(unit)
        if unit in running.get(source, frozenset()):
            revoked[source].add(unit)
        revoked[to].discard(unit)  # back where it still runs: nothing to stop there
        counts[source][unit.connector] -= 1
        counts[to][unit.connector] += 1
        load[source] -= 1
        load[to] += 1

    def task_of(connector: str, member: str) -> WorkUnit:
        mine = tasks[member][connector]
        return min(mine, key=lambda u: (u in running.get(member, frozenset()), u))

    totals: Counter[str] = Counter()
    for found in counts.values():
        totals.update(found)
    pending = sorted(c for c, n in totals.items() if n > 1)  # one task cannot bunch
    while pending:
        connector = pending.pop()
        most = max(kept, key=lambda m: (counts[m][connector], m))
        fewest = min(kept, key=lambda m: (counts[m][connector], m))
        if counts[most][connector] - counts[fewest][connector] < 2:
            continue
        move(task_of(connector, most), most, fewest)
        if load[fewest] > load[most] + 1:
            other = max(
                (c for c in counts[fewest] if c != connector),
                key=lambda c: (counts[fewest][c] - counts[most][c], c),
            )
            move(task_of(other, fewest), fewest, most)
            pending.append(other)
        pending.append(connector)
