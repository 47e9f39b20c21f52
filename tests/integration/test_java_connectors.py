"""Kafka Connect's own Java connectors in a Python plugin process with its JVM host, against the
real broker the suite starts.

The connectors are installed as a user installs them (``headrace plugins install``, through
Maven) into a plugin path of the module's own; each test spawns the plugin process for one
installed version, drives it over its socket as the worker does, and checks what reached Kafka
and the files.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from headrace.isolation import jvm
from headrace.isolation.plugins import discover
from headrace.v1 import plugin_pb2 as pb
from tests.support import consume, eventually, plugin_host, start_all

pytestmark = pytest.mark.kafka

FILE_VERSIONS = ("3.9.1", "4.3.0")
SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
SINK = "org.apache.kafka.connect.file.FileStreamSinkConnector"


@pytest.fixture(scope="module")
def java_plugins(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[tuple[str, str], Path]]:
    """connect-file at two versions, installed through Maven: each connector's manifest, by
    (class, version)."""
    entry = tmp_path_factory.mktemp("plugin-path")
    for version in FILE_VERSIONS:
        jvm.install(f"org.apache.kafka:connect-file:{version}", entry)
    catalog = discover([entry], tmp_path_factory.mktemp("jvm-plugins"))
    assert not catalog.broken, catalog.broken
    yield {(p.class_name, p.version): p.manifest for p in catalog.plugins}


def test_both_installed_versions_are_listed_with_the_version_they_were_installed_at(
    java_plugins: dict[tuple[str, str], Path],
) -> None:
    assert sorted(java_plugins) == sorted((cls, v) for cls in (SINK, SOURCE) for v in FILE_VERSIONS)


async def test_filestream_source_then_sink_move_every_line_in_order(
    kafka: str, cluster: str, tmp_path: Path, java_plugins: dict[tuple[str, str], Path]
) -> None:
    lines = [f"line {i} of the file: é, ✓" for i in range(500)]
    source_file, sink_file = tmp_path / "in.txt", tmp_path / "out.txt"
    source_file.write_text("".join(f"{line}\n" for line in lines))
    topic = f"{cluster}-lines"
    strings = {
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.storage.StringConverter",
    }
    source = {
        "name": "file-in",
        "connector.class": SOURCE,
        "tasks.max": "1",
        "file": str(source_file),
        "topic": topic,
        **strings,
    }
    sink = {
        "name": "file-out",
        "connector.class": SINK,
        "tasks.max": "1",
        "file": str(sink_file),
        "topics": topic,
        **strings,
    }
    async with plugin_host(java_plugins[(SOURCE, "3.9.1")], kafka, cluster, tmp_path) as host:
        described = await host.stub.Describe(pb.DescribeRequest())
        assert (described.plugin_class, described.version) == (SOURCE, "3.9.1")
        await start_all(host, "file-in", source)
        records = await consume(kafka, topic, len(lines))
        # Connect's StringConverter: each line's UTF-8 bytes, no key; in order.
        assert [r.value.decode() for r in records if r.value is not None] == lines
        assert {r.key for r in records} == {None}
    async with plugin_host(java_plugins[(SINK, "4.3.0")], kafka, cluster, tmp_path) as host:
        await start_all(host, "file-out", sink)

        def written() -> list[str] | None:
            found = sink_file.read_text().splitlines() if sink_file.exists() else []
            return found if len(found) >= len(lines) else None

        assert await eventually("every line in the sink's file", written) == lines
