"""The config fold: create, update, task commits and deletion, without Kafka."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from headrace.core.model import configlog
from headrace.core.model.configstate import (
    ConfigEvent,
    ConfigState,
    ConnectorConfigured,
    ConnectorRemoved,
    InstalledPlugin,
    RestartRequested,
    TargetStateChanged,
    TaskConfigured,
    TasksCommitted,
    apply,
    fold,
)
from headrace.core.model.structs import Target
from tests.unit.core.model.configevents import any_event, names


def records_to_events(records: list[configlog.Record]) -> list:
    return [e for k, v in records if (e := configlog.decode(k, v)) is not None]


def test_create_then_update_replaces_the_whole_config() -> None:
    state = fold(
        [
            ConnectorConfigured("a", {"connector.class": "X", "tasks.max": "1"}),
            ConnectorConfigured("a", {"connector.class": "X", "tasks.max": "3"}),
        ]
    )
    assert dict(state.connectors["a"]) == {"connector.class": "X", "tasks.max": "3"}


def test_tasks_become_live_only_when_committed() -> None:
    state = fold(
        [
            ConnectorConfigured("a", {"connector.class": "X"}),
            TaskConfigured("a", 0, {"t": "0"}),
            TaskConfigured("a", 1, {"t": "1"}),
        ]
    )
    assert state.tasks_of("a") == ()
    state = apply(state, TasksCommitted("a", 2))
    assert [dict(t) for t in state.tasks_of("a")] == [{"t": "0"}, {"t": "1"}]


def test_a_commit_missing_task_records_is_ignored() -> None:
    state = fold(
        [
            ConnectorConfigured("a", {}),
            TaskConfigured("a", 0, {"t": "0"}),
            TasksCommitted("a", 2),
        ]
    )
    assert state.tasks_of("a") == ()


def test_tombstone_deletes_the_connector_and_its_tasks() -> None:
    state = fold(
        [
            ConnectorConfigured("a", {}),
            TaskConfigured("a", 0, {}),
            TasksCommitted("a", 1),
            ConnectorConfigured("b", {}),
            ConnectorRemoved("a"),
        ]
    )
    assert set(state.connectors) == {"b"}
    assert state.tasks_of("a") == ()


def test_a_deletion_forgets_the_connectors_topic_reset_and_nothing_of_the_cluster() -> None:
    """Cluster log levels and the session key outlive any connector's deletion."""
    events = records_to_events(
        [
            configlog.logger_level("org.example", "DEBUG", 5),
            configlog.connector_configured("a", {}, "i1"),
            configlog.connector_configured("b", {}, "i2"),
            configlog.topics_reset("a", 10),
            configlog.topics_reset("b", 11),
            configlog.topics_reset("nobody", 12),  # no such connector: nothing to reset
            *configlog.deletion("a", 0),
        ]
    )
    state = fold(events)
    assert dict(state.topic_resets) == {"b": 11}
    assert set(state.log_levels) == {"org.example"}


def test_a_commit_after_deletion_does_not_resurrect_the_connector() -> None:
    state = fold(
        [
            ConnectorConfigured("a", {}),
            ConnectorRemoved("a"),
            TaskConfigured("a", 0, {}),
            TasksCommitted("a", 1),
        ]
    )
    assert "a" not in state.connectors
    assert state.tasks_of("a") == ()


def test_a_commit_that_compaction_put_before_its_connector_still_counts() -> None:
    # An update rewrote connector-a after the commit; compaction dropped the first record.
    state = fold(
        [
            TaskConfigured("a", 0, {"t": "0"}),
            TasksCommitted("a", 1),
            ConnectorConfigured("a", {"v": "2"}),
        ]
    )
    assert [dict(t) for t in state.tasks_of("a")] == [{"t": "0"}]


def test_records_round_trip_through_the_topic_protocol() -> None:
    records = [configlog.connector_configured("my-conn", {"k": "v"}, "i1")]
    records += configlog.task_set("my-conn", [{"a": "1"}, {"a": "2"}])
    state = fold(records_to_events(records))
    assert dict(state.connectors["my-conn"]) == {"k": "v"}
    assert [dict(t) for t in state.tasks_of("my-conn")] == [{"a": "1"}, {"a": "2"}]
    state = fold(records_to_events(configlog.deletion("my-conn", 2)), state)
    assert state == ConfigState()


config_texts = st.text(alphabet="ab.é\x00", max_size=5)
probe_texts = config_texts | st.just("\ud800")


@given(st.dictionaries(config_texts, config_texts, max_size=4), st.booleans(), st.data())
def test_a_config_read_back_from_its_record_is_the_config_written(
    written: dict[str, str], read_first: bool, data: st.DataObject
) -> None:
    """Whether asked for a key before or after the rest is read: a key that is only part of
    another key or of a value is not there."""
    known = sorted({*written, *written.values()})
    probes = data.draw(st.lists(st.sampled_from(known) | probe_texts if known else probe_texts))
    (key, value), *_ = configlog.task_set("c", [written])
    event = configlog.decode(key, value)
    assert isinstance(event, TaskConfigured)
    config = event.config
    if read_first:
        assert dict(config) == written
    for probe in probes:
        assert (probe in config) == (probe in written)
        assert config.get(probe, "none") == written.get(probe, "none")
    assert config == written and written == config
    assert len(config) == len(written) and sorted(config) == sorted(written)


def test_a_connector_runs_until_paused_or_stopped_and_a_deletion_forgets_its_target() -> None:
    state = fold([ConnectorConfigured("a", {}, "i1")])
    assert state.target_of("a") is Target.RUNNING
    state = apply(state, TargetStateChanged("a", Target.PAUSED))
    assert state.target_of("a") is Target.PAUSED
    state = fold([ConnectorRemoved("a"), ConnectorConfigured("a", {}, "i2")], state)
    assert state.target_of("a") is Target.RUNNING


def test_a_create_with_an_initial_state_keeps_it_through_a_recreate_without_tombstone() -> None:
    # Compaction may drop the tombstone between two incarnations: the new one's target state,
    # written before its config, still holds.
    state = fold(
        [
            ConnectorConfigured("a", {}, "i1"),
            TargetStateChanged("a", Target.STOPPED),
            ConnectorConfigured("a", {}, "i2"),
        ]
    )
    assert state.target_of("a") is Target.STOPPED


def test_restarts_remember_the_last_request_per_unit() -> None:
    state = fold(
        [
            ConnectorConfigured("a", {}, "i1"),
            RestartRequested("a", (-1, 0), 10),
            RestartRequested("a", (1,), 12),
        ]
    )
    assert [state.restart_of("a", t) for t in (-1, 0, 1, 2)] == [10, 10, 12, 0]
    assert fold([ConnectorRemoved("a")], state).restart_of("a", 1) == 0


def test_targets_and_restarts_round_trip_with_the_offset_of_their_record() -> None:
    records = [
        configlog.target_state("a", Target.PAUSED),
        configlog.connector_configured("a", {}, "i1"),
        configlog.restart("a", [-1, 3]),
    ]
    events = [configlog.decode(k, v, offset) for offset, (k, v) in enumerate(records, 40)]
    assert events[0] == TargetStateChanged("a", Target.PAUSED)
    assert events[2] == RestartRequested("a", (-1, 3), 42)
    state = fold(e for e in events if e is not None)
    deleted = fold(records_to_events(configlog.deletion("a", 0)), state)
    assert deleted == ConfigState()


@given(st.lists(st.tuples(st.sampled_from(["create", "delete"]), names), max_size=30))
def test_the_fold_keeps_exactly_the_connectors_created_and_not_deleted_since(
    ops: list[tuple[str, str]],
) -> None:
    events: list[ConfigEvent] = []
    expected: set[str] = set()
    for op, name in ops:
        if op == "create":
            events.append(ConnectorConfigured(name, {"n": name}))
            expected.add(name)
        else:
            events.append(ConnectorRemoved(name))
            expected.discard(name)
    assert set(fold(events).connectors) == expected


@given(st.lists(any_event, max_size=40))
def test_a_replay_folded_in_one_reaches_the_state_of_one_event_at_a_time(
    events: list[ConfigEvent],
) -> None:
    """A replay folds the whole topic into changes made in place, made a state once: every
    event must read what the events before it changed, as when each makes its own state."""
    one_at_a_time = ConfigState()
    for event in events:
        one_at_a_time = apply(one_at_a_time, event)
    assert fold(events) == one_at_a_time


def test_a_plugin_installed_for_the_cluster_is_kept_until_uninstalled_and_read_back() -> None:
    coordinate = "org.apache.kafka:connect-file:3.9.1"
    plugin = InstalledPlugin("ab" * 64, 5)
    records = [configlog.plugin_installed(coordinate, plugin)]
    state = fold(records_to_events(records))
    assert dict(state.plugins) == {coordinate: plugin}
    records.append(configlog.plugin_uninstalled(coordinate))
    assert dict(fold(records_to_events(records)).plugins) == {}
    # A deletion of a connector leaves the cluster's plugins alone.
    state = fold([*records_to_events(records[:1]), ConnectorRemoved("a")])
    assert coordinate in state.plugins
