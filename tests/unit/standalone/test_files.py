"""The files standalone mode starts from, as Kafka Connect's quickstart gives them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from headrace.core.model.workerconfig import exactly_once_source
from headrace.standalone.files import (
    ConnectorFile,
    StandaloneConfigError,
    connector_from,
    read_connector,
    read_worker,
    worker_from,
)
from tests.support import QUICKSTART_SOURCE

# Kafka's config/connect-standalone.properties, comments left out, as the quickstart uses it.
QUICKSTART_WORKER = """\
bootstrap.servers=localhost:9092
key.converter=org.apache.kafka.connect.json.JsonConverter
value.converter=org.apache.kafka.connect.json.JsonConverter
key.converter.schemas.enable=true
value.converter.schemas.enable=true
offset.storage.file.filename=/tmp/connect.offsets
offset.flush.interval.ms=10000
plugin.path=libs/connect-file-4.1.0.jar
"""


def test_the_quickstart_worker_file_is_taken_as_connect_takes_it(tmp_path: Path) -> None:
    path = tmp_path / "connect-standalone.properties"
    path.write_text(QUICKSTART_WORKER)
    worker = read_worker(path, cwd=tmp_path)
    assert worker.bootstrap_servers == "localhost:9092"
    assert worker.offsets_file == Path("/tmp/connect.offsets")
    assert worker.offset_flush_interval_ms == 10_000
    assert worker.plugin_path == (tmp_path / "libs/connect-file-4.1.0.jar",)
    # This machine only: Connect binds every interface, open; an address is named to serve on.
    assert (worker.rest_host, worker.rest_port) == ("127.0.0.1", 8083)
    assert worker.worker_config == {
        "key.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "key.converter.schemas.enable": "true",
        "value.converter.schemas.enable": "true",
        "exactly.once.source.support": "disabled",  # as Connect's standalone workers write
    }


@pytest.mark.parametrize("mode", ["disabled", "preparing", "DISABLED", "enabled"])
def test_exactly_once_source_support_is_taken_as_written(mode: str) -> None:
    props = {"offset.storage.file.filename": "o", "exactly.once.source.support": mode}
    worker = worker_from(props, "w", Path("/w"))
    assert worker.worker_config == {"exactly.once.source.support": mode}
    assert exactly_once_source(worker.worker_config) is (mode == "enabled")


def test_a_mode_that_does_not_exist_is_refused_naming_it() -> None:
    props = {"offset.storage.file.filename": "o", "exactly.once.source.support": "always"}
    with pytest.raises(StandaloneConfigError, match=r"^w: exactly.once.source.support"):
        worker_from(props, "w", Path("/w"))


@pytest.mark.parametrize(
    ("lines", "address"),
    [
        ("listeners=http://localhost:18083", ("localhost", 18083)),
        ("listeners=http://:9000,http://other:9001", ("127.0.0.1", 9000)),
        ("listeners=http://0.0.0.0:9000", ("0.0.0.0", 9000)),
        ("rest.host.name=127.0.0.1\nrest.port=8084", ("127.0.0.1", 8084)),
    ],
)
def test_the_rest_address_comes_from_listeners_or_the_older_keys(
    lines: str, address: tuple[str, int]
) -> None:
    props = dict(line.split("=", 1) for line in lines.splitlines())
    worker = worker_from({"offset.storage.file.filename": "o", **props}, "w", Path("/w"))
    assert (worker.rest_host, worker.rest_port) == address


@pytest.mark.parametrize(
    ("props", "says"),
    [
        ({}, "offset.storage.file.filename: required"),
        ({"group.id": "g"}, "group.id: distributed mode's"),
        ({"offset.storage.topic": "t"}, "offset.storage.topic: distributed mode's"),
        ({"offset.flush.interval.ms": "soon"}, "'soon' is not a whole number"),
        ({"listeners": "https://:8443"}, "only http:// is served here"),
        ({"listeners": "http://:8083", "rest.port": "8084"}, "name the address once"),
        ({"rest.port": "99999"}, "rest.port: '99999' is not a port"),
        ({"producer.acks": "1"}, "producer.acks: '1' is not one of all"),
        ({"what.is.this": "x"}, "what.is.this: not a worker config key headrace honours"),
    ],
)
def test_a_worker_key_it_cannot_honour_is_refused_naming_the_file_and_key(
    props: dict[str, str], says: str
) -> None:
    base = {} if not props else {"offset.storage.file.filename": "/tmp/o"}
    with pytest.raises(StandaloneConfigError, match=r"^worker\.properties: ") as refused:
        worker_from({**base, **props}, "worker.properties", Path("/w"))
    assert says in str(refused.value)


def test_a_connector_file_is_properties_or_either_json_shape(tmp_path: Path) -> None:
    source = tmp_path / "connect-file-source.properties"
    source.write_text(QUICKSTART_SOURCE)
    expected = {
        "name": "local-file-source",
        "connector.class": "FileStreamSource",
        "tasks.max": "1",
        "file": "test.txt",
        "topic": "connect-test",
    }
    assert read_connector(source) == ConnectorFile("local-file-source", expected)
    flat = '{"name": "local-file-source", "connector.class": "FileStreamSource", "tasks.max": 1,'
    flat += ' "file": "test.txt", "topic": "connect-test"}'
    assert connector_from(flat, "flat.json") == ConnectorFile("local-file-source", expected)
    request = {"name": "local-file-source", "config": {**expected}, "initial_state": "stopped"}
    del request["config"]["name"]  # type: ignore[attr-defined]  # the request's name fills it
    assert connector_from(json.dumps(request), "request.json") == ConnectorFile(
        "local-file-source", expected, "STOPPED"
    )


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("connector.class=X\n", "name: required"),
        ('{"connector.class": "X"}', "name: required"),
        ('{"name": "a", "config": {"name": "b"}}', "'b' in config is not 'a'"),
        ('{"name": "a", "config": {}, "initial_state": "ASLEEP"}', "'ASLEEP' is not one of"),
        ('{"name": "a", "config": {}, "offsets": []}', "offsets: not a field"),
        ('{"name": "a", "tasks": {"max": 1}}', "tasks: a config value is a string"),
        ("[1, 2]", "a JSON connector config is an object"),
    ],
)
def test_a_connector_file_it_cannot_take_is_refused_naming_it(text: str, says: str) -> None:
    with pytest.raises(StandaloneConfigError, match=r"^c\.json: ") as refused:
        connector_from(text, "c.json")
    assert says in str(refused.value)


def test_a_file_that_cannot_be_read_is_named(tmp_path: Path) -> None:
    with pytest.raises(StandaloneConfigError, match=r"missing\.properties: cannot be read"):
        read_worker(tmp_path / "missing.properties")
