"""What a migration plans for a connector, from what the two sides answered."""

from __future__ import annotations

from typing import Any

import pytest

from headrace.components.converters import DEFAULT_SUB_CONFIG
from headrace.migration.__main__ import supplied_values
from headrace.migration.plan import (
    CONNECT_JSON,
    HEADRACE_DEFAULT_SUB_CONFIG,
    HIDDEN,
    clean,
    full_class,
    install_coordinate,
    offsets_summary,
    plan_move,
    validation_problems,
    version_to_run,
    with_implicit,
    with_implicit_converters,
)

PLUGINS = [
    {"class": "org.apache.kafka.connect.file.FileStreamSinkConnector", "version": "1.0.0"},
    {"class": "org.apache.kafka.connect.file.FileStreamSinkConnector", "version": "1.10.0"},
    {"class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "version": "1.0.0"},
]
SINK = {"connector.class": "FileStreamSink", "file": "/data/out.txt", "topics": "t"}
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


@pytest.mark.parametrize("path", ["out.txt", "./out.txt", "../data/out.txt"])
def test_a_relative_file_blocks_the_move_since_each_side_finds_it_elsewhere(path: str) -> None:
    planned = move({**SINK, "file": path})
    assert not planned.movable
    [blocker] = planned.blockers
    assert blocker.startswith(f"file: {path!r} is relative") and "absolute path" in blocker


@pytest.mark.parametrize("path", ["/data/out.txt", "", "${file:/etc/paths.properties:out}"])
def test_an_absolute_file_none_or_a_provider_s_reference_moves(path: str) -> None:
    assert move({**SINK, "file": path}).movable


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


WORKER = {
    "bootstrap.servers": "kafka:9092",
    "key.converter": "org.apache.kafka.connect.storage.StringConverter",
    "value.converter": "org.apache.kafka.connect.json.JsonConverter",
    "value.converter.schemas.enable": "false",
}


def test_a_connector_moved_from_connect_takes_the_converters_its_worker_gave_it() -> None:
    """Found moving a FileStream pair whose worker set StringConverter and whose configs named
    none: on headrace they got its default JSON converter, and the sink failed on its first
    record. The worker's converters, and their keys, are written into the moved config; a
    config's own are kept."""
    config, unknown = with_implicit_converters(SINK, WORKER, from_connect=True)
    assert unknown == []
    assert config == {
        **SINK,
        "key.converter": WORKER["key.converter"],
        "value.converter": WORKER["value.converter"],
        "value.converter.schemas.enable": "false",
    }
    own = {**SINK, "value.converter": "org.apache.kafka.connect.storage.StringConverter"}
    config, _ = with_implicit_converters(own, WORKER, from_connect=True)
    assert config["value.converter"] == own["value.converter"]
    assert "value.converter.schemas.enable" not in config  # the worker's, for its converter


def test_converters_a_connect_worker_gave_cannot_be_guessed_and_block_the_move() -> None:
    config, unknown = with_implicit_converters(SINK, None, from_connect=True)
    assert config == SINK and unknown == ["key.converter", "value.converter"]
    planned = move(config, unknown_converters=unknown)
    assert not planned.movable
    assert all("--worker-properties" in b for b in planned.blockers)
    assert [b.split(":")[0] for b in planned.blockers] == ["key.converter", "value.converter"]
    # Said with --set, they are known.
    supplied = {"key.converter": "StringConverter", "value.converter": "StringConverter"}
    assert move(config, unknown_converters=unknown, supplied=supplied).movable


def test_a_connector_moved_to_connect_has_headrace_s_converters_written_out() -> None:
    """So that Kafka Connect's worker does not read its topics with converters of its own."""
    ours = {"value.converter": "org.apache.kafka.connect.storage.StringConverter"}
    config, unknown = with_implicit_converters(SINK, ours, from_connect=False)
    assert unknown == []
    assert config == {
        **SINK,
        "value.converter": ours["value.converter"],
        "key.converter": CONNECT_JSON,
        "key.converter.schemas.enable": "false",
    }
    assert HEADRACE_DEFAULT_SUB_CONFIG == DEFAULT_SUB_CONFIG  # what headrace's default is


@pytest.mark.parametrize(
    ("class_name", "version", "coordinate"),
    [
        ("org.apache.kafka.connect.file.FileStreamSinkConnector", "3.9.1",
         "org.apache.kafka:connect-file:3.9.1"),
        ("org.apache.kafka.connect.mirror.MirrorHeartbeatConnector", "4.1.0",
         "org.apache.kafka:connect-mirror:4.1.0"),
        ("io.debezium.connector.postgresql.PostgresConnector", "3.0.0.Final",
         "io.debezium:debezium-connector-postgres:3.0.0.Final"),
        ("io.debezium.connector.mysql.MySqlConnector", "3.0.0.Final",
         "io.debezium:debezium-connector-mysql:3.0.0.Final"),
        ("io.debezium.connector.jdbc.JdbcSinkConnector", "3.0.0.Final",
         "io.debezium:debezium-connector-jdbc:3.0.0.Final"),
        ("com.acme.SinkConnector", "1.0", ""),  # not known: no guess
        ("org.apache.kafka.connect.file.FileStreamSinkConnector", "", ""),  # no version
    ],
)  # fmt: skip
def test_the_coordinate_to_install_is_named_where_it_is_known(
    class_name: str, version: str, coordinate: str
) -> None:
    assert install_coordinate(class_name, version) == coordinate


def test_a_plugin_headrace_lacks_is_named_with_the_command_that_installs_it() -> None:
    theirs = [
        {"class": "org.apache.kafka.connect.file.FileStreamSinkConnector", "version": "3.9.1"}
    ]
    config = {**SINK, "connector.class": "FileStreamSink"}
    coordinate = install_coordinate(full_class(theirs, config), "3.9.1")
    planned = move(config, plugins=[], install=coordinate)
    assert planned.blockers == (
        "headrace has no plugin 'FileStreamSink' at the version the config asks for: install it "
        "with headrace plugins install org.apache.kafka:connect-file:3.9.1",
    )
    assert planned.install == coordinate  # what --install installs


def test_the_command_that_installs_a_lacking_plugin_is_named_though_validation_refused_it() -> None:
    coordinate = "org.apache.kafka:connect-file:4.3.0"
    refused = "connector.class: no plugin named 'FileStreamSink' is installed"
    planned = move(SINK, plugins=[], install=coordinate, refused=refused, validation=None)
    assert planned.install == coordinate
    assert any(f"headrace plugins install {coordinate}" in b for b in planned.blockers)
    assert move(SINK, plugins=[], refused=refused, validation=None).install == ""


CONNECT_WORKER = {
    "bootstrap.servers": "kafka:9092",
    "key.converter": "org.apache.kafka.connect.storage.StringConverter",
    "value.converter": "org.apache.kafka.connect.storage.StringConverter",
    "producer.acks": "1",
    "producer.compression.type": "zstd",
    "producer.security.protocol": "SASL_SSL",
    "producer.sasl.jaas.config": "[hidden]",
    "consumer.max.poll.records": "100",
    "admin.request.timeout.ms": "30000",
}


def test_what_connect_s_worker_gave_a_connector_s_clients_moves_as_its_own_overrides() -> None:
    moved, unknown = with_implicit(
        {"connector.class": "FileStreamSource"},
        "source",
        connect_worker=CONNECT_WORKER,
        our_worker={"producer.compression.type": "zstd"},  # headrace's workers give the same
        from_connect=True,
    )
    assert unknown == []
    overrides = {k: v for k, v in moved.items() if ".override." in k}
    # A source's producer and admin; not the keys of reaching Kafka, nor what headrace gives.
    assert overrides == {
        "producer.override.acks": "1",
        "admin.override.request.timeout.ms": "30000",
    }
    assert moved["value.converter"] == CONNECT_WORKER["value.converter"]


def test_a_connector_s_own_override_is_kept_and_a_sink_takes_the_consumer_s() -> None:
    config = {"connector.class": "FileStreamSink", "consumer.override.max.poll.records": "5"}
    moved, _ = with_implicit(
        config, "sink", connect_worker=CONNECT_WORKER, our_worker=None, from_connect=True
    )
    assert moved["consumer.override.max.poll.records"] == "5"
    assert "producer.override.acks" not in moved


def test_moving_to_connect_headrace_s_worker_client_settings_are_written_out() -> None:
    moved, unknown = with_implicit(
        {"connector.class": "FileStreamSource"},
        "source",
        connect_worker=None,
        our_worker={"producer.linger.ms": "5", "consumer.fetch.min.bytes": "1"},
        from_connect=False,
    )
    assert unknown == [] and moved["producer.override.linger.ms"] == "5"
    assert "consumer.override.fetch.min.bytes" not in moved
