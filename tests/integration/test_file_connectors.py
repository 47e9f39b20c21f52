"""The file connectors (Kafka's FileStreamSource and FileStreamSink) in real plugin host processes,
against the real broker the suite starts: a file goes source -> topic -> sink and comes out the
same, byte for byte; a restarted source goes on from its stored position; and a ``file`` outside
the folders the operator allowed (``HEADRACE_FILE_ROOTS``) never starts; a host that only
validates configs never loads pyarrow.
"""

from __future__ import annotations

import json
from pathlib import Path

import grpc
import psutil
import pytest

from headrace.core.settings import BUILTIN_PLUGINS, Settings
from headrace.core.storage.stores import OffsetStore
from headrace.core.storage.topics import ensure_topic
from headrace.v1 import plugin_pb2 as pb
from tests.support import (
    committed,
    consume,
    eventually,
    next_event,
    plugin_host,
    start_all,
    start_task,
)

pytestmark = pytest.mark.kafka

SOURCE = BUILTIN_PLUGINS / "file-source" / "1.0.0" / "manifest.json"
SINK = BUILTIN_PLUGINS / "file-sink" / "1.0.0" / "manifest.json"


def lines(first: int, count: int) -> bytes:
    """Numbered lines with some text that is not ASCII, and now and then an empty line."""
    return "".join(
        "\n" if i % 97 == 0 else f"line {i}: grüße, ✓ {'x' * (i % 13)}\n"
        for i in range(first, first + count)
    ).encode()


def same_bytes(path: Path, expected: bytes) -> bool:
    return path.exists() and path.read_bytes() == expected


async def stored_position(kafka: str, cluster: str, connector: str, file: str) -> object:
    store = OffsetStore(Settings(bootstrap_servers=kafka, cluster=cluster), connector)
    try:
        await store.load()
        return store.offset({"filename": file})
    finally:
        await store.close()  # the store owns Kafka clients


@pytest.fixture
def files(tmp_path: Path) -> Path:
    """The one folder the plugin hosts allow files in."""
    folder = tmp_path / "files"
    folder.mkdir()
    return folder.resolve()  # as the plugin host names it


async def test_a_file_goes_through_kafka_and_comes_out_the_same(
    kafka: str, cluster: str, tmp_path: Path, files: Path
) -> None:
    topic, source_in, sink_out = f"{cluster}-lines", files / "in.txt", files / "out.txt"
    await ensure_topic(kafka, topic, 1)  # one partition: the lines keep their order
    source_in.write_bytes(lines(0, 1000))
    source_config = {"name": "src", "tasks.max": "3", "topic": topic, "file": "in.txt"}
    sink_config = {"name": "snk", "tasks.max": "1", "topics": topic, "file": str(sink_out)}
    env = {"HEADRACE_FILE_ROOTS": str(files)}
    async with (
        plugin_host(SOURCE, kafka, cluster, tmp_path, env=env) as source,
        plugin_host(SINK, kafka, cluster, tmp_path, env=env) as sink,
    ):
        [task_config] = await start_all(source, "src", source_config)  # one task, ever
        await start_all(sink, "snk", sink_config)
        await eventually(
            "the sink's file equals the input", lambda: same_bytes(sink_out, lines(0, 1000))
        )
        assert len(await committed(kafka, topic)) == 1000

        with source_in.open("ab") as f:
            f.write(lines(1000, 200))
        await source.stub.StopTask(pb.StopRequest(connector="src", task=0, deleted=False))
        request = pb.StartTaskRequest(
            connector="src", task=0, connector_config=source_config, task_config=task_config
        )
        await source.stub.StartTask(request)
        everything = lines(0, 1200)
        await eventually(
            "the sink's file has the new lines", lambda: same_bytes(sink_out, everything)
        )

        records = await consume(kafka, topic, 1200)
        assert len(records) == len(await committed(kafka, topic)) == 1200  # no line sent twice
        sent = [json.loads(r.value or b"") for r in records]
        assert "".join(f"{text}\n" for text in sent).encode() == everything
        # The restarted task went on from its stored position: the new lines, each once.
        assert "".join(f"{text}\n" for text in sent[1000:]).encode() == lines(1000, 200)
        assert await stored_position(kafka, cluster, "src", "in.txt") == {
            "position": len(everything)
        }


async def test_a_source_outside_the_allowed_folders_does_not_start(
    kafka: str, cluster: str, tmp_path: Path, files: Path
) -> None:
    (tmp_path / "secret.txt").write_text("not for connectors\n")
    env = {"HEADRACE_FILE_ROOTS": str(files)}
    async with plugin_host(SOURCE, kafka, cluster, tmp_path, env=env) as host:
        for raw in (str(tmp_path / "secret.txt"), "../secret.txt", "/etc/passwd"):
            config = {"name": "bad", "tasks.max": "1", "topic": f"{cluster}-x", "file": raw}
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await host.stub.StartConnector(pb.StartConnectorRequest(name="bad", config=config))
            assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            details = refused.value.details() or ""
            assert f"Invalid value {raw} for configuration file" in details
            assert "outside the allowed folders" in details and str(files) in details
            # Validation says the same, under the key, before anything is created.
            checked = await host.stub.Validate(pb.ValidateRequest(config=config))
            errors = {c.value.name: list(c.value.errors) for c in checked.configs}
            assert len(errors["file"]) == 1 and "outside the allowed folders" in errors["file"][0]

        allowed = {"name": "ok", "tasks.max": "1", "topic": f"{cluster}-x", "file": "in.txt"}
        checked = await host.stub.Validate(pb.ValidateRequest(config=allowed))
        assert not any(c.value.errors for c in checked.configs)

        # A task handed such a config directly fails with the reason, and reads nothing.
        watch = host.stub.Watch(pb.WatchRequest())
        config = {"name": "bad", "tasks.max": "1", "topic": f"{cluster}-x", "file": "/etc/passwd"}
        await host.stub.StartTask(start_task("bad", 0, config, pb.TaskConfig(config=config)))
        failed = await next_event(watch, lambda e: e.task == 0 and e.state == "FAILED")
        assert "ConfigException" in failed.trace and "configuration file" in failed.trace
        watch.cancel()


@pytest.mark.parametrize(("manifest", "key"), [(SOURCE, "topic"), (SINK, "topics")])
async def test_a_host_that_only_validates_never_loads_pyarrow(
    kafka: str, cluster: str, tmp_path: Path, manifest: Path, key: str
) -> None:
    """The config service keeps a host per plugin version to validate configs; pyarrow (about
    40 MiB resident) is for tasks, which such a host never runs."""
    async with plugin_host(manifest, kafka, cluster, tmp_path) as host:
        config = {"name": "v", "tasks.max": "1", key: f"{cluster}-v", "file": "v.txt"}
        checked = await host.stub.Validate(pb.ValidateRequest(config=config))
        assert not any(c.value.errors for c in checked.configs)
        mapped = [m.path for m in psutil.Process(host.process.pid).memory_maps()]
        assert not [path for path in mapped if "libarrow" in path]
