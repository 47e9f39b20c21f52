"""Kafka Connect's own Java connectors in a Python plugin process with its JVM host, against the
real broker the suite starts.

The connectors are installed as a user installs them (``java_plugin_entry``: ``headrace plugins
install`` through Maven, and a jar copied in); each test spawns the plugin process for one
installed version, drives it over its socket as the worker does, and checks what reached Kafka
and the files.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

import grpc
import pytest
from aiokafka import AIOKafkaProducer

from headrace.core.security.guard import HOST_KEY_HEADER
from headrace.core.storage.topics import ensure_topic
from headrace.isolation import jvm
from headrace.isolation.plugins import discover, read_manifest
from headrace.local.kafka import KAFKA_VERSION
from headrace.runtime.host.jvm import JVM_LOST
from headrace.v1 import jvm_pb2, jvm_pb2_grpc
from headrace.v1 import plugin_pb2 as pb
from tests.support import (
    CONNECT_FILE_VERSIONS,
    HOST_DEADLINE_S,
    JAVA_RECORDING,
    consume,
    eventually,
    json_lines,
    next_event,
    plugin_host,
    start_all,
    start_task,
    stops,
    stored_offsets,
)

pytestmark = pytest.mark.kafka

FILE_VERSIONS = CONNECT_FILE_VERSIONS
RECORDING = JAVA_RECORDING
SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
SINK = "org.apache.kafka.connect.file.FileStreamSinkConnector"


@pytest.fixture(scope="module")
def java_plugins(
    java_plugin_entry: Path, tmp_path_factory: pytest.TempPathFactory
) -> dict[tuple[str, str], Path]:
    """Each Java connector of the suite's plugin path entry: its manifest, by (class, version)."""
    catalog = discover([java_plugin_entry], tmp_path_factory.mktemp("jvm-plugins"))
    assert not catalog.broken, catalog.broken
    return {(p.class_name, p.version): p.manifest for p in catalog.plugins}


def test_both_installed_versions_are_listed_with_the_version_they_were_installed_at(
    java_plugins: dict[tuple[str, str], Path],
) -> None:
    mirror = [
        (f"org.apache.kafka.connect.mirror.Mirror{kind}Connector", KAFKA_VERSION)
        for kind in ("Checkpoint", "Heartbeat", "Source")
    ]
    assert sorted(java_plugins) == sorted(
        [
            (RECORDING, "1.0.0"),
            *((cls, v) for cls in (SINK, SOURCE) for v in FILE_VERSIONS),
            *mirror,
            ("io.debezium.connector.postgresql.PostgresConnector", "3.6.1.Final"),
            ("io.debezium.connector.jdbc.JdbcSinkConnector", "3.3.1.Final"),
        ]
    )


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


async def test_a_java_sink_is_given_what_a_read_committed_consumer_reads(
    kafka: str, cluster: str, tmp_path: Path, java_plugins: dict[tuple[str, str], Path]
) -> None:
    """Compressed batches with keys and headers, a transaction aborted and one committed: the
    task gets every committed record once, in order, with its own offset; a record its
    converter refuses goes to the dead letter queue as it was consumed."""
    topic, dlq, sink_file = f"{cluster}-batches", f"{cluster}-batches-dlq", tmp_path / "out.txt"
    await ensure_topic(kafka, topic, 1)
    plain = AIOKafkaProducer(bootstrap_servers=kafka, compression_type="gzip", linger_ms=20)
    await plain.start()
    try:
        for i in range(300):
            value = b"{not json" if i == 7 else json.dumps({"n": i}).encode()
            await plain.send(topic, value, key=b"k%d" % i, headers=[("h", b"%d" % i)])
        await plain.flush()
    finally:
        await plain.stop()
    transactional = AIOKafkaProducer(bootstrap_servers=kafka, transactional_id=f"{cluster}-tx")
    await transactional.start()
    try:
        await transactional.begin_transaction()
        for _ in range(5):
            await transactional.send(topic, json.dumps({"n": "aborted"}).encode())
        await transactional.abort_transaction()
        async with transactional.transaction():
            for i in range(300, 305):
                await transactional.send(topic, json.dumps({"n": i}).encode())
    finally:
        await transactional.stop()
    committed = await consume(kafka, topic, 304)
    expected = [
        (json.loads(r.value or b"")["n"], r.offset) for r in committed if r.value != b"{not json"
    ]
    sink = {
        "name": "batches-out",
        "connector.class": SINK,
        "tasks.max": "1",
        "file": str(sink_file),
        "topics": topic,
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "false",
        "transforms": "where",
        "transforms.where.type": "org.apache.kafka.connect.transforms.InsertField$Value",
        "transforms.where.offset.field": "at",
        "errors.tolerance": "all",
        "errors.deadletterqueue.topic.name": dlq,
    }
    async with plugin_host(java_plugins[(SINK, "4.3.0")], kafka, cluster, tmp_path) as host:
        await start_all(host, "batches-out", sink)

        def written() -> list[str] | None:
            found = sink_file.read_text().splitlines() if sink_file.exists() else []
            return found if len(found) >= len(expected) else None

        lines = await eventually("every committed record in the sink's file", written)
        [dead] = await consume(kafka, dlq, 1)
    # FileStreamSink writes each value as Java prints a map: {n=0, at=0}, in either order.
    got = [
        (int(re.search(r"n=(\d+)", line)[1]), int(re.search(r"at=(\d+)", line)[1]))  # type: ignore[index]
        for line in lines
    ]
    assert got == expected
    assert (dead.key, dead.value, dict(dead.headers)["h"]) == (b"k7", b"{not json", b"7")


@pytest.fixture
def recording(java_plugins: dict[tuple[str, str], Path]) -> Path:
    """The Java recording source's manifest."""
    return java_plugins[(RECORDING, "1.0.0")]


def recording_config(path: Path, topic: str, **more: str) -> dict[str, str]:
    return {
        "name": "rec",
        "connector.class": "RecordingSourceConnector",
        "tasks.max": "2",
        "path": str(path),
        "topic": topic,
        "value.converter": "org.apache.kafka.connect.storage.StringConverter",
        **more,
    }


async def test_the_deletion_stop_reaches_java_code_once_and_other_stops_are_plain(
    kafka: str, cluster: str, tmp_path: Path, recording: Path
) -> None:
    config = recording_config(tmp_path, f"{cluster}-rec")
    async with plugin_host(recording, kafka, cluster, tmp_path) as host:
        await start_all(host, "rec", config)
        await host.stub.StopTask(pb.StopRequest(connector="rec", task=0, deleted=False))
        await host.stub.StopTask(pb.StopRequest(connector="rec", task=1, deleted=True))
        await host.stub.StopConnector(pb.StopRequest(connector="rec", task=-1, deleted=True))
        # A deleted unit that runs nowhere (its worker crashed): started only to be stopped.
        await host.stub.Cleanup(
            pb.CleanupRequest(connector="rec", task=0, connector_config=config, task_config=config)
        )
    assert stops(tmp_path) == [
        ("connector", None, True),
        ("task", 0, False),
        ("task", 0, True),
        ("task", 1, True),
    ]


async def test_a_restarted_java_task_resumes_from_its_offsets_in_connects_shape(
    kafka: str, cluster: str, tmp_path: Path, recording: Path
) -> None:
    topic = f"{cluster}-resumed"
    config = recording_config(tmp_path, topic, records="150", **{"tasks.max": "1"})
    async with plugin_host(recording, kafka, cluster, tmp_path) as host:
        await start_all(host, "rec", config)
        await consume(kafka, topic, 150)
        await host.stub.StopTask(pb.StopRequest(connector="rec", task=0, deleted=False))
        more = {**config, "records": "300"}
        await host.stub.StartTask(start_task("rec", 0, more, pb.TaskConfig(config=more)))
        records = await consume(kafka, topic, 300)
        # The connector's own offset reader (KIP-131) reads the stored offsets as it starts.
        await host.stub.StopTask(pb.StopRequest(connector="rec", task=0, deleted=False))
        await host.stub.StopConnector(pb.StopRequest(connector="rec", deleted=False))
        await host.stub.StartConnector(pb.StartConnectorRequest(name="rec", config=more))
    values = [json.loads(r.value or b"")["n"] for r in records]
    assert sorted(values) == list(range(300))  # none lost, none twice
    stored = await stored_offsets(kafka, cluster, "rec")
    assert stored == {'{"task":0}': {"next": 300}}
    said = [
        e["event"] for e in json_lines(tmp_path / "lifecycle.jsonl") if e["unit"] == "connector"
    ]
    assert [e for e in said if e.startswith("stored")] == ["stored none", "stored 300"]


@pytest.mark.parametrize(("timeout_ms", "arrives"), [("30000", True), ("0", False)])
async def test_a_retriable_transformation_failure_is_retried_within_errors_retry_timeout(
    kafka: str, cluster: str, tmp_path: Path, recording: Path, timeout_ms: str, arrives: bool
) -> None:
    """A Java transformation's RetriableException, in the JVM: retried as Connect retries it
    within ``errors.retry.timeout``, and every record arrives once; with none (0, the default),
    the task fails on the first, naming it."""
    topic = f"{cluster}-flaky-{timeout_ms}"
    flaky = {
        "tasks.max": "1",
        "records": "20",
        "transforms": "flaky",
        "transforms.flaky.type": "headrace.testing.Flaky",
        "transforms.flaky.failures": "2",
        "errors.retry.timeout": timeout_ms,
        "errors.retry.delay.max.ms": "1000",
    }
    config = recording_config(tmp_path, topic, **flaky)
    async with plugin_host(recording, kafka, cluster, tmp_path) as host:
        watch = host.stub.Watch(pb.WatchRequest())
        await start_all(host, "rec", config)
        if arrives:
            records = await consume(kafka, topic, 20)
            assert sorted(json.loads(r.value or b"")["n"] for r in records) == list(range(20))
        else:
            failed = await next_event(watch, lambda e: e.task == 0 and e.state == "FAILED")
            assert "RetriableException" in failed.trace and "flaky" in failed.trace
        watch.cancel()


async def test_a_jvm_that_runs_out_of_heap_ends_its_plugin_process(
    kafka: str, cluster: str, tmp_path: Path, recording: Path
) -> None:
    config = recording_config(tmp_path, f"{cluster}-oom", **{"allocate.mb": "512"})
    env = {"HEADRACE_JVM_HEAP": "64m"}
    async with plugin_host(recording, kafka, cluster, tmp_path, env=env) as host:
        await start_all(host, "rec", config)
        code = await asyncio.wait_for(host.process.wait(), HOST_DEADLINE_S)
        assert code == JVM_LOST
        assert host.events("jvm_host_lost")
        # What the JVM wrote as it went reached the log as JSON lines of the process, masked
        # as every line it logs (found by the second perimeter review: they bypassed both).
        written = host.log_path.read_text().splitlines()
        assert [line for line in written if not line.startswith("{")] == []
        said = [e["event"] for e in host.entries() if e.get("logger") == "jvm"]
        assert any("OutOfMemoryError" in line for line in said), said


async def test_a_cluster_log_level_reaches_a_java_connectors_own_loggers(
    kafka: str, cluster: str, tmp_path: Path, java_plugins: dict[tuple[str, str], Path]
) -> None:
    """KIP-976's cluster levels, as a worker passes them on with each keep-alive, set in the JVM
    too: Connect's FileStream task logs the file it opens at DEBUG, under the host's WARN."""

    def source(name: str) -> dict[str, str]:
        path = tmp_path / f"{name}.txt"
        path.write_text(f"a line of {name}\n")
        config = {"name": name, "connector.class": SOURCE, "tasks.max": "1", "file": str(path)}
        return {**config, "topic": f"{cluster}-{name}"}

    async with plugin_host(java_plugins[(SOURCE, "4.3.0")], kafka, cluster, tmp_path) as host:
        before = source("quiet")
        await start_all(host, "quiet", before)
        await consume(kafka, before["topic"], 1)  # its task opened and read the file
        assert "for reading" not in host.log_path.read_text()
        debug = {"org.apache.kafka.connect.file": "DEBUG"}
        await host.stub.KeepAlive(
            pb.KeepAliveRequest(lease_ms=600_000, stop_ms=10_000, log_levels=debug)
        )
        await eventually("the JVM's levels set", lambda: host.events("jvm_log_levels_set"))
        after = source("chatty")
        await start_all(host, "chatty", after)
        opened = (
            f"DEBUG org.apache.kafka.connect.file.FileStreamSourceTask - Opened {after['file']}"
        )
        await eventually("the task's debug line", lambda: opened in host.log_path.read_text())


async def test_a_plugin_jvm_makes_no_config_provider_from_a_config(
    java_plugins: dict[tuple[str, str], Path], tmp_path: Path
) -> None:
    """Found by the second perimeter review (CVE-2024-31141): a converter configured with
    ``config.providers`` of its own made Kafka's EnvVarConfigProvider in the JVM, which read
    the process's environment, and the converter's error quoted what it read. Asked directly,
    past every check of the Python side, the JVM makes none."""
    probe = f"probe-{secrets.token_hex(8)}"
    location = read_manifest(java_plugins[(SOURCE, "3.9.1")]).folder
    socket = tmp_path / "jvm.sock"
    (tmp_path / "tmp").mkdir()
    proc = await asyncio.create_subprocess_exec(
        *jvm.command(location, "256m", tmp_path / "tmp", "--socket", str(socket)),
        stdin=asyncio.subprocess.PIPE,
        env={**os.environ, "HOSTILE_PROBE": probe},
    )
    assert proc.stdin is not None
    proc.stdin.write(b"the-key\n")  # as its plugin process gives it, every call to carry
    keyed = ((HOST_KEY_HEADER, "the-key"),)
    try:
        async with grpc.aio.insecure_channel(f"unix:{socket}") as channel:
            await asyncio.wait_for(channel.channel_ready(), HOST_DEADLINE_S)
            stub = jvm_pb2_grpc.JvmPluginHostStub(channel)
            # Found by the same review: any process of the user could call it over its socket.
            with pytest.raises(grpc.aio.AioRpcError) as unkeyed:
                await stub.Validate(jvm_pb2.JvmValidateRequest(connector_class=SOURCE))
            assert unkeyed.value.code() == grpc.StatusCode.UNAUTHENTICATED
            answer = await stub.Validate(
                jvm_pb2.JvmValidateRequest(
                    connector_class=SOURCE,
                    config={
                        "connector.class": SOURCE,
                        "topic": "t",
                        "value.converter": "org.apache.kafka.connect.storage.StringConverter",
                        "value.converter.config.providers": "_e",
                        "value.converter.config.providers._e.class": (
                            "org.apache.kafka.common.config.provider.EnvVarConfigProvider"
                        ),
                        "value.converter.converter.encoding": "${_e:HOSTILE_PROBE}",
                    },
                ),
                timeout=HOST_DEADLINE_S,
                metadata=keyed,
            )
    finally:
        proc.kill()
        await proc.wait()
    said = str(answer)
    assert "${_e:HOSTILE_PROBE}" in said  # the value comes back as written, unresolved
    assert probe not in said


def test_a_plugin_scan_runs_confined_with_none_of_the_services_credentials(
    java_prying_jar: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by the second perimeter review: the JVM scan, which makes an instance of every
    connector class it finds, ran unconfined with the scanning service's whole environment
    (the config service's, every worker's, ``plugins install``'s). A hostile connector made at
    scan time read the tokens file its variable named and left it beside its jar."""
    token = secrets.token_hex(16)
    tokens = tmp_path / "tokens"
    tokens.write_text(f"admin {token}\n")
    monkeypatch.setenv("HEADRACE_AUTH_TOKENS", str(tokens))
    monkeypatch.setenv("HEADRACE_PLUGIN_SANDBOX", "required")  # never skipped for no Landlock
    entry = tmp_path / "plugins"
    entry.mkdir()
    shutil.copy(java_prying_jar, entry)
    catalog = discover([entry], tmp_path / "scans")
    assert not catalog.broken, catalog.broken
    assert [p.class_name for p in catalog.plugins] == ["headrace.testing.PryingSourceConnector"]
    pried = entry / "pried.txt"
    assert not pried.exists(), pried.read_text()[:2000]
    assert [p.name for p in (tmp_path / "scans").iterdir() if p.name.startswith(".")] == []


def test_plugins_install_as_the_docs_give_it_checks_the_digest_it_is_given(
    tmp_path: Path,
) -> None:
    """``headrace plugins install`` as a user types it, in a folder of their own with the
    defaults (the plugin path's ``var/plugins``, relative): with a SHA-512 that is not the
    artifact's, nothing is installed; with the artifact's, it is, and found."""
    coordinate = f"org.apache.kafka:connect-file:{FILE_VERSIONS[0]}"
    command = [str(Path(sys.executable).parent / "headrace"), "plugins", "install", coordinate]
    env = {k: v for k, v in os.environ.items() if not k.startswith("HEADRACE_")}

    def install(*more: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*command, *more], cwd=tmp_path, env=env, capture_output=True, text=True, check=False
        )

    wrong = install("--sha512", "0" * 128)
    assert wrong.returncode == 1, wrong.stdout + wrong.stderr
    assert f"connect-file-{FILE_VERSIONS[0]}.jar has SHA-512" in wrong.stderr
    assert "nothing was installed" in wrong.stderr
    installed_in = tmp_path / "var" / "plugins" / "connect-file" / FILE_VERSIONS[0]
    assert not installed_in.exists()
    jar = (
        Path.home() / ".m2/repository/org/apache/kafka/connect-file" / FILE_VERSIONS[0]
    ) / f"connect-file-{FILE_VERSIONS[0]}.jar"
    digest = hashlib.sha512(jar.read_bytes()).hexdigest()
    right = install("--sha512", digest.upper())
    assert right.returncode == 0, right.stdout + right.stderr
    assert f"installed {coordinate} in {installed_in.resolve()}" in right.stdout
    assert SOURCE in right.stdout and SINK in right.stdout
    assert (installed_in / jar.name).is_file()


def test_plugins_install_of_a_version_maven_cannot_find_says_why_and_installs_nothing(
    tmp_path: Path,
) -> None:
    """``headrace plugins install`` as a user types it, from a folder of their own, of a version
    that does not exist: Maven's own reason, without its terminal escapes, naming the
    coordinate; nothing left in the plugin path."""
    coordinate = "org.apache.kafka:connect-file:0.0.1"
    command = [str(Path(sys.executable).parent / "headrace"), "plugins", "install", coordinate]
    env = {k: v for k, v in os.environ.items() if not k.startswith("HEADRACE_")}
    done = subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 1, done.stdout + done.stderr
    said = done.stderr
    assert f"{coordinate}: Maven could not resolve it: " in said, said
    reason = said.split("Maven could not resolve it: ", 1)[1]
    assert "connect-file" in reason and "0.0.1" in reason, said  # Maven's own line
    assert "\x1b" not in said
    plugins = tmp_path / "var" / "plugins"
    assert not plugins.exists() or list(plugins.iterdir()) == []  # not even its folder


async def test_a_plugin_that_hoards_threads_ends_its_jvm_not_the_machine(
    kafka: str, cluster: str, java_prying_jar: Path, tmp_path: Path
) -> None:
    """Found by the second perimeter review: the heap was a plugin JVM's only bound; its
    threads (each with a stack), its classes and its direct buffers were not. A connector that
    starts threads without end now ends its own JVM, and its plugin process with it, as an
    OutOfMemoryError does."""
    entry = tmp_path / "plugins"
    entry.mkdir()
    shutil.copy(java_prying_jar, entry)
    [manifest] = [p.manifest for p in discover([entry], tmp_path / "scans").plugins]
    config = {
        "connector.class": "headrace.testing.PryingSourceConnector",
        "hoard.threads": str(jvm.MAX_THREADS + 500),
    }
    async with plugin_host(manifest, kafka, cluster, tmp_path) as host:
        with contextlib.suppress(grpc.aio.AioRpcError):  # the JVM may end before it answers
            await host.stub.StartConnector(pb.StartConnectorRequest(name="hoard", config=config))
        code = await asyncio.wait_for(host.process.wait(), HOST_DEADLINE_S)
        assert code == JVM_LOST
        lost = host.events("jvm_host_lost")
        assert lost and lost[0]["code"] == 75, lost
        said = " ".join(e["event"] for e in host.entries() if e.get("logger") == "jvm")
        assert f"more than {jvm.MAX_THREADS}" in said


def test_an_images_java_plugins_are_installed_from_its_list_each_checked_against_its_digest(
    java_plugin_entry: Path, tmp_path: Path
) -> None:
    """``deploy/java-plugins/install.sh``, as the Dockerfile runs it on the image's list: a
    line with the artifact jar's published SHA-512 (Maven's own copy, read here) is installed
    and scanned; a wrong digest, or none, fails the build naming the line, and installs
    nothing."""
    version = FILE_VERSIONS[0]
    coordinate = f"org.apache.kafka:connect-file:{version}"
    local = Path.home() / ".m2" / "repository" / "org" / "apache" / "kafka" / "connect-file"
    digest = hashlib.sha512((local / version / f"connect-file-{version}.jar").read_bytes())
    env = {k: v for k, v in os.environ.items() if not k.startswith("HEADRACE_")}
    env |= {"PATH": f"{Path(sys.executable).parent}:{env['PATH']}", "HEADRACE_VAR": str(tmp_path)}
    script = Path(__file__).parents[2] / "deploy" / "java-plugins" / "install.sh"

    def build(listed: str, folder: str) -> subprocess.CompletedProcess[str]:
        (tmp_path / "plugins.txt").write_text(f"# baked in\n\n{listed}\n")
        return subprocess.run(
            ["sh", str(script), str(tmp_path / "plugins.txt"), str(tmp_path / folder)],
            env=env, capture_output=True, text=True, check=False,
        )  # fmt: skip

    built = build(f"{coordinate} {digest.hexdigest()}", "image")
    assert built.returncode == 0, built.stdout + built.stderr
    assert (tmp_path / "image" / "connect-file" / version / f"connect-file-{version}.jar").is_file()
    assert "FileStreamSourceConnector" in built.stdout
    wrong = build(f"{coordinate} {'0' * 128}", "wrong")
    assert wrong.returncode == 1 and "plugins.txt:3:" in wrong.stderr, wrong.stderr
    assert "has SHA-512" in wrong.stderr and not list((tmp_path / "wrong").iterdir())
    bare = build(coordinate, "bare")
    assert bare.returncode == 1 and "plugins.txt:3: expected" in bare.stderr, bare.stderr
