"""The console's board and history, from folded configs and statuses, without I/O."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from headrace.config.console.board import connector_rows, failing, first_line, workers
from headrace.config.console.history import StateHistory
from headrace.core.model.configstate import (
    ConfigState,
    ConnectorConfigured,
    TargetStateChanged,
    TaskConfigured,
    TasksCommitted,
    fold,
)
from headrace.core.model.plugins import PluginCatalog, PluginDescriptor
from headrace.core.model.status import EMPTY, StatusRemoved, StatusReported, UnitStatus, apply
from headrace.core.model.structs import State, Target, WorkUnit
from headrace.core.storage.topiclog import LogRecord

PY_TRACE = (
    "Traceback (most recent call last):\n"
    '  File "task.py", line 3, in poll\n'
    "    raise RuntimeError(...)\n"
    "RuntimeError: password s3cr3t refused\n"
)
JAVA_TRACE = "org.apache.kafka.connect.errors.ConnectException: no s3cr3t\n\tat A.b(A.java:1)\n"


def configs() -> ConfigState:
    return fold(
        [
            ConnectorConfigured("src", {"connector.class": "Gen", "password": "s3cr3t"}),
            TaskConfigured("src", 0, {}),
            TaskConfigured("src", 1, {}),
            TasksCommitted("src", 2),
            ConnectorConfigured(
                "snk", {"connector.class": "Sink", "connector.plugin.version": "2.0.0"}
            ),
            TargetStateChanged("snk", Target.PAUSED),
        ]
    )


def statuses(*reports: UnitStatus):  # type: ignore[no-untyped-def]
    state = EMPTY
    for status in reports:
        state = apply(state, StatusReported(status))
    return state


def kind(config: object) -> str:
    return "sink" if dict(config)["connector.class"] == "Sink" else "source"  # type: ignore[call-overload]


INSTALLED = PluginCatalog(
    (
        PluginDescriptor("gen.GenConnector", "1.2.0", "source", "gen", "GenConnector", Path("/g")),
        PluginDescriptor("sinks.Sink", "2.0.0", "sink", "sinks", "Sink", Path("/s2")),
        PluginDescriptor("sinks.Sink", "3.0.0", "sink", "sinks", "Sink", Path("/s3")),
    )
)


def plugin_of(config: Mapping[str, str]) -> PluginDescriptor | None:
    version = config.get("connector.plugin.version")
    return INSTALLED.resolve(config["connector.class"], version)


def test_a_row_counts_tasks_names_its_worker_and_version_and_hides_secrets_in_the_error() -> None:
    state = configs()
    reported = statuses(
        UnitStatus(WorkUnit.of("src"), State.RUNNING, "w1", plugin_version="1.2.0"),
        UnitStatus(WorkUnit("src", 0), State.RUNNING, "w1"),
        UnitStatus(WorkUnit("src", 1), State.FAILED, "w2", trace=PY_TRACE),
    )
    assert failing(state, reported) == {"src"}
    rows = connector_rows(state, reported, kind, plugin_of, {"snk": 42}, {"src": ["s3cr3t"]})
    assert [r["name"] for r in rows] == ["snk", "src"]
    snk, src = rows
    assert src == {
        "name": "src",
        "type": "source",
        "state": "RUNNING",
        "target": "RUNNING",
        "tasks": {"total": 2, "running": 1, "failed": 1},
        "plugin": "Gen",
        "plugin_class": "gen.GenConnector",
        "version": "1.2.0",
        "worker": "w1",
        "lag": None,
        "error": "task 1: RuntimeError: password [hidden] refused",
    }
    # Nothing reported yet: unassigned, its version the one its config asks for.
    assert (snk["state"], snk["target"], snk["version"], snk["lag"]) == (
        "UNASSIGNED",
        "PAUSED",
        "2.0.0",
        42,
    )


def test_a_row_names_the_class_an_alias_stands_for_and_the_version_it_would_run() -> None:
    state = fold(
        [
            ConnectorConfigured("latest", {"connector.class": "Sink"}),
            ConnectorConfigured("none", {"connector.class": "Missing"}),
        ]
    )
    latest, none = connector_rows(state, EMPTY, kind, plugin_of_or_none, {}, {})
    assert (latest["plugin"], latest["plugin_class"], latest["version"]) == (
        "Sink",
        "sinks.Sink",
        "3.0.0",
    )
    assert (none["plugin"], none["plugin_class"], none["version"]) == ("Missing", "", "")


def plugin_of_or_none(config: Mapping[str, str]) -> PluginDescriptor | None:
    return plugin_of(config) if config["connector.class"] != "Missing" else None


def test_a_trace_is_shown_by_what_it_says() -> None:
    assert first_line(PY_TRACE) == "RuntimeError: password s3cr3t refused"
    assert first_line(JAVA_TRACE).startswith("org.apache.kafka.connect.errors.ConnectException")
    assert first_line("") == ""


def test_workers_list_what_runs_on_them() -> None:
    reported = statuses(
        UnitStatus(WorkUnit.of("a"), State.RUNNING, "w1"),
        UnitStatus(WorkUnit("a", 0), State.FAILED, "w2"),
        UnitStatus(WorkUnit("a", 1), State.UNASSIGNED, "w2"),
    )
    assert workers(reported) == {"w1": ["a"], "w2": ["a/0"]}


def report(unit: WorkUnit, state: State, worker: str, at_ms: int) -> tuple[object, LogRecord]:
    return StatusReported(UnitStatus(unit, state, worker)), LogRecord(0, 0, "", b"", at_ms)


class Folded:
    """A status store as the history watches it: told of each event before it is folded."""

    def __init__(self, *found: UnitStatus) -> None:
        self.state = statuses(*found)
        self.history = StateHistory(
            lambda: self.state,
            lambda name: [WorkUnit.of(name)] + [WorkUnit(name, i) for i in range(2)],
        )

    def read(self, event: object, record: LogRecord) -> None:
        self.history.seen(event, record)  # type: ignore[arg-type]
        self.state = apply(self.state, event)  # type: ignore[arg-type]


def test_history_begins_with_what_the_start_found_then_each_change_in_time_order() -> None:
    unit, task = WorkUnit.of("a"), WorkUnit("a", 0)
    store = Folded(UnitStatus(unit, State.RUNNING, "w1"), UnitStatus(task, State.RUNNING, "w1"))
    found = [(0, unit, "RUNNING", "w1"), (0, task, "RUNNING", "w1")]
    assert [(c.at_ms, c.unit, c.state, c.worker) for c in store.history.of("a")] == found
    for event, record in (
        report(unit, State.RUNNING, "w1", 20),  # the same again: not a change
        report(unit, State.RUNNING, "w2", 30),  # moved
        report(task, State.FAILED, "w1", 25),  # from another partition, read later
        report(unit, State.PAUSED, "w2", 40),
    ):
        store.read(event, record)
    assert [(c.at_ms, c.unit, c.state, c.worker) for c in store.history.of("a")] == [
        *found,
        (25, task, "FAILED", "w1"),
        (30, unit, "RUNNING", "w2"),
        (40, unit, "PAUSED", "w2"),
    ]
    store.read(StatusRemoved(unit), LogRecord(0, 0, "", None, 50))
    assert store.history.of("b") == [] and "a" not in store.history._changes


@given(st.lists(st.sampled_from(list(State)), max_size=300))
def test_history_is_bounded_per_connector_and_holds_changes_only(states: list[State]) -> None:
    store = Folded()
    store.history = StateHistory(lambda: store.state, lambda name: [WorkUnit.of(name)], kept=10)
    for i, state in enumerate(states):
        store.read(*report(WorkUnit.of("a"), state, "w", i + 1))
    kept = store.history.of("a")
    assert len(kept) <= 10
    assert all(a.state != b.state for a, b in itertools.pairwise(kept))
