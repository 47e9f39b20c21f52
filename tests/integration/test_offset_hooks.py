"""KIP-875's ``alterOffsets``: before a stopped connector's offsets are altered or reset, a new
instance of its class is asked, in a plugin process of the real config service (a JVM for a
Java one), and may refuse; the answer is worded as Kafka Connect words it. The recording test
plugins answer as their ``alter.offsets`` key says, and record each call."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from headrace.core.settings import BUILTIN_PLUGINS
from headrace.core.storage.topics import ensure_topic
from headrace.local.stack import Stack
from tests.support import JAVA_RECORDING, Rest, json_lines, local_settings

pytestmark = pytest.mark.kafka

TEST_PLUGINS = Path(__file__).parents[1] / "plugins"
FRAMEWORK_ONLY = (
    "The Connect framework-managed offsets for this connector have been {} successfully. "
    "However, if this connector manages offsets externally, they will need to be manually {} "
    "in the system that the connector uses."
)


@pytest.fixture(scope="module")
def rest(
    kafka: str, java_plugin_entry: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Rest, str, Path]]:
    folder = tmp_path_factory.mktemp("hooks")
    cluster = f"hooks{folder.name[-6:].replace('-', '')}"
    settings = local_settings(
        kafka, cluster, folder / "var", (BUILTIN_PLUGINS, TEST_PLUGINS, java_plugin_entry)
    )
    asyncio.run(ensure_topic(kafka, f"{cluster}-in", partitions=2))
    stack = Stack(settings)
    stack.start("config")
    try:
        yield Rest(f"http://{settings.rest_addr}"), cluster, folder
    finally:
        stack.down()


def stopped(rest: Rest, name: str, config: dict[str, str]) -> None:
    body = {"name": name, "config": config, "initial_state": "STOPPED"}
    status, answer = rest("POST", "/connectors", body)
    assert status == 201, answer


def answering(rest: Rest, name: str, config: dict[str, str], how: str) -> None:
    status, answer = rest("PUT", f"/connectors/{name}/config", {**config, "alter.offsets": how})
    assert status == 200, answer


def calls(folder: Path) -> list[dict[str, Any]]:
    return [e for e in json_lines(folder / "lifecycle.jsonl") if e["event"] == "alter_offsets"]


def test_a_sink_connector_may_refuse_an_alteration_and_is_told_of_each(
    rest: tuple[Rest, str, Path],
) -> None:
    api, cluster, folder = rest
    ledger = folder / "sink-ledger"
    topic = f"{cluster}-in"
    config = {
        "connector.class": "recording_sink.RecordingSinkConnector",
        "connector.plugin.version": "1.0.0",
        "topics": topic,
        "path": str(ledger),
        "alter.offsets": "refuse",
    }
    stopped(api, "rec", config)
    five = [
        {"partition": {"kafka_topic": topic, "kafka_partition": 0}, "offset": {"kafka_offset": 5}}
    ]
    path = "/connectors/rec/offsets"

    status, answer = api("PATCH", path, {"offsets": five})
    assert status == 500 and answer["message"] == "the recording sink keeps its offsets to itself"
    assert api("GET", path) == (200, {"offsets": []})  # nothing altered
    assert calls(ledger)[-1]["offsets"] == {f"{topic}/0": 5}

    answering(api, "rec", config, "unsupported")
    status, answer = api("PATCH", path, {"offsets": five})
    assert status == 500, answer
    assert answer["message"] == (
        "Failed to modify offsets for connector rec because it doesn't support external "
        "modification of offsets"
    )
    assert api("GET", path) == (200, {"offsets": []})

    answering(api, "rec", config, "handle")
    status, answer = api("PATCH", path, {"offsets": five})
    assert (status, answer) == (
        200,
        {"message": "The offsets for this connector have been altered successfully"},
    )
    assert api("GET", path)[1]["offsets"] == five

    answering(api, "rec", config, "")
    moved = [{**five[0], "offset": {"kafka_offset": 7}}]
    status, answer = api("PATCH", path, {"offsets": moved})
    assert (status, answer["message"]) == (200, FRAMEWORK_ONLY.format("altered", "altered"))
    assert api("GET", path)[1]["offsets"] == moved

    answering(api, "rec", config, "handle")
    status, answer = api("DELETE", path)
    assert (status, answer["message"]) == (
        200,
        "The offsets for this connector have been reset successfully",
    )
    assert calls(ledger)[-1]["offsets"] == {f"{topic}/0": None}  # every partition it had
    assert api("GET", path) == (200, {"offsets": []})
    assert len(calls(ledger)) == 5


def test_a_java_source_connector_may_refuse_an_alteration_and_is_asked_in_its_jvm(
    rest: tuple[Rest, str, Path],
) -> None:
    api, cluster, folder = rest
    ledger = folder / "source-ledger"
    config = {
        "connector.class": JAVA_RECORDING,
        "topic": f"{cluster}-out",
        "path": str(ledger),
        "alter.offsets": "refuse",
    }
    stopped(api, "java", config)
    offsets = [{"partition": {"p": 1}, "offset": {"n": 3}}]
    path = "/connectors/java/offsets"

    status, answer = api("PATCH", path, {"offsets": offsets})
    assert status == 500
    assert answer["message"] == "the recording source keeps its offsets to itself"
    assert api("GET", path) == (200, {"offsets": []})

    answering(api, "java", config, "unsupported")
    status, answer = api("PATCH", path, {"offsets": offsets})
    assert status == 500 and "doesn't support external modification of offsets" in answer["message"]

    answering(api, "java", config, "handle")
    status, answer = api("PATCH", path, {"offsets": offsets})
    assert (status, answer) == (
        200,
        {"message": "The offsets for this connector have been altered successfully"},
    )
    assert api("GET", path)[1]["offsets"] == offsets
    status, answer = api("DELETE", path)
    assert (status, answer["message"]) == (
        200,
        "The offsets for this connector have been reset successfully",
    )
    assert api("GET", path) == (200, {"offsets": []})
    assert len(calls(ledger)) == 4


def test_a_create_whose_initial_offsets_its_connector_refuses_creates_nothing(
    rest: tuple[Rest, str, Path],
) -> None:
    """KIP-995's initial offsets are an alteration too: asked of the connector first, and a
    refusal leaves no connector behind."""
    api, cluster, folder = rest
    topic = f"{cluster}-in"
    config = {
        "connector.class": "recording_sink.RecordingSinkConnector",
        "connector.plugin.version": "1.0.0",
        "topics": topic,
        "path": str(folder / "initial-ledger"),
        "alter.offsets": "refuse",
    }
    offsets = [
        {"partition": {"kafka_topic": topic, "kafka_partition": 1}, "offset": {"kafka_offset": 2}}
    ]
    body = {"name": "initial", "config": config, "initial_offsets": {"offsets": offsets}}
    status, answer = api("POST", "/connectors", body)
    assert status == 500 and answer["message"] == "the recording sink keeps its offsets to itself"
    assert api("GET", "/connectors/initial")[0] == 404
    status, answer = api("POST", "/connectors", {**body, "config": {**config, "alter.offsets": ""}})
    assert status == 201, answer
    assert api("GET", "/connectors/initial/offsets")[1]["offsets"] == offsets
