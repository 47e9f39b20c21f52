"""The history call's account of a generation: loads, what moved, what is owed, as the
coordinator answers it and as ``headrace coordinator history`` and the console show it."""

from __future__ import annotations

from headrace.clients.coordinator import generation_json
from headrace.coordinator.assignmentlog import Generation
from headrace.coordinator.deletions import PendingDeletion
from headrace.coordinator.history import Load, Move, Owed, describe_all
from headrace.coordinator.service import summary_to_pb
from headrace.core.model.structs import Revocation, WorkUnit

A, A0, A1 = WorkUnit.of("a"), WorkUnit("a", 0), WorkUnit("a", 1)
B, B0 = WorkUnit.of("b"), WorkUnit("b", 0)

FIRST = Generation(1, {"w1": {A: "i", A0: "i", A1: "i"}}, recorded_at=0.0)
SECOND = Generation(
    2,
    {"w1": {A: "i", A0: "i"}, "w2": {A1: "i"}},
    revocations={
        "w1": frozenset({Revocation(A1, incarnation="i")}),
        "w3": frozenset({Revocation(B0, deleted=True, incarnation="j")}),
    },
    departed={"w3": {B0: "j"}},
    pending=(PendingDeletion(B, "j", {}, {}, "w3"),),
    recorded_at=1.5,
    coordinator="c1",
)


def test_each_generation_says_what_is_new_moved_and_still_owed() -> None:
    old, new = describe_all([FIRST, SECOND])
    assert old.new == (A, A0, A1) and old.moved == ()
    assert new.members == {"w1": Load(1, 1), "w2": Load(0, 1)}
    assert new.moved == (Move(A1, "w1", "w2"),)
    assert new.new == (B0,)
    assert new.revoked == {"w1": {A1: False}, "w3": {B0: True}}
    assert new.departed == {"w3": 1}
    assert new.pending == (Owed(B, "j", "w3"),)


def test_the_command_prints_what_the_coordinator_answers() -> None:
    _, new = describe_all([FIRST, SECOND])
    assert generation_json(summary_to_pb(new)) == {
        "generation": 2,
        "recorded_at": "1970-01-01T00:00:01.500+00:00",
        "recorded_at_ms": 1500,
        "coordinator": "c1",
        "members": [
            {"worker": "w1", "connectors": 1, "tasks": 1},
            {"worker": "w2", "connectors": 0, "tasks": 1},
        ],
        "new": ["b-0"],
        "moved": [{"unit": "a-1", "from": "w1", "to": "w2"}],
        "revoked": [
            {"worker": "w1", "unit": "a-1", "deleted": False},
            {"worker": "w3", "unit": "b-0", "deleted": True},
        ],
        "departed": [{"worker": "w3", "units": 1}],
        "pending_deletions": [
            {
                "unit": "b",
                "incarnation": "j",
                "owner": "w3",
                "connector": "b",
                "connector_class": "",
                "plugin_version": "",
            }
        ],
    }
