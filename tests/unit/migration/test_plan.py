"""What a migration plans for a connector, from what the two sides answered."""

from __future__ import annotations

from typing import Any

import pytest

from headrace.migration.__main__ import supplied_values
from headrace.migration.plan import (
    HIDDEN,
    clean,
    offsets_summary,
    plan_move,
    validation_problems,
    version_to_run,
)

PLUGINS = [
    {"class": "org.apache.kafka.connect.file.FileStreamSinkConnector", "version": "1.0.0"},
    {"class": "org.apache.kafka.connect.file.FileStreamSinkConnector", "version": "1.10.0"},
    {"class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "version": "1.0.0"},
]
SINK = {"connector.class": "FileStreamSink", "file": "out.txt", "topics": "t"}
VALID: dict[str, Any] = {"error_count": 0, "configs": []}


def move(config: dict[str, str], **given: Any) -> Any:
    arguments: dict[str, Any] = {
        "supplied": {},
        "plugins": PLUGINS,
        "validation": VALID,
        "refused": None,
        "target": "headrace",
        "next_step": "create it STOPPED on the side it goes to",
    }
    return plan_move("files", "sink", config, [], **(arguments | given))


@pytest.mark.parametrize(
    ("config", "version"),
    [
        ({"connector.class": "FileStreamSink"}, "1.10.0"),  # an alias; the latest, as numbers
        ({"connector.class": "FileStreamSinkConnector"}, "1.10.0"),
        ({"connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector"}, "1.10.0"),
        ({"connector.class": "FileStreamSink", "connector.plugin.version": "1.0.0"}, "1.0.0"),
        ({"connector.class": "FileStreamSink", "connector.plugin.version": "9.9"}, ""),
        ({"connector.class": "JdbcSink"}, ""),
    ],
)
def test_the_version_it_will_run_is_the_pinned_one_or_the_latest(
    config: dict[str, str], version: str
) -> None:
    assert version_to_run(PLUGINS, config) == version


def test_a_connector_the_target_runs_and_validates_can_move() -> None:
    planned = move(SINK)
    assert planned.movable and planned.version == "1.10.0" and planned.plugin == "FileStreamSink"


def test_a_plugin_the_target_does_not_have_blocks_the_move_naming_it() -> None:
    planned = move({**SINK, "connector.class": "JdbcSink"})
    assert planned.blockers == (
        "headrace has no plugin 'JdbcSink' at the version the config asks for",
    )


def test_each_key_the_target_refuses_is_named() -> None:
    answer = {
        "error_count": 2,
        "configs": [
            {"value": {"name": "file", "errors": ["must lie inside HEADRACE_FILE_ROOTS"]}},
            {"value": {"name": "topics", "errors": []}},
            {"value": {"name": "odd.key", "errors": ["headrace does not honour it"]}},
        ],
    }
    assert validation_problems(answer) == [
        "file: must lie inside HEADRACE_FILE_ROOTS",
        "odd.key: headrace does not honour it",
    ]
    assert move(SINK, validation=answer).blockers == tuple(validation_problems(answer))


def test_a_hidden_value_is_asked_for_and_a_supplied_one_never_shown() -> None:
    hidden = {**SINK, "db.password": HIDDEN}
    assert move(hidden, validation=None).blockers == (
        "db.password: hidden by the side it comes from; supply it with --set db.password=... "
        '(over the API, in "set")',
    )
    refusal = "db.password: 's3cret-value' is too short"
    planned = move(hidden, supplied={"db.password": "s3cret-value"}, refused=refusal)
    assert planned.config["db.password"] == "s3cret-value"  # what will be created
    assert planned.blockers == (f"db.password: '{HIDDEN}' is too short",)
    assert clean("a b true", {"k": "", "t": "true"}) == "a b true"  # too short to be a secret


def test_a_conflict_between_the_sides_blocks_the_move() -> None:
    planned = move(SINK, conflict="it is RUNNING on both sides")
    assert planned.blockers == ("it is RUNNING on both sides",)


def test_offsets_are_summed_up_for_a_table() -> None:
    sink = [
        {"partition": {"kafka_topic": "t", "kafka_partition": p}, "offset": {"kafka_offset": 7}}
        for p in range(5)
    ]
    assert offsets_summary("sink", sink) == "t-0@7, t-1@7, t-2@7 (+2 more)"
    source = [{"partition": {"filename": "in.txt"}, "offset": {"position": 42}}]
    assert offsets_summary("source", source) == '{"filename":"in.txt"}: {"position":42}'
    assert offsets_summary("source", []) == "none"


def test_set_values_go_to_every_connector_or_to_one(tmp_path: Any) -> None:
    (tmp_path / "password").write_text("from-a-file\n")
    assert supplied_values(["a=1", "files:b=2", f"c=@{tmp_path / 'password'}", "d=x=y"]) == {
        None: {"a": "1", "c": "from-a-file", "d": "x=y"},
        "files": {"b": "2"},
    }


@pytest.mark.parametrize("entry", ["db.password:s3cret-value", "=s3cret-value"])
def test_a_set_entry_that_is_not_key_value_is_refused_without_showing_it(entry: str) -> None:
    with pytest.raises(ValueError, match=r"is not \[CONNECTOR:\]KEY=VALUE") as refused:
        supplied_values([entry])
    assert "s3cret" not in str(refused.value)


def test_a_password_the_side_it_comes_from_shows_in_clear_is_never_shown_either() -> None:
    answer = {
        "error_count": 1,
        "configs": [
            {
                "definition": {"name": "connection.password", "type": "PASSWORD"},
                "value": {"name": "connection.password", "errors": ["'hunter22' is refused"]},
            }
        ],
    }
    planned = move({**SINK, "connection.password": "hunter22"}, validation=answer)
    assert planned.blockers == (f"connection.password: '{HIDDEN}' is refused",)
    assert "hunter22" in planned.secrets


@pytest.mark.parametrize("pin", ["latest", "[1.0,2.0)"])
def test_a_version_pin_kip_891_allows_is_not_taken_for_a_missing_version(pin: str) -> None:
    assert move({**SINK, "connector.plugin.version": pin}).movable
