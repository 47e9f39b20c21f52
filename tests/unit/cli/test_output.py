"""What the ``headrace`` command prints, from the config service's messages: Connect's JSON
shapes, the tables, ``describe``, and the ``--wait`` loop's verdicts, all without a service."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import yaml

from headrace.cli.output import (
    connectors_table,
    describe_text,
    offsets_table,
    serialize,
    table,
    trace_headline,
    validation_table,
)
from headrace.cli.shapes import (
    config_infos_json,
    describe_json,
    expanded_json,
    key_json,
    status_json,
)
from headrace.cli.waiting import GONE, Progress, connector_progress, task_progress, wait_all
from headrace.clients.config import ConnectorInfo, ConnectorStatus, TaskInfo, UnitState
from headrace.core.model.configinfo import ConfigInfo, ConfigInfos, KeyInfo, ValueInfo
from headrace.core.model.structs import State, Target

PY_TRACE = (
    "Traceback (most recent call last):\n"
    '  File "task.py", line 3, in poll\n'
    "    raise ValueError('boom')\n"
    "ValueError: boom\n"
)


def info(name: str = "gen", **config: str) -> ConnectorInfo:
    return ConnectorInfo(
        name=name,
        config={"connector.class": "Gen", "name": name, **config},
        tasks=(TaskInfo(0, {}), TaskInfo(1, {})),
        type="source",
        target_state=Target.RUNNING,
    )


def status(name: str = "gen", *task_states: str, trace: str = "") -> ConnectorStatus:
    return ConnectorStatus(
        name=name,
        type="source",
        connector=UnitState(-1, State.RUNNING, worker_id="w1", plugin_version="1.0.0"),
        tasks=tuple(
            UnitState(i, State(s), worker_id="w2", plugin_version="1.0.0", trace=trace)
            for i, s in enumerate(task_states)
        ),
    )


def test_status_is_connects_status_json_with_the_version_each_unit_runs() -> None:
    assert status_json(status("gen", "RUNNING", "FAILED", trace="boom")) == {
        "name": "gen",
        "connector": {"state": "RUNNING", "worker_id": "w1", "version": "1.0.0"},
        "tasks": [
            {"state": "RUNNING", "worker_id": "w2", "id": 0, "version": "1.0.0", "trace": "boom"},
            {"state": "FAILED", "worker_id": "w2", "id": 1, "version": "1.0.0", "trace": "boom"},
        ],
        "type": "source",
    }


def test_a_listing_is_connects_expanded_listing() -> None:
    listing = expanded_json([(info("gen"), status("gen", "RUNNING"))])
    assert list(listing) == ["gen"]
    assert listing["gen"]["info"] == {
        "name": "gen",
        "config": {"connector.class": "Gen", "name": "gen"},
        "tasks": [{"connector": "gen", "task": 0}, {"connector": "gen", "task": 1}],
        "type": "source",
    }
    assert listing["gen"]["status"]["connector"]["state"] == "RUNNING"


def test_a_key_without_default_or_group_leaves_them_out_as_connect_does() -> None:
    key = KeyInfo(name="topic", type="STRING", importance="HIGH")
    assert "default_value" not in key_json(key) and "group" not in key_json(key)
    key = dataclasses.replace(key, default_value="", group="Common")
    assert key_json(key)["default_value"] == "" and key_json(key)["group"] == "Common"


def validated(*errors: str) -> dict[str, Any]:
    infos = ConfigInfos(
        name="com.example.GenConnector",
        configs=(
            ConfigInfo(
                KeyInfo(name="tasks.max", type="INT"),
                ValueInfo(name="tasks.max", value="0", errors=errors),
            ),
            ConfigInfo(KeyInfo(name="label", type="STRING"), ValueInfo(name="label")),
        ),
    )
    return config_infos_json(infos)


def test_validation_lists_only_the_keys_with_errors() -> None:
    infos = validated("tasks.max: must be at least 1")
    assert infos["error_count"] == 1
    assert "value" not in infos["configs"][1]["value"]  # neither set nor defaulted
    assert validation_table(infos).splitlines() == [
        "KEY        VALUE  ERROR",
        "tasks.max  0      tasks.max: must be at least 1",
    ]
    assert validation_table(validated()) == "com.example.GenConnector: no errors in 2 keys\n"


def test_the_connectors_table_counts_running_tasks() -> None:
    listing = expanded_json(
        [
            (info("gen"), status("gen", "RUNNING", "FAILED")),
            (
                info("idle"),
                ConnectorStatus("idle", "sink", UnitState(-1, State.UNASSIGNED), ()),
            ),
        ]
    )
    assert connectors_table(listing).splitlines() == [
        "NAME  TYPE    STATE       TASKS  PLUGIN VERSION  WORKER",
        "gen   source  RUNNING     1/2    1.0.0           w1",
        "idle  sink    UNASSIGNED  0/0    <none>          <none>",
    ]


def test_a_table_never_folds_in_a_pipe_and_shows_markup_as_text() -> None:
    wide = "x" * 300
    lines = table(("A", "B"), [[wide, "[bold]not markup[/bold]"]]).splitlines()
    assert lines[1] == f"{wide}  [bold]not markup[/bold]"
    folded = table(("A", "B"), [["a", "word " * 20]], width=30).splitlines()
    assert len(folded) > 2 and all(len(line) <= 30 for line in folded)


def test_json_and_yaml_carry_the_same_data() -> None:
    data = {"name": "gen", "tasks": [{"id": 0, "state": "RUNNING"}], "offsets": None}
    assert json.loads(serialize(data, "json")) == data
    assert yaml.safe_load(serialize(data, "yaml")) == data
    assert serialize(data, "yaml").startswith("name: gen\n")  # Connect's key order, not sorted


def test_a_traces_headline_is_the_exception_line() -> None:
    assert trace_headline(PY_TRACE) == "ValueError: boom"
    java = "org.apache.kafka.connect.errors.ConnectException: no\n\tat Foo.bar(Foo.java:1)"
    assert trace_headline(java) == "org.apache.kafka.connect.errors.ConnectException: no"
    assert trace_headline("") == ""


def test_describe_shows_config_status_offsets_and_traces_in_sections() -> None:
    offsets = [{"partition": {"task": 0}, "offset": {"next": 5}}]
    described = describe_json(
        info("gen", topic="t"), status("gen", "RUNNING", "FAILED", trace=PY_TRACE), offsets
    )
    assert described["target_state"] == "RUNNING"
    assert described["offsets"] == offsets
    text = describe_text(described)
    assert text.startswith("Name:          gen\nType:          source\nTarget state:  RUNNING\n")
    assert "Connector:     RUNNING on w1, version 1.0.0\n" in text
    assert "Tasks:         1/2 running\n" in text
    assert "  topic            t\n" in text
    assert "  1   FAILED   w2      1.0.0    ValueError: boom\n" in text
    assert '  {"task":0}  {"next":5}\n' in text
    assert "Traces:\n  task 0:\n    Traceback (most recent call last):\n" in text


def test_offsets_show_a_forgotten_offset_as_none() -> None:
    found = {"offsets": [{"partition": {"kafka_topic": "t", "kafka_partition": 0}, "offset": None}]}
    assert offsets_table(found).splitlines()[1] == '{"kafka_partition":0,"kafka_topic":"t"}  <none>'


def unit(state: str, task: int = -1, trace: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {"state": state, "worker_id": "w1", "trace": trace}
    return out | ({"id": task} if task >= 0 else {})


def connector(state: str, *tasks: str, trace: str = "") -> dict[str, Any]:
    return {
        "connector": unit(state),
        "tasks": [unit(s, i, trace if s == "FAILED" else "") for i, s in enumerate(tasks)],
    }


def test_running_needs_the_connector_and_every_task_and_at_least_one_task() -> None:
    assert connector_progress("RUNNING", connector("RUNNING", "RUNNING", "RUNNING")).done
    assert not connector_progress("RUNNING", connector("RUNNING")).done  # tasks not made yet
    late = connector_progress("RUNNING", connector("RUNNING", "RUNNING", "FAILED", trace=PY_TRACE))
    assert not late.done
    assert late.line == (
        "connector RUNNING on w1, 1/2 tasks RUNNING; task 1 FAILED on w1: ValueError: boom"
    )
    assert not connector_progress("RUNNING", None).done


def test_paused_stopped_and_gone() -> None:
    assert connector_progress("PAUSED", connector("PAUSED", "PAUSED")).done
    assert not connector_progress("PAUSED", connector("PAUSED", "RUNNING")).done
    assert connector_progress("STOPPED", connector("STOPPED")).done  # a stopped one has no tasks
    assert connector_progress(GONE, None) == Progress(True, "deleted")
    assert not connector_progress(GONE, connector("RUNNING")).done
    assert task_progress("RUNNING", unit("RUNNING", 0)).done
    assert not task_progress("RUNNING", None).done


class Clock:
    """Time that passes only when the loop sleeps."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def test_wait_all_stops_at_the_first_round_where_all_are_done() -> None:
    clock, shown = Clock(), list[str]()
    answers = iter([Progress(False, "starting"), Progress(True, "up")])
    last = wait_all(
        {"connector/a": lambda: next(answers), "connector/b": lambda: Progress(True, "up")},
        timeout=10,
        show=shown.append,
        clock=clock,
        sleep=clock.advance,
    )
    assert last == {"connector/a": Progress(True, "up"), "connector/b": Progress(True, "up")}
    assert shown == ["waiting for connector/a (1/2 done): starting"]
    assert clock.now < 1


def test_wait_all_gives_up_at_the_deadline_with_where_each_is() -> None:
    clock = Clock()
    last = wait_all(
        {"connector/a": lambda: Progress(False, "connector UNASSIGNED")},
        timeout=5,
        show=lambda _: None,
        clock=clock,
        sleep=clock.advance,
    )
    assert last == {"connector/a": Progress(False, "connector UNASSIGNED")}
    assert 5 <= clock.now < 5.1  # the last sleep is cut to the deadline
