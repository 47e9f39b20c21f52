"""The status fold and its key grammar."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

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


units = st.builds(WorkUnit, st.sampled_from(["a", "a-1", "b"]), st.integers(-1, 2))
events = st.one_of(
    st.builds(
        lambda unit, state, worker, generation: StatusReported(
            UnitStatus(unit, state, worker, generation=generation)
        ),
        units,
        st.sampled_from(list(State)),
        st.sampled_from(["w1", "w2"]),
        st.integers(0, 3),
    ),
    st.builds(StatusRemoved, units),
)


def fold_flat(history: list[status.StatusEvent]) -> dict[WorkUnit, UnitStatus]:
    """The fold's rule on a plain dict of every unit: the latest report wins unless it is a
    stale one of another worker, and a tombstone removes."""
    state: dict[WorkUnit, UnitStatus] = {}
    for event in history:
        if isinstance(event, StatusRemoved):
            state.pop(event.unit, None)
            continue
        known = state.get(event.status.unit)
        stale = (
            known is not None
            and known.worker_id != event.status.worker_id
            and event.status.generation < known.generation
        )
        if not stale:
            state[event.status.unit] = event.status
    return state


@given(st.lists(events, max_size=40))
def test_the_fold_kept_by_connector_answers_as_one_map_of_every_unit(
    history: list[status.StatusEvent],
) -> None:
    state, expected = status.EMPTY, fold_flat(history)
    for event in history:
        state = status.apply(state, event)
    assert dict(state.items()) == expected
    assert len(state) == len(expected) and set(state) == set(expected)
    # Views, as a Mapping's are: seen whole at each iteration, with a length.
    values, items = state.values(), state.items()
    assert list(values) == list(values) and len(values) == len(expected)
    assert sorted(items, key=str) == sorted(items, key=str) == sorted(expected.items(), key=str)
    assert all(s in values for s in expected.values())
    assert state == expected
    for name in ("a", "a-1", "b", "c"):
        mine = {u: s for u, s in expected.items() if u.connector == name}
        assert dict(status.of_connector(state, name)) == mine
    for unit in {*expected, WorkUnit("c", 0)}:
        assert (unit in state) == (unit in expected)
        assert state.get(unit) == expected.get(unit)


@given(st.lists(events, max_size=40))
def test_a_replay_folded_in_one_answers_as_the_fold_of_one_event_at_a_time(
    history: list[status.StatusEvent],
) -> None:
    """A replay folds the whole topic in place, made a state once: each report must see the
    reports before it, the stale check included."""
    folding, expected = status.StatusFolding(status.EMPTY), fold_flat(history)
    for event in history:
        folding.apply(event)
    state = folding.state()
    assert state == expected and len(state) == len(expected)


def test_a_fold_starts_from_any_map_of_statuses() -> None:
    running = UnitStatus(WorkUnit("a", 0), State.RUNNING, "w1")
    state = status.apply({running.unit: running}, StatusRemoved(WorkUnit.of("a")))
    assert dict(state) == {running.unit: running}
    assert dict(status.of_connector(state, "a")) == {running.unit: running}
