"""The next generation as a pure function of the group's state: what it records, revokes and
owes, and that making a plan changes nothing it was given. The group that applies plans, with
its hand-overs and clock, is ``test_group``."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

from headrace.coordinator.planning import GroupState, plan
from headrace.core.model.structs import Revocation, WorkUnit
from tests.unit.coordinator.test_group import configs, running

A, A0, A1 = WorkUnit.of("a"), WorkUnit("a", 0), WorkUnit("a", 1)
B, B0 = WorkUnit.of("b"), WorkUnit("b", 0)


def state(**changes: Any) -> GroupState:
    base = GroupState(
        number=4,
        configs=configs(a=2),
        live=["w1", "w2"],
        current={"w1": running(A, A0, A1)},
        returning={},
        departed={},
        unassigned={},
        pending={},
        retired={},
    )
    return dataclasses.replace(base, **changes)


def test_a_plan_moves_only_what_balance_needs_and_revokes_it_first() -> None:
    planned = plan(state(), recorded_at=12.5, coordinator="c1")
    generation = planned.generation
    assert (generation.number, generation.recorded_at, generation.coordinator) == (5, 12.5, "c1")
    [moved] = generation.members["w2"]
    assert moved in {A0, A1}
    assert generation.revocations == {"w1": frozenset({Revocation(moved, incarnation="a-1")})}
    assert generation.members["w1"].keys() == {A, A0, A1} - {moved}
    assert planned.pending == {} and planned.cleanups == {}


def test_a_deleted_connector_s_units_leave_every_placement_and_are_owed_their_deletion() -> None:
    given = state(
        configs=configs(a=2),  # b is gone from the configs: deleted
        current={"w1": running(A, A0, B0), "w2": running(A1)},
        departed={"w3": running(B)},
        retired={("b", "b-1"): ({"connector.class": "X"}, ({},)), ("c", "c-1"): ({}, ())},
    )
    planned = plan(given, recorded_at=0.0, coordinator="c1")
    generation = planned.generation
    placed = {u for units in generation.members.values() for u in units}
    assert placed == {A, A0, A1}
    assert planned.departed == {"w3": {}}
    assert {i[0] for i in planned.pending} == {B, B0}
    # The task on a live member is revoked with the marker; the connector waits for w3.
    assert Revocation(B0, deleted=True, incarnation="b-1") in generation.revocations["w1"]
    assert [p.owner for p in generation.pending if p.unit == B] == ["w3"]
    assert planned.retired.keys() == {("b", "b-1")}  # c's configs no deletion needs


def test_making_a_plan_changes_nothing_it_was_given() -> None:
    given = state(
        current={"w1": running(A, A0, B0)},
        unassigned=running(A1),
        departed={"w3": running(B)},
    )
    before = copy.deepcopy(given)
    plan(given, recorded_at=0.0, coordinator="c1")
    assert given == before
