"""The assignor as scenarios and properties: who runs what, and what must stop first."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from hypothesis import given
from hypothesis import strategies as st

from headrace.coordinator.assignor import Assignment, Plan, assign, desired_units
from headrace.core.model.structs import Revocation, WorkUnit

A, A0, A1, A2 = WorkUnit.of("a"), WorkUnit("a", 0), WorkUnit("a", 1), WorkUnit("a", 2)
B = WorkUnit.of("b")


def count(units: frozenset[WorkUnit], connectors: bool) -> int:
    return sum(1 for u in units if u.is_connector == connectors)


def test_first_assignment_balances_connectors_and_tasks_apart() -> None:
    desired = desired_units({"a": 2, "b": 2})  # 2 connectors, 4 tasks
    plan = assign({}, ["w1", "w2"], desired)
    assert frozenset().union(*plan.assignment.values()) == desired
    for units in plan.assignment.values():
        assert count(units, connectors=True) == 1
        assert count(units, connectors=False) == 2
        # each connector's tasks are split between the two
        assert Counter(u.connector for u in units if not u.is_connector) == {"a": 1, "b": 1}
    assert not plan.moved()


def test_a_new_member_takes_work_only_from_the_fullest() -> None:
    desired = desired_units({"a": 3})  # 1 connector, 3 tasks
    plan = assign({"w1": desired}, ["w1", "w2"], desired)
    # w1 keeps the connector and the larger share of tasks: one task moves, not two
    assert count(plan.assignment["w1"], True) == 1
    assert count(plan.assignment["w1"], False) == 2
    assert count(plan.assignment["w2"], False) == 1
    assert {r.unit for r in plan.revocations["w1"]} == set(plan.assignment["w2"])
    assert not any(r.deleted for r in plan.revocations["w1"])


def test_units_of_a_departed_member_move_without_touching_the_others() -> None:
    desired = desired_units({"a": 3})
    current = {"w1": frozenset({A, A0}), "w2": frozenset({A1, A2})}
    plan = assign(current, ["w1"], desired)
    assert plan.assignment["w1"] == desired
    assert not plan.moved()


def test_a_member_in_its_grace_period_keeps_its_units_reserved() -> None:
    desired = desired_units({"a": 3})
    plan = assign({"w1": frozenset({A, A0})}, ["w1"], desired, held={"w2": frozenset({A1, A2})})
    assert plan.assignment == {"w1": frozenset({A, A0})}
    assert plan.reserved == {"w2": frozenset({A1, A2})}
    # Back in time: the group hands it what was kept for it, and w1 stops nothing.
    back = assign({"w1": frozenset({A, A0}), **plan.reserved}, ["w1", "w2"], desired)
    assert back.assignment == {"w1": frozenset({A, A0}), "w2": frozenset({A1, A2})}
    assert not back.moved()


def test_fewer_tasks_revoke_the_surplus_without_the_deletion_marker() -> None:
    plan = assign({"w1": frozenset({A, A0, A1})}, ["w1"], desired_units({"a": 1}))
    assert plan.revocations["w1"] == {Revocation(A1, False)}


def test_a_second_copy_is_stopped_and_the_first_kept() -> None:
    current = {"w1": frozenset({A, A0}), "w2": frozenset({A0})}
    plan = assign(current, ["w1", "w2"], desired_units({"a": 1}))
    assert plan.revocations == {"w2": {Revocation(A0)}}
    assert A0 in plan.assignment["w1"]


def test_no_members_means_no_assignment() -> None:
    plan = assign({}, [], desired_units({"a": 1}))
    assert plan.assignment == {}


names = st.sampled_from(["w1", "w2", "w3", "w4", "w5"])
members = st.lists(names, min_size=1, max_size=5, unique=True)
counts = st.dictionaries(st.sampled_from("abcdefg"), st.integers(0, 9), max_size=6)


def minimum_moves(kept: Mapping[str, int], total: int) -> int:
    """The fewest units that must leave their members for ``total`` units of one kind to be
    balanced within one: the members holding the most keep the larger shares."""
    share, extra = divmod(total, len(kept))
    ranked = sorted(kept.values(), reverse=True)
    return sum(max(0, c - share - (1 if i < extra else 0)) for i, c in enumerate(ranked))


def check(
    plan: Plan,
    current: Assignment,
    live: list[str],
    desired: frozenset[WorkUnit],
    held: Assignment | None = None,
) -> None:
    """What every plan must be: each wanted unit once, balanced counts, revocations only of what
    ran there, and no more moves than the counts need."""
    placed = [u for units in [*plan.assignment.values(), *plan.reserved.values()] for u in units]
    assert len(placed) == len(set(placed)), "a unit is assigned twice"
    assert set(placed) == desired, "a desired unit is lost, or an unwanted one placed"
    assert set(plan.assignment) == set(live)
    for connectors in (True, False):
        loads = [count(plan.assignment[m], connectors) for m in live]
        assert max(loads) - min(loads) <= 1, f"unbalanced: {loads}"
    for member, revoked in plan.revocations.items():
        ran = current.get(member, frozenset())
        for r in revoked:
            assert not r.deleted
            assert r.unit in ran and r.unit not in plan.assignment[member]
    for connectors in (True, False):
        assert moves(plan, current, live, desired, connectors) == minimum_moves(
            kept_counts(current, live, desired, connectors),
            sum(count(plan.assignment[m], connectors) for m in live),
        ), "more units moved than balance needs"


def staying(
    current: Assignment, live: list[str], desired: frozenset[WorkUnit], connectors: bool
) -> dict[str, list[WorkUnit]]:
    """The units of one kind each member runs that are still wanted (first copy only)."""
    seen: set[WorkUnit] = set()
    found = {}
    for m in live:
        found[m] = [
            u
            for u in sorted(current.get(m, frozenset()))
            if u in desired and u not in seen and u.is_connector == connectors
        ]
        seen.update(found[m])
    return found


def kept_counts(
    current: Assignment, live: list[str], desired: frozenset[WorkUnit], connectors: bool
) -> dict[str, int]:
    return {m: len(units) for m, units in staying(current, live, desired, connectors).items()}


def moves(
    plan: Plan, current: Assignment, live: list[str], desired: frozenset[WorkUnit], kind: bool
) -> int:
    """The running units of one kind that the plan takes from their members."""
    return sum(
        1
        for m, units in staying(current, live, desired, kind).items()
        for u in units
        if u not in plan.assignment[m]
    )


def bunched(plan: Plan, live: list[str]) -> dict[str, list[int]]:
    """The connectors whose tasks are not spread: two members' counts differ by more than one."""
    found = {}
    for name in {u.connector for units in plan.assignment.values() for u in units}:
        per = [
            sum(1 for u in plan.assignment[m] if u.connector == name and not u.is_connector)
            for m in live
        ]
        if max(per) - min(per) > 1:
            found[name] = per
    return found


@given(members, counts)
def test_a_first_assignment_spreads_every_connector(live: list[str], c: dict[str, int]) -> None:
    desired = desired_units(c)
    plan = assign({}, live, desired)
    check(plan, {}, live, desired)
    assert not plan.moved()
    for name, tasks in c.items():
        if tasks >= len(live):
            per = [
                sum(1 for u in plan.assignment[m] if u.connector == name and not u.is_connector)
                for m in live
            ]
            assert max(per) - min(per) <= 1, f"{name}'s tasks bunch up: {per}"


@given(members, members, st.lists(names, max_size=2, unique=True), counts, counts)
def test_every_change_keeps_units_once_balanced_and_moves_the_minimum(
    before: list[str], after: list[str], away: list[str], c1: dict[str, int], c2: dict[str, int]
) -> None:
    first = assign({}, before, desired_units(c1))
    desired = desired_units(c2)
    live = [m for m in after if m not in away]
    held = {m: first.assignment.get(m, frozenset()) for m in away}
    if not live:
        return
    current = {m: first.assignment.get(m, frozenset()) for m in live}
    plan = assign(current, live, desired, held=held)
    check(plan, current, live, desired, held)
    for member, units in held.items():
        # kept for it, save what no longer runs at all
        assert plan.reserved.get(member, frozenset()) == units & desired


@given(members, counts)
def test_a_stable_group_is_left_alone(group: list[str], c: dict[str, int]) -> None:
    desired = desired_units(c)
    first = assign({}, group, desired)
    again = assign(first.assignment, group, desired)
    assert again.assignment == first.assignment
    assert not again.moved()


few = st.dictionaries(st.sampled_from("abcdefg"), st.integers(0, 5), max_size=6)


@given(members, names, few)
def test_a_member_joining_takes_tasks_of_different_connectors(
    group: list[str], newcomer: str, c: dict[str, int]
) -> None:
    """With each connector on each member at most once, a member joining keeps it so, with no
    more moves than balance needs: the members it takes from give up one task of each
    connector before a second of any, and it takes different connectors' tasks."""
    if newcomer in group or any(n > len(group) for n in c.values()):
        return
    desired = desired_units(c)
    first = assign({}, group, desired)
    live = [*group, newcomer]
    plan = assign(first.assignment, live, desired)
    check(plan, first.assignment, live, desired)
    assert not bunched(plan, live)


@given(names, counts)
def test_a_second_member_takes_half_of_each_connector_from_the_first(
    newcomer: str, c: dict[str, int]
) -> None:
    """How a cluster starts (make run): one worker runs everything until the next joins, which
    must then run a share of every pipeline, not whole pipelines."""
    if newcomer == "w1":
        return
    desired = desired_units(c)
    first = assign({}, ["w1"], desired)
    plan = assign(first.assignment, ["w1", newcomer], desired)
    check(plan, first.assignment, ["w1", newcomer], desired)
    assert not bunched(plan, ["w1", newcomer])


@given(members, members, counts, counts)
def test_a_hand_over_planned_again_lands_where_it_was_going(
    before: list[str], after: list[str], c1: dict[str, int], c2: dict[str, int]
) -> None:
    """A plan's moves take two steps (the old owner stops a unit, then the new one starts it);
    a rebalance between them sees the unit running nowhere. Planned again, it must go where it
    was going, or units would move back and forth without end."""
    first = assign({}, before, desired_units(c1)).assignment
    desired = desired_units(c2)
    plan = assign(first, after, desired)
    midway = {m: first.get(m, frozenset()) & plan.assignment[m] for m in after}
    assert assign(midway, after, desired).assignment == plan.assignment


def test_two_connectors_on_one_worker_split_when_a_second_joins() -> None:
    """As ``make run`` starts: one worker runs both pipelines until the second joins, which
    must then run one task of each, so that losing either worker stops neither pipeline."""
    desired = desired_units({"demo-sink": 2, "demo-source": 2})
    first = assign({}, ["worker-1"], desired)
    plan = assign(first.assignment, ["worker-1", "worker-2"], desired)
    for member in ("worker-1", "worker-2"):
        tasks = sorted(u for u in plan.assignment[member] if not u.is_connector)
        assert {u.connector for u in tasks} == {"demo-sink", "demo-source"}, (member, tasks)
