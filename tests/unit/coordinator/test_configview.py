"""The coordinator's view of the configs topic: the folded state, and the incarnations retired."""

from __future__ import annotations

from collections.abc import Iterable

from hypothesis import given
from hypothesis import strategies as st

from headrace.coordinator.configview import ConfigFeed, Replay, apply
from headrace.coordinator.group import ConfigsChanged, ConnectorRetired, Event
from headrace.core.model import configlog
from headrace.core.model.configstate import (
    ConfigEvent,
    ConfigState,
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


def replayed(events: Iterable[ConfigEvent]) -> tuple[ConfigState, list[Event]]:
    """The state a replay of ``events`` ends with, and what it hands the group."""
    replay = Replay()
    for event in events:
        replay.apply(event)
    return replay.finished()


def run(configs: ConfigState, events: Iterable[ConfigEvent]) -> tuple[ConfigState, list[Event]]:
    """Folds ``events`` read after the replay, one at a time."""
    submitted: list[Event] = []
    for event in events:
        configs, submit = apply(configs, event)
        submitted += submit
    return configs, submitted


def retired(events: list[Event]) -> list[ConnectorRetired]:
    return [e for e in events if isinstance(e, ConnectorRetired)]


def test_a_tombstone_retires_the_incarnation_with_its_last_configs() -> None:
    configs, _ = replayed([A_V1, TASK, TasksCommitted("a", 1)])
    _, submitted = run(configs, [ConnectorRemoved("a")])
    gone = fold([A_V1, TASK, TasksCommitted("a", 1), ConnectorRemoved("a")])
    assert submitted == [
        ConnectorRetired("a", "i1", A_V1.config, (TASK.config,)),
        ConfigsChanged(gone),
    ]


def test_an_update_retires_nothing_and_a_new_incarnation_retires_the_old() -> None:
    configs, _ = replayed([A_V1])
    configs, submitted = run(configs, [A_V1_UPDATED])
    assert retired(submitted) == []
    # created again with no tombstone seen in between (compaction removed it)
    configs, submitted = run(configs, [A_V2])
    assert retired(submitted) == [ConnectorRetired("a", "i1", A_V1_UPDATED.config, ())]
    assert configs.incarnations["a"] == "i2"


def test_incarnations_retired_during_replay_reach_the_group_when_it_ends() -> None:
    replay = Replay()
    events: list[ConfigEvent] = [A_V1, ConnectorRemoved("a"), A_V2]
    for event in events:
        replay.apply(event)
    assert dict(replay.configs.connectors["a"]) == {"connector.class": "X", "v": "2"}
    configs, submitted = replay.finished()
    assert submitted == [
        ConnectorRetired("a", "i1", A_V1.config, ()),
        ConfigsChanged(fold(events)),
    ]
    assert dict(configs.connectors["a"]) == {"connector.class": "X", "v": "2"}


def test_several_incarnations_retired_during_replay_reach_the_group_in_their_order() -> None:
    b_v1 = ConnectorConfigured("b", {"connector.class": "Y"}, "j1")
    events: list[ConfigEvent] = [A_V1, b_v1, A_V2, ConnectorRemoved("b"), ConnectorRemoved("a")]
    assert retired(replayed(events)[1]) == [
        ConnectorRetired("a", "i1", A_V1.config, ()),
        ConnectorRetired("b", "j1", b_v1.config, ()),
        ConnectorRetired("a", "i2", A_V2.config, ()),
    ]


def test_after_replay_every_config_change_yields_the_folded_state() -> None:
    events: list[ConfigEvent] = [A_V1, TaskConfigured("a", 0, {"t": "0"}), TasksCommitted("a", 1)]
    configs, _ = replayed([])
    for i, event in enumerate(events):
        configs, submitted = apply(configs, event)
        assert submitted == [ConfigsChanged(fold(events[: i + 1]))]
        assert configs == fold(events[: i + 1])


def test_a_replay_hands_the_group_its_state_once_at_the_end() -> None:
    events: list[ConfigEvent] = [A_V1, TaskConfigured("a", 0, {"t": "0"}), TasksCommitted("a", 1)]
    assert replayed(events) == (fold(events), [ConfigsChanged(fold(events))])


@given(st.lists(any_event, max_size=40), st.integers(min_value=0, max_value=40))
def test_where_the_replay_ends_changes_nothing_the_group_ends_up_with(
    events: list[ConfigEvent], cut: int
) -> None:
    """Whether an event was in the topic at start or arrived after, the group ends with the
    same state and hears of the same retired incarnations, in the same order."""
    configs, at_start = replayed(events[:cut])
    configs, after = run(configs, events[cut:])
    _, all_at_start = replayed(events)
    assert configs == fold(events)
    assert retired(at_start + after) == retired(all_at_start)


async def test_the_feed_replays_then_follows_the_topic() -> None:
    topic = MemoryTopic("configs")
    topic.append(*configlog.connector_configured("old", {"connector.class": "X"}, "i1"))
    for key, value in configlog.deletion("old", 0):
        topic.append(key, value)
    topic.append(*configlog.connector_configured("a", {"connector.class": "X"}, "i2"))
    submitted: list[Event] = []
    feed = ConfigFeed(memory_logs(topic))
    await feed.start(submitted.append)
    assert submitted == [
        ConnectorRetired("old", "i1", {"connector.class": "X"}, ()),
        ConfigsChanged(feed.configs),
    ]
    for key, value in configlog.deletion("a", 1):
        topic.append(key, value)
    assert retired(submitted)[-1] == ConnectorRetired("a", "i2", {"connector.class": "X"}, ())
    assert dict(feed.configs.connectors) == {}
    await feed.close()


async def test_a_feed_that_stands_by_follows_the_topic_and_leads_with_all_it_read() -> None:
    """A standby replays and keeps reading without a group; the group it then leads hears of
    everything read meanwhile, once, and of what follows as it comes."""
    topic = MemoryTopic("configs")
    topic.append(*configlog.connector_configured("old", {"connector.class": "X"}, "i1"))
    feed = ConfigFeed(memory_logs(topic))
    await feed.replay()
    for key, value in configlog.deletion("old", 0):  # read while standing by
        topic.append(key, value)
    topic.append(*configlog.connector_configured("a", {"connector.class": "X"}, "i2"))
    assert set(feed.configs.connectors) == {"a"}

    submitted: list[Event] = []
    await feed.start(submitted.append)  # the replay has run: leads at once
    assert submitted == [
        ConnectorRetired("old", "i1", {"connector.class": "X"}, ()),
        ConfigsChanged(feed.configs),
    ]
    topic.append(*configlog.connector_configured("b", {"connector.class": "X"}, "i3"))
    assert submitted[-1] == ConfigsChanged(feed.configs)
    assert set(feed.configs.connectors) == {"a", "b"}
    await feed.close()
    await feed.close()  # twice: nothing more
