"""Helpers for tests that watch real processes: waiting on a condition, reading JSON logs, and
driving a real plugin host process over its socket (``plugin_host``) against the real broker."""

from __future__ import annotations

import asyncio
import inspect
import io
import json
import logging
import os
import shutil
import signal
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar, overload

import grpc
import psutil
import structlog
from aiokafka import AIOKafkaConsumer, ConsumerRecord, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.record.memory_records import MemoryRecords
from prometheus_client.parser import text_string_to_metric_families

from headrace.core.observability import log
from headrace.core.settings import BUILTIN_PLUGINS, Settings
from headrace.core.storage.stores import OffsetStore
from headrace.isolation.plugins import read_manifest
from headrace.local.kafka import free_port
from headrace.local.stack import Stack
from headrace.runtime.host.loader import load_module
from headrace.v1 import plugin_pb2 as pb
from headrace.v1 import plugin_pb2_grpc as pb_grpc

T = TypeVar("T")


class Deadline:
    """How long a wait may take, and the failure that names what was awaited: every wait in the
    suite polls a condition under one of these, never a fixed sleep."""

    def __init__(self, what: str, seconds: float) -> None:
        self.what = what
        self.seconds = seconds
        self._end = time.monotonic() + seconds

    def remaining(self) -> float:
        return max(0.0, self._end - time.monotonic())

    def check(self, last: Any = None) -> None:
        """Fails the test once the deadline has passed, saying what was last seen."""
        if time.monotonic() > self._end:
            raise AssertionError(
                f"timed out after {self.seconds}s waiting for {self.what}; last saw {last!r}"
            )


def wait_for(what: str, check: Callable[[], T | None], timeout: float = 90.0) -> T:
    """The first truthy result of ``check``, polled until the deadline."""
    deadline = Deadline(what, timeout)
    while not (last := check()):
        deadline.check(last)
        time.sleep(0.2)
    return last


# Kafka's config/connect-file-source.properties and connect-file-sink.properties, as shipped
# (their license header cut short): what its quickstart runs.
QUICKSTART_SOURCE = """\
# Licensed to the Apache Software Foundation (ASF) under one or more
# contributor license agreements.

name=local-file-source
connector.class=FileStreamSource
tasks.max=1
file=test.txt
topic=connect-test
"""
QUICKSTART_SINK = """\
# Licensed to the Apache Software Foundation (ASF) under one or more
# contributor license agreements.

name=local-file-sink
connector.class=FileStreamSink
tasks.max=1
file=test.sink.txt
topics=connect-test
"""
JAVA_TEST_CONNECTOR = Path(__file__).parent / "java" / "recording"
"""The Java recording source's Maven project (``java_plugin_entry`` builds it)."""
JAVA_RECORDING = "headrace.testing.RecordingSourceConnector"
CONNECT_FILE_VERSIONS = ("3.9.1", "4.3.0")
"""The versions of Kafka's connect-file the suite installs side by side."""
DEBEZIUM_POSTGRES = "io.debezium:debezium-connector-postgres:3.6.1.Final"
DEBEZIUM_JDBC = "io.debezium:debezium-connector-jdbc:3.3.1.Final"  # the newest served here
"""Debezium's PostgreSQL connector, as the suite installs it."""


@overload
async def eventually(
    what: str, check: Callable[[], Awaitable[T | None]], within: float = ...
) -> T: ...
@overload
async def eventually(what: str, check: Callable[[], T | None], within: float = ...) -> T: ...
async def eventually(what: str, check: Callable[[], Any], within: float = 60.0) -> Any:
    """:func:`wait_for` for a test on the event loop; ``check`` may be a coroutine function."""
    deadline = Deadline(what, within)
    while True:
        found = check()
        last = await found if inspect.isawaitable(found) else found
        if last:
            return last
        deadline.check(last)
        await asyncio.sleep(0.05)


async def stored_offsets(kafka: str, cluster: str, connector: str) -> dict[str, dict[str, Any]]:
    """A connector's source offsets as stored now, by source partition (canonical JSON)."""
    store = OffsetStore(Settings(bootstrap_servers=kafka, cluster=cluster), connector)
    try:
        await store.load()
        return {partition: dict(offset) for partition, offset in store.state.items()}
    finally:
        await store.close()


def json_lines(path: Path) -> list[dict[str, Any]]:
    """The JSON objects of a JSON-lines file, none when it does not exist yet. A last line with
    no newline yet is one its writer is still appending, read while a plugin writes: left for
    the next look, as a complete line that is not JSON still fails."""
    if not path.exists():
        return []
    text = path.read_text()
    complete = text if text.endswith("\n") else text.rpartition("\n")[0]
    return [json.loads(line) for line in complete.splitlines() if line.strip()]


def log_events(log_dir: Path, event: str, **fields: Any) -> list[dict[str, Any]]:
    """Every JSON log line under ``log_dir`` with this event and these field values."""
    found = []
    for path in sorted(log_dir.glob("*.log")):
        for line in path.read_text(errors="replace").splitlines():
            if f'"{event}"' not in line:
                continue
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                continue
            if entry.get("event") == event and all(entry.get(k) == v for k, v in fields.items()):
                found.append(entry)
    return found


def lifecycle(folder: Path) -> list[dict[str, Any]]:
    """What the recording test plugin wrote of its lifecycle calls under ``folder``, in order."""
    return json_lines(folder / "lifecycle.jsonl")


def stops(folder: Path) -> list[tuple[str, int | None, bool]]:
    """Every ``stop`` the recording plugin saw, as (connector or task, task number, deleted),
    sorted (units stop concurrently, so their order says nothing)."""
    return sorted(
        (
            (e["unit"], e.get("task"), e["deleted"])
            for e in lifecycle(folder)
            if e["event"] == "stop"
        ),
        key=str,
    )


def local_settings(
    kafka: str,
    cluster: str,
    var_dir: Path,
    plugin_path: tuple[Path, ...],
    coordinators: int = 1,
    plugin_call_timeout_s: float = 60.0,
) -> Settings:
    """Settings of a test's own services on this machine: free ports, its own topics and folder.
    Its connectors may write beside ``var_dir``, in the folder that holds it (a test's tmp_path,
    or the run's base folder for a module's stack): the file root its plugins are confined to."""
    return Settings(
        bootstrap_servers=kafka,
        cluster=cluster,
        config_addr=f"127.0.0.1:{free_port()}",
        rest_addr=f"127.0.0.1:{free_port()}",
        coordinator_addr=",".join(f"127.0.0.1:{free_port()}" for _ in range(coordinators)),
        executor_addr=f"127.0.0.1:{free_port()}",
        plugin_path=plugin_path,
        var_dir=var_dir,
        spark_master="local[1]",
        plugin_call_timeout_s=plugin_call_timeout_s,
        file_roots=(var_dir.parent,),
    )


PLUGIN_MODULE = """
from headrace.sdk import ConfigDef, ConfigType, {kind}Connector, {kind}Task


class {plugin}Task({kind}Task):
    async def start(self, config):
        pass

    async def stop(self, deleted=False):
        pass

    {work}


class {plugin}Connector({kind}Connector):
    VERSION = "{version}"

    def config(self):
        return ConfigDef().define("label", ConfigType.STRING, "", doc="Any text.")

    async def start(self, config):
        pass

    def task_class(self):
        return {plugin}Task

    def task_configs(self, max_tasks):
        return [{{}} for _ in range(max_tasks)]

    async def stop(self, deleted=False):
        pass
"""
WORK = {
    "Source": "async def poll(self):\n        return []",
    "Sink": "async def put(self, records):\n        pass",
}


def install_manifest(root: Path, plugin: str, version: str, kind: str) -> None:
    """Writes a plugin version under ``root``: a manifest, and a connector that does nothing and
    defines one key of its own, ``label`` (what the config service asks it to validate)."""
    folder = root / plugin / version
    folder.mkdir(parents=True)
    manifest = {"class": f"com.example.{plugin}Connector", "version": version, "type": kind}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    (folder / "com").mkdir()
    title = kind.title()
    module = PLUGIN_MODULE.format(kind=title, plugin=plugin, version=version, work=WORK[title])
    (folder / "com" / "example.py").write_text(module)


def builtin_plugin_module(plugin: str, version: str) -> ModuleType:
    """A built-in plugin's module, loaded the way the plugin host loads it."""
    return load_module(read_manifest(BUILTIN_PLUGINS / plugin / version / "manifest.json"))


# A plugin host as a real process (``python -m headrace.runtime.host``), driven over its socket.

HOST_DEADLINE_S = 60.0


@dataclass
class Host:
    """A running plugin host process and a client for it."""

    process: asyncio.subprocess.Process
    log_path: Path
    stub: pb_grpc.PluginHostStub
    folder: Path  # its socket's, which it may write

    def entries(self) -> list[dict[str, Any]]:
        """Every JSON line of the host's log."""
        found = []
        for line in self.log_path.read_text().splitlines():
            try:
                found.append(json.loads(line))
            except json.JSONDecodeError:
                continue
        return found

    def events(self, name: str) -> list[dict[str, Any]]:
        """The host's log lines with event ``name``."""
        return [e for e in self.entries() if e.get("event") == name]


@asynccontextmanager
async def plugin_host(
    manifest: Path,
    kafka: str,
    cluster: str,
    workdir: Path,
    stop_timeout: float = 10.0,
    env: Mapping[str, str] | None = None,
) -> AsyncIterator[Host]:
    """Spawns a host (``python -m headrace.runtime.host``; ``env`` adds to its environment),
    waits until it logs readiness, and always ends it (and waits for that)."""
    socket_dir = Path(tempfile.mkdtemp(prefix="hr-", dir="/tmp"))  # sun_path is 108 bytes
    socket = socket_dir / "plugin.sock"
    log_path = workdir / f"host-{manifest.parent.parent.name}-{manifest.parent.name}.log"
    host_env = {
        **os.environ,
        "KAFKA_BOOTSTRAP_SERVERS": kafka,
        "HEADRACE_CLUSTER": cluster,
        "HEADRACE_WORKER_ID": "test-worker",
        "HEADRACE_FILE_ROOTS": str(workdir),  # what the confined plugin may write
        **(env or {}),
    }
    with log_path.open("w") as log_file:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "headrace.runtime.host",
            "--manifest",
            str(manifest),
            "--socket",
            str(socket),
            "--stop-timeout",
            str(stop_timeout),
            stdout=asyncio.subprocess.DEVNULL,
            stderr=log_file,
            env=host_env,
        )
    try:
        host = Host(process, log_path, None, socket_dir)  # type: ignore[arg-type]  # stub: below

        def ready() -> bool:
            if process.returncode is not None:
                raise AssertionError(f"host exited {process.returncode}:\n{log_path.read_text()}")
            return bool(host.events("plugin_host_ready"))

        await eventually("plugin_host_ready", ready)
        async with grpc.aio.insecure_channel(f"unix:{socket}") as channel:
            host.stub = pb_grpc.PluginHostStub(channel)
            yield host
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(process.wait(), 60)
            except TimeoutError:
                process.kill()
                await process.wait()
        shutil.rmtree(socket_dir, ignore_errors=True)


async def consume(
    kafka: str, topic: str, count: int, within: float = HOST_DEADLINE_S
) -> list[ConsumerRecord[bytes, bytes]]:
    """Reads ``topic``'s committed records from the beginning until ``count`` arrived."""
    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=kafka,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        isolation_level="read_committed",
    )
    await consumer.start()
    records: list[ConsumerRecord[bytes, bytes]] = []
    try:
        deadline = Deadline(f"{count} records in {topic}", within)
        while len(records) < count:
            deadline.check(len(records))
            for batch in (await consumer.getmany(timeout_ms=500)).values():
                records += batch
    finally:
        await consumer.stop()
    return records


async def describe_topic(kafka: str, topic: str) -> dict[str, Any]:
    """What the broker says of a topic: its partitions, with their replicas."""
    admin = AIOKafkaAdminClient(bootstrap_servers=kafka)
    await admin.start()
    try:
        [described] = await admin.describe_topics([topic])
    finally:
        await admin.close()
    return dict(described)


async def committed(kafka: str, topic: str) -> list[ConsumerRecord[bytes, bytes]]:
    """Every committed record of ``topic`` now, as a consumer reading committed data sees them:
    what a source task produced in transactions it committed, with no transaction markers."""
    described = await describe_topic(kafka, topic)
    partitions = [TopicPartition(topic, p["partition"]) for p in described["partitions"]]
    consumer = AIOKafkaConsumer(
        bootstrap_servers=kafka, enable_auto_commit=False, isolation_level="read_committed"
    )
    await consumer.start()
    records: list[ConsumerRecord[bytes, bytes]] = []
    try:
        consumer.assign(partitions)
        await consumer.seek_to_beginning(*partitions)
        ends = await consumer.end_offsets(partitions)  # the last stable offsets
        deadline = Deadline(f"the committed records of {topic}", HOST_DEADLINE_S)
        while [tp for tp, end in ends.items() if await consumer.position(tp) < end]:
            deadline.check(len(records))
            for batch in (await consumer.getmany(timeout_ms=200)).values():
                records += batch
    finally:
        await consumer.stop()
    return records


async def next_event(
    watch: Any, matches: Callable[[pb.UnitEvent], bool], within: float = HOST_DEADLINE_S
) -> pb.UnitEvent:
    """The next Watch event that ``matches``."""
    deadline = Deadline("a matching Watch event", within)
    while True:
        event = await asyncio.wait_for(watch.read(), max(0.1, deadline.remaining()))
        assert event is not grpc.aio.EOF, "the Watch stream ended"
        if matches(event):
            return event


async def start_all(host: Host, name: str, config: dict[str, str]) -> list[dict[str, str]]:
    """StartConnector, then StartTask for every task config it returned."""
    started = await host.stub.StartConnector(pb.StartConnectorRequest(name=name, config=config))
    for k, task_config in enumerate(started.tasks):
        await host.stub.StartTask(start_task(name, k, config, task_config))
    return [dict(t.config) for t in started.tasks]


def start_task(
    name: str, task: int, config: dict[str, str], task_config: Any
) -> pb.StartTaskRequest:
    return pb.StartTaskRequest(
        connector=name, task=task, connector_config=config, task_config=dict(task_config.config)
    )


Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(address: str) -> Samples:
    """Every sample ``http://<address>/metrics`` serves, by name and labels."""
    with urllib.request.urlopen(f"http://{address}/metrics", timeout=5) as answer:
        assert answer.status == 200
        text = answer.read().decode()
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float | None:
    return samples.get((name, frozenset(labels.items())))


class Rest:
    """Plain HTTP, as curl or any Connect client speaks it."""

    def __init__(self, base: str, sent: Mapping[str, str] | None = None) -> None:
        self.base = base
        self.sent = dict(sent or {})  # headers every request carries (credentials)
        self.headers: Mapping[str, str] = {}  # the last answer's

    def __call__(
        self,
        method: str,
        path: str,
        body: Any = None,
        raw: bytes | None = None,
        content_type: str = "application/json",
        timeout: float = 30.0,
    ) -> tuple[int, Any]:
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        request = urllib.request.Request(
            self.base + path,
            data=data,
            method=method,
            headers={"Content-Type": content_type, **self.sent},
        )
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                status, text = response.status, response.read()
                self.headers = dict(response.headers)
        except urllib.error.HTTPError as error:
            status, text = error.code, error.read()
            self.headers = dict(error.headers)
        return status, json.loads(text) if text else None


def crash(stack: Stack, name: str) -> None:
    """Kills a service and every process of its group at once, as a machine that dies."""
    pid = stack.pid(name)
    assert pid is not None, f"{name} is not running"
    os.killpg(pid, signal.SIGKILL)
    stack.stop(name)  # reaps it and clears its pid file


def plugin_hosts() -> list[psutil.Process]:
    """The plugin hosts this process started and that live (one exited but not yet waited for
    is gone): the suite's broker and Spark are its children too."""
    hosts = []
    for child in psutil.Process().children():
        try:
            if "headrace.runtime.host" in child.cmdline():
                hosts.append(child)
        except psutil.Error:  # gone, or a zombie, meanwhile
            continue
    return hosts


def batch_records(batch: Any) -> list[tuple[int, int, bytes | None, bytes | None, list[Any]]]:
    """What Kafka reads of an aiokafka batch the source loop filled: each record's offset in
    the batch, timestamp, key, value and headers, as aiokafka's own reader decodes them."""
    records = MemoryRecords(bytes(batch._build()))
    decoded = []
    while (read := records.next_batch()) is not None:
        decoded += [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in read]
    return decoded


@contextmanager
def captured_log(service: str = "test") -> Iterator[io.StringIO]:
    """What this process logs while it is held, as ``log.configure`` sets logging up; the
    set-up as it was after."""
    saved, root = structlog.get_config(), logging.getLogger()
    handlers, level = list(root.handlers), root.level
    out = io.StringIO()
    log.configure(service, stream=out)
    try:
        yield out
    finally:
        structlog.configure(**saved)
        root.handlers[:] = handlers
        root.setLevel(level)
