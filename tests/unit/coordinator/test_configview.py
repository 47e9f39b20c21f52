"""The coordinator's view of the configs topic: the folded state, and the incarnations retired."""

from __future__ import annotations

from collections.abc import Iterable

from hypothesis import given
from hypothesis import strategies as st

from headrace.coordinator.configview import ConfigFeed, ConfigView, Replay, apply, replay_finished
from headrace.coordinator.group import ConfigsChanged, ConnectorRetired, Event
from headrace.core.model import configlog
from headrace.core.model.configstate import (
    ConfigEvent,
    ConnectorConfigured,
    ConnectorRemoved,
    TaskConfigured,
    TasksCommitted,
    fold,
)
from headrace.core.storage.topiclog import MemoryTopic, memory_logs
from tests.unit.core.model.configevents import any_event

A_V1 = ConnectorConfigured("a", {"connector.class": "X", "v": "1"}, "i1")
A_V1_UPDATED = ConnectorConfigured("a", {"connector.class": "X", "v": "1.1"}, "i1")
A_V2 = ConnectorConfigured("a", {"connector.class": "X", "v": "2"}, "i2")
TASK = TaskConfigured("a", 0, {"t": "0"})


def replayed(view: ConfigView) -> ConfigView:
    return replay_finished(view)[0]


def run(view: ConfigView, events: Iterable[ConfigEvent]) -> tuple[ConfigView, list[Event]]:
    submitted: list[Event] = []
    for event in events:
        view, submit = apply(view, event)
        submitted += submit
    return view, submitted


def retired(events: list[Event]) -> list[ConnectorRetired]:
    return [e for e in events if isinstance(e, ConnectorRetired)]


def test_a_tombstone_retires_the_incarnation_with_its_last_configs() -> None:
    view, _ = run(ConfigView(), [A_V1, TASK, TasksCommitted("a", 1)])
    _, submitted = run(replayed(view), [ConnectorRemoved("a")])
    gone = fold([A_V1, TASK, TasksCommitted("a", 1), ConnectorRemoved("a")])
    assert submitted == [
        ConnectorRetired("a", "i1", A_V1.config, (TASK.config,)),
        ConfigsChanged(gone),
    ]


def test_an_update_retires_nothing_and_a_new_incarnation_retires_the_old() -> None:
    view = replayed(run(ConfigView(), [A_V1])[0])
    view, submitted = run(view, [A_V1_UPDATED])
    assert retired(submitted) == []
    # created again with no tombstone seen in between (compaction removed it)
    view, submitted = run(view, [A_V2])
    assert retired(submitted) == [ConnectorRetired("a", "i1", A_V1_UPDATED.config, ())]
    assert view.configs.incarnations["a"] == "i2"


def test_incarnations_retired_during_replay_reach_the_group_when_it_ends() -> None:
    view, submitted = run(ConfigView(), [A_V1, ConnectorRemoved("a"), A_V2])
    assert submitted == [] and not view.replayed
    view, submitted = replay_finished(view)
    assert submitted == [
        ConnectorRetired("a", "i1", A_V1.config, ()),
        ConfigsChanged(fold([A_V1, ConnectorRemoved("a"), A_V2])),
    ]
    assert dict(view.configs.connectors["a"]) == {"connector.class": "X", "v": "2"}


def test_several_incarnations_retired_during_replay_reach_the_group_in_their_order() -> None:
    b_v1 = ConnectorConfigured("b", {"connector.class": "Y"}, "j1")
    events: list[ConfigEvent] = [A_V1, b_v1, A_V2, ConnectorRemoved("b"), ConnectorRemoved("a")]
    view, _ = run(ConfigView(), events)
    assert retired(replay_finished(view)[1]) == [
        ConnectorRetired("a", "i1", A_V1.config, ()),
        ConnectorRetired("b", "j1", b_v1.config, ()),
        ConnectorRetired("a", "i2", A_V2.config, ()),
    ]
    assert retired(replay_finished(replayed(view))[1]) == []  # handed over once


def test_after_replay_every_config_change_yields_the_folded_state() -> None:
    events: list[ConfigEvent] = [A_V1, TaskConfigured("a", 0, {"t": "0"}), TasksCommitted("a", 1)]
    view = replayed(ConfigView())
    for i, event in enumerate(events):
        view, submitted = apply(view, event)
        assert submitted == [ConfigsChanged(fold(events[: i + 1]))]
        assert view.configs == fold(events[: i + 1])


def test_a_replay_hands_the_group_its_state_once_at_the_end() -> None:
    events: list[ConfigEvent] = [A_V1, TaskConfigured("a", 0, {"t": "0"}), TasksCommitted("a", 1)]
    view, submitted = run(ConfigView(), events)
    assert submitted == [] and not view.replayed
    view, submitted = replay_finished(view)
    assert view.replayed
    assert submitted == [ConfigsChanged(fold(events))]


async def test_the_feed_replays_then_follows_the_topic() -> None:
    topic = MemoryTopic("configs")
    topic.append(*configlog.connector_configured("old", {"connector.class": "X"}, "i1"))
    for key, value in configlog.deletion("old", 0):
        topic.append(key, value)
    topic.append(*configlog.connector_configured("a", {"connector.class": "X"}, "i2"))
    submitted: list[Event] = []
    feed = ConfigFeed(memory_logs(topic), submitted.append)
    await feed.start()
    assert feed.view.replayed
    assert submitted == [
        ConnectorRetired("old", "i1", {"connector.class": "X"}, ()),
        ConfigsChanged(feed.view.configs),
    ]
    for key, value in configlog.deletion("a", 1):
        topic.append(key, value)
    assert retired(submitted)[-1] == ConnectorRetired("a", "i2", {"connector.class": "X"}, ())
    assert dict(feed.view.configs.connectors) == {}
    await feed.close()


@given(st.lists(any_event, max_size=40))
def test_a_replay_folded_in_place_ends_as_a_view_per_record_does(
    events: list[ConfigEvent],
) -> None:
    """The feed folds its replay in place (``Replay``): the same view, and the same events
    for the group, as :func:`apply` then :func:`replay_finished` make."""
    in_place = Replay(ConfigView())
    for event in events:
        in_place.apply(event)
    assert in_place.finished() == replay_finished(run(ConfigView(), events)[0])
