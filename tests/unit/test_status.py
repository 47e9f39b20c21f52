"""The status fold and its key grammar."""

from __future__ import annotations

from types import MappingProxyType

from headrace.core import status
from headrace.core.status import State, UnitStatus


def test_latest_report_wins_and_a_tombstone_removes() -> None:
    state: status.StatusState = MappingProxyType({})
    for s in (
        UnitStatus("my-conn", 1, State.RUNNING, "w1", plugin_version="1.0.0"),
        UnitStatus("my-conn", 1, State.FAILED, "w1", trace="boom"),
        UnitStatus("my-conn", -1, State.RUNNING, "w2"),
    ):
        state = status.apply(state, *status.encode(s))
    assert state[("my-conn", 1)].state is State.FAILED
    assert state[("my-conn", 1)].trace == "boom"
    assert state[("my-conn", -1)].worker_id == "w2"
    state = status.apply(state, status.status_key("my-conn", 1), None)
    assert set(state) == {("my-conn", -1)}


def test_keys_parse_back_for_names_with_dashes() -> None:
    assert status.parse_key(status.status_key("a-b-1", 12)) == ("a-b-1", 12)
    assert status.parse_key(status.status_key("a-b-1", -1)) == ("a-b-1", -1)
    assert status.parse_key("something-else") is None
