"""The assignor as scenarios and properties: who runs what, and what must stop first."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from headrace.coordinator.assignor import assign, desired_units
from headrace.core.structs import Revocation, WorkUnit

A, A0, A1, A2 = WorkUnit.of("a"), WorkUnit("a", 0), WorkUnit("a", 1), WorkUnit("a", 2)
B = WorkUnit.of("b")


def test_first_assignment_spreads_units_evenly_without_revocations() -> None:
    desired = desired_units({"a": 2, "b": 1})  # 5 units
    plan = assign({}, ["w1", "w2"], desired, frozenset({"a", "b"}))
    sizes = sorted(len(u) for u in plan.assignment.values())
    assert sizes == [2, 3]
    assert frozenset().union(*plan.assignment.values()) == desired
    assert not plan.moved()


def test_a_new_member_takes_work_only_from_the_fullest() -> None:
    desired = desired_units({"a": 3})  # 4 units
    current = {"w1": desired}
    plan = assign(current, ["w1", "w2"], desired, frozenset({"a"}))
    assert len(plan.assignment["w1"]) == 2
    assert len(plan.assignment["w2"]) == 2
    assert {r.unit for r in plan.revocations["w1"]} == set(plan.assignment["w2"])
    assert not any(r.deleted for r in plan.revocations["w1"])


def test_units_of_a_departed_member_move_without_touching_the_others() -> None:
    desired = desired_units({"a": 3})
    current = {"w1": frozenset({A, A0}), "w2": frozenset({A1, A2})}
    plan = assign(current, ["w1"], desired, frozenset({"a"}))
    assert plan.assignment["w1"] == desired
    assert not plan.moved()


def test_a_deleted_connector_is_revoked_with_the_deletion_marker() -> None:
    current = {"w1": frozenset({A, A0, B})}
    plan = assign(current, ["w1"], desired_units({"b": 0}), frozenset({"b"}))
    assert plan.revocations["w1"] == {Revocation(A, True), Revocation(A0, True)}
    assert plan.assignment["w1"] == {B}


def test_fewer_tasks_revoke_the_surplus_without_the_deletion_marker() -> None:
    current = {"w1": frozenset({A, A0, A1})}
    plan = assign(current, ["w1"], desired_units({"a": 1}), frozenset({"a"}))
    assert plan.revocations["w1"] == {Revocation(A1, False)}


def test_no_members_means_no_assignment() -> None:
    plan = assign({}, [], desired_units({"a": 1}), frozenset({"a"}))
    assert plan.assignment == {}


members = st.lists(st.sampled_from(["w1", "w2", "w3", "w4"]), min_size=1, unique=True)
counts = st.dictionaries(st.sampled_from(["a", "b", "c"]), st.integers(0, 4))


@given(members, members, counts, counts)
def test_every_desired_unit_runs_exactly_once_and_load_is_even(
    before: list[str], after: list[str], c1: dict[str, int], c2: dict[str, int]
) -> None:
    first = assign({}, before, desired_units(c1), frozenset(c1))
    desired = desired_units(c2)
    plan = assign(first.assignment, after, desired, frozenset(c2))
    owned = [u for units in plan.assignment.values() for u in units]
    assert sorted(owned) == sorted(desired)
    sizes = [len(plan.assignment[m]) for m in after]
    assert max(sizes) - min(sizes) <= 1
    for member, revoked in plan.revocations.items():
        for r in revoked:
            # Only what a member ran can be revoked from it, and only what it no longer keeps;
            # the deletion marker is set exactly when the connector is gone.
            assert r.unit in first.assignment.get(member, frozenset())
            assert r.unit not in plan.assignment[member]
            assert r.deleted == (r.unit.connector not in c2)


@given(members, counts)
def test_a_stable_group_is_left_alone(group: list[str], c: dict[str, int]) -> None:
    desired = desired_units(c)
    first = assign({}, group, desired, frozenset(c))
    again = assign(first.assignment, group, desired, frozenset(c))
    assert again.assignment == first.assignment
    assert not again.moved()
