"""The coordinator's view of the configs topic: which tombstones are deletions to act on."""

from __future__ import annotations

from collections.abc import Iterable

from headrace.coordinator.configview import ConfigFeed, ConfigView, apply, replay_finished
from headrace.coordinator.group import ConfigsChanged, ConnectorDeleted, Event
from headrace.core import configlog
from headrace.core.configstate import (
    ConfigEvent,
    ConnectorConfigured,
    ConnectorRemoved,
    TaskConfigured,
    TasksCommitted,
    fold,
)
from headrace.core.topiclog import MemoryTopic, memory_logs

A_V1 = ConnectorConfigured("a", {"connector.class": "X", "v": "1"})
A_V2 = ConnectorConfigured("a", {"connector.class": "X", "v": "2"})


def replayed(view: ConfigView) -> ConfigView:
    return replay_finished(view)[0]


def run(view: ConfigView, events: Iterable[ConfigEvent]) -> tuple[ConfigView, list[Event]]:
    submitted: list[Event] = []
    for event in events:
        view, submit = apply(view, event)
        submitted += submit
    return view, submitted


def deletions(events: list[Event]) -> list[str]:
    return [e.name for e in events if isinstance(e, ConnectorDeleted)]


def test_tombstones_found_during_replay_are_no_deletions() -> None:
    view, submitted = run(ConfigView(), [A_V1, ConnectorRemoved("a"), A_V2])
    assert deletions(submitted) == []
    assert not view.replayed
    assert dict(view.configs.connectors["a"]) == {"connector.class": "X", "v": "2"}


def test_a_tombstone_read_after_replay_is_a_deletion() -> None:
    view, _ = run(ConfigView(), [A_V1])
    _, submitted = run(replayed(view), [ConnectorRemoved("a")])
    gone = fold([A_V1, ConnectorRemoved("a")])
    assert submitted == [ConfigsChanged(gone), ConnectorDeleted("a")]


def test_deleted_and_created_again_live_yields_the_deletion_then_the_new_config() -> None:
    view, _ = run(ConfigView(), [A_V1])
    view, submitted = run(replayed(view), [ConnectorRemoved("a"), A_V2])
    gone, deleted, recreated = submitted
    assert isinstance(gone, ConfigsChanged) and "a" not in gone.state.connectors
    assert deleted == ConnectorDeleted("a")
    assert isinstance(recreated, ConfigsChanged)
    assert dict(recreated.state.connectors["a"])["v"] == "2"
    assert view.configs == recreated.state


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


async def test_the_feed_acts_only_on_tombstones_written_after_it_started() -> None:
    topic = MemoryTopic("configs")
    topic.append(*configlog.connector_configured("old", {"connector.class": "X"}))
    for key, value in configlog.deletion("old", 0):
        topic.append(key, value)
    topic.append(*configlog.connector_configured("a", {"connector.class": "X"}))
    submitted: list[Event] = []
    feed = ConfigFeed(memory_logs(topic), submitted.append)
    await feed.start()
    assert deletions(submitted) == [] and feed.view.replayed
    assert submitted == [ConfigsChanged(feed.view.configs)]
    for key, value in configlog.deletion("a", 1):
        topic.append(key, value)
    assert deletions(submitted) == ["a"]
    assert dict(feed.view.configs.connectors) == {}
    await feed.close()
