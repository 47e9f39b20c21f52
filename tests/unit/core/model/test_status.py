"""The status fold and its key grammar."""

from __future__ import annotations

from headrace.core.model import status
from headrace.core.model.status import State, StatusRemoved, StatusReported, UnitStatus
from headrace.core.model.structs import WorkUnit


def fold_records(*events: status.StatusEvent) -> status.StatusState:
    """Folds events as a reader of the topic would: each encoded, then decoded."""
    state = status.EMPTY
    for event in events:
        decoded = status.decode(*status.encode(event))
        assert decoded is not None
        state = status.apply(state, decoded)
    return state


def test_latest_report_wins_and_a_tombstone_removes() -> None:
    task, connector = WorkUnit("my-conn", 1), WorkUnit.of("my-conn")
    state = fold_records(
        StatusReported(UnitStatus(task, State.RUNNING, "w1", plugin_version="1.0.0")),
        StatusReported(UnitStatus(task, State.FAILED, "w1", trace="boom")),
        StatusReported(UnitStatus(connector, State.RUNNING, "w2")),
    )
    assert state[task].state is State.FAILED
    assert state[task].trace == "boom"
    assert state[connector].worker_id == "w2"
    state = status.apply(state, StatusRemoved(task))
    assert set(state) == {connector}


def test_keys_parse_back_for_names_with_dashes() -> None:
    assert status.parse_key(status.status_key(WorkUnit("a-b-1", 12))) == WorkUnit("a-b-1", 12)
    assert status.parse_key(status.status_key(WorkUnit.of("a-b-1"))) == WorkUnit.of("a-b-1")
    assert status.parse_key("something-else") is None


def test_a_report_from_another_worker_in_an_older_generation_is_stale() -> None:
    task = WorkUnit("my-conn", 0)
    state = fold_records(
        StatusReported(UnitStatus(task, State.RUNNING, "w1", generation=7)),
        # w2 was cut off in generation 5 and gives the task up late: it runs on w1 now
        StatusReported(UnitStatus(task, State.UNASSIGNED, "w2", generation=5)),
    )
    assert (state[task].state, state[task].worker_id) == (State.RUNNING, "w1")
    # a newer generation wins whoever reports, and the same worker's reports follow each other
    state = fold_records(
        StatusReported(UnitStatus(task, State.RUNNING, "w1", generation=7)),
        StatusReported(UnitStatus(task, State.RUNNING, "w2", generation=8)),
        StatusReported(UnitStatus(task, State.FAILED, "w2", generation=8, trace="x")),
    )
    assert (state[task].state, state[task].worker_id) == (State.FAILED, "w2")
