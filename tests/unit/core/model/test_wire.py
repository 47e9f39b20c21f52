"""What a plugin process says of its units reaches the worker as it was said."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from headrace.core.model.structs import (
    DeletionHeard,
    HostEvent,
    ReconfigurationRequested,
    State,
    TopicUsed,
    UnitStateChanged,
    WorkUnit,
)
from headrace.core.model.wire import host_event_from_pb, host_event_to_pb

names = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), min_size=1, max_size=20)
units = st.builds(WorkUnit, names, st.integers(-1, 1000))
events: st.SearchStrategy[HostEvent] = st.one_of(
    st.builds(UnitStateChanged, units, st.sampled_from(State), st.text(max_size=50)),
    st.builds(ReconfigurationRequested, names),
    st.builds(TopicUsed, units, names),
    st.builds(DeletionHeard, units),
)


@given(events)
def test_every_host_event_crosses_the_process_boundary_unchanged(event: HostEvent) -> None:
    sent = host_event_to_pb(event).SerializeToString()
    received = type(host_event_to_pb(event)).FromString(sent)
    assert host_event_from_pb(received) == event
