"""Settings travel between processes through the environment and come back the same."""

from __future__ import annotations

from pathlib import Path

import immutables
import pytest

from headrace.core.settings import Settings


def test_settings_read_back_from_their_environment_are_equal(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    sent = Settings(
        bootstrap_servers="127.0.0.1:1234",
        cluster="c1",
        config_addr="127.0.0.1:1",
        coordinator_addr="127.0.0.1:2",
        executor_addr="127.0.0.1:3",
        plugin_path=(tmp_path / "p1", tmp_path / "p2"),
        var_dir=tmp_path / "var",
        spark_master="local[1]",
        file_roots=(tmp_path / "f1", tmp_path / "f2"),
        worker_config=immutables.Map({"producer.linger.ms": "20", "key.converter": "string"}),
        client_override_policy="Allowlist",
        client_override_allowlist="linger.ms",
        console_origins=("https://connect.example", "http://[::1]:8080"),
        plugin_spare="off",
    )
    for name, value in sent.to_env().items():
        monkeypatch.setenv(name, value)
    assert Settings() == sent


def test_a_token_read_from_a_secret_file_loses_its_final_newline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HEADRACE_TOKEN", "3f0c9a1b2c3d4e5f6a7b\n")
    assert Settings().token == "3f0c9a1b2c3d4e5f6a7b"


def test_a_worker_properties_file_sets_clients_converters_and_the_override_policy(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / "worker.properties"
    path.write_text(
        "# as a Connect worker's\n"
        "producer.compression.type=zstd\n"
        "consumer.max.poll.records: 500\n"
        "value.converter=org.apache.kafka.connect.json.JsonConverter\n"
        "value.converter.schemas.enable=false\n"
        "connector.client.config.override.policy=Allowlist\n"
        "connector.client.config.override.allowlist=linger.ms,compression.type\n"
        "exactly.once.source.support=enabled\n"
        "topic.tracking.allow.reset=false\n"
    )
    monkeypatch.setenv("HEADRACE_WORKER_CONFIG", str(path))
    settings = Settings()
    assert settings.worker_config["producer.compression.type"] == "zstd"
    assert settings.worker_config["consumer.max.poll.records"] == "500"
    assert settings.client_override_policy == "Allowlist"
    assert settings.client_override_allowlist == "linger.ms,compression.type"
    assert settings.tracks_topics and not settings.topic_reset_allowed
    assert settings.exactly_once_source
    # The environment's policy wins over the file's.
    monkeypatch.setenv("HEADRACE_CLIENT_OVERRIDE_POLICY", "None")
    assert Settings().client_override_policy == "None"


@pytest.mark.parametrize(
    ("line", "says"),
    [
        (
            "bootstrap.servers=k:9092",
            "bootstrap.servers: not read from a worker config: "
            "headrace's services take it from KAFKA_BOOTSTRAP_SERVERS",
        ),
        ("producer.acks=1", "producer.acks: '1' is not one of all, -1; headrace's producers"),
        ("consumer.group.id=g", "consumer.group.id: not honoured in a worker config: each sink"),
        ("admin.sasl.jaas.config=x", "the plugins' login is KAFKA_PLUGIN_SASL_USERNAME"),
        ("offset.flush.timeout.ms=5000", "offset.flush.timeout.ms: not a worker config key"),
        ("connector.client.config.override.policy=Some", "'Some' is not one of None"),
        ("exactly.once.source.support=sometimes", "'sometimes' is not one of enabled, prep"),
        ("topic.tracking.enable=sometimes", "topic.tracking.enable: 'sometimes' is not true"),
    ],
)
def test_a_worker_config_key_headrace_cannot_honour_stops_the_start_named(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, line: str, says: str
) -> None:
    path = tmp_path / "worker.properties"
    path.write_text(line + "\n")
    monkeypatch.setenv("HEADRACE_WORKER_CONFIG", str(path))
    with pytest.raises(ValueError, match="HEADRACE_WORKER_CONFIG") as caught:
        Settings()
    assert says in str(caught.value)


@pytest.mark.parametrize(
    ("line", "transactional"),
    [("", True), ("disabled", False), ("PREPARING", False), ("enabled", True)],
)
def test_sources_write_in_transactions_unless_the_worker_config_says_otherwise(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, line: str, transactional: bool
) -> None:
    path = tmp_path / "worker.properties"
    path.write_text(f"exactly.once.source.support={line}\n" if line else "")
    monkeypatch.setenv("HEADRACE_WORKER_CONFIG", str(path))
    assert Settings().exactly_once_source is transactional


def test_a_worker_config_file_that_cannot_be_read_is_named(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HEADRACE_WORKER_CONFIG", str(tmp_path / "missing.properties"))
    with pytest.raises(ValueError, match=r"HEADRACE_WORKER_CONFIG: cannot read .*missing"):
        Settings()


def test_console_origins_are_written_as_a_browser_sends_them_and_anything_else_is_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(
        "HEADRACE_CONSOLE_ORIGINS", "HTTPS://Connect.Example:443/, http://proxy.example:8080"
    )
    assert Settings().console_origins == ("https://connect.example", "http://proxy.example:8080")
    for wrong in ("connect.example", "ftp://connect.example", "https://c.example/ui", "https://"):
        monkeypatch.setenv("HEADRACE_CONSOLE_ORIGINS", wrong)
        with pytest.raises(ValueError, match=f"HEADRACE_CONSOLE_ORIGINS: '{wrong}'"):
            Settings()


def test_a_plugin_spare_mode_other_than_on_or_off_is_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HEADRACE_PLUGIN_SPARE", " OFF ")
    assert Settings().plugin_spare == "off"
    monkeypatch.setenv("HEADRACE_PLUGIN_SPARE", "sometimes")
    with pytest.raises(
        ValueError, match="HEADRACE_PLUGIN_SPARE: 'sometimes' is not one of on, off"
    ):
        Settings()
