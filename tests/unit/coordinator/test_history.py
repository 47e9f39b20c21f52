"""The history command's account of a generation: loads, what moved, what is owed."""

from __future__ import annotations

from headrace.coordinator.assignmentlog import Generation
from headrace.coordinator.deletions import PendingDeletion
from headrace.coordinator.history import describe_all
from headrace.core.model.structs import Revocation, WorkUnit

A, A0, A1 = WorkUnit.of("a"), WorkUnit("a", 0), WorkUnit("a", 1)


def test_each_generation_says_what_is_new_moved_and_still_owed() -> None:
    first = Generation(1, {"w1": {A: "i", A0: "i", A1: "i"}}, recorded_at=0.0)
    second = Generation(
        2,
        {"w1": {A: "i", A0: "i"}, "w2": {A1: "i"}},
        revocations={"w1": frozenset({Revocation(A1, incarnation="i")})},
        departed={"w3": {WorkUnit("b", 0): "j"}},
        pending=(PendingDeletion(WorkUnit.of("b"), "j", {}, {}, "w3"),),
        recorded_at=1.5,
        coordinator="c1",
    )
    old, new = describe_all([first, second])
    assert old["new"] == ["a", "a-0", "a-1"] and old["moved"] == []
    assert new["members"] == {
        "w1": {"connectors": 1, "tasks": 1},
        "w2": {"connectors": 0, "tasks": 1},
    }
    assert new["moved"] == [{"unit": "a-1", "from": "w1", "to": "w2"}]
    assert new["new"] == ["b-0"]
    assert new["revoked"] == {"w1": ["a-1"]}
    assert new["departed"] == {"w3": 1}
    assert new["pending_deletions"] == [{"unit": "b", "incarnation": "j", "owner": "w3"}]
    assert new["recorded_at"] == "1970-01-01T00:00:01.500+00:00"
