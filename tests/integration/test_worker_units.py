"""A worker in this process, with the config service and the coordinator as real processes on
the suite's broker, runs many units of one plugin at once in one real plugin process.

Connectors are created before the worker starts, as a restarted worker finds them: it starts all
of them in one assignment, then all of their tasks in the next. What a plugin was asked to do is
read from what the recording test plugin wrote, which is in the order the calls reached it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import shutil
import tempfile
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

import pytest
from aiokafka import AIOKafkaProducer

from headrace.clients.config import ConfigClient
from headrace.core.model.structs import CONNECTOR_TASK, State, WorkUnit
from headrace.core.settings import Settings
from headrace.core.storage.stores import StatusStore
from headrace.core.storage.topiclog import kafka_logs
from headrace.core.storage.topics import ensure_topic
from headrace.isolation.plugins import discover
from headrace.local.stack import Stack
from headrace.worker.worker import build_worker
from tests.support import eventually, json_lines, lifecycle, log_events, plugin_hosts
from tests.wheels import build_wheel

pytestmark = pytest.mark.kafka

CONNECTORS = [f"rec-{i}" for i in range(6)]
TASKS = 3
UNITS = {WorkUnit(n, t) for n in CONNECTORS for t in (CONNECTOR_TASK, *range(TASKS))}


@pytest.fixture
def services(settings_for: Callable[..., Settings]) -> Iterator[Settings]:
    settings = settings_for()
    stack = Stack(settings)
    try:
        stack.start("config")
        stack.start("coordinator")
        yield settings
    finally:
        stack.down()


@pytest.fixture
def run_dir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="hr-", dir="/tmp"))  # sun_path is 108 bytes
    yield path
    shutil.rmtree(path, ignore_errors=True)


def states(status: StatusStore) -> set[State] | None:
    """The states the units are in, once every unit has reported one."""
    return {s.state for s in status.state.values()} if set(status.state) == UNITS else None


async def test_units_start_and_stop_together_in_one_plugin_process(
    services: Settings, run_dir: Path, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger"
    with ConfigClient(services.config_addr, services) as client:
        for name in CONNECTORS:
            config = {
                "connector.class": "recording_sink.RecordingSinkConnector",
                "tasks.max": str(TASKS),
                "topics": f"{services.cluster}-in",
                "path": str(ledger),
            }
            client.create(name, config)
    log_dir = tmp_path / "log"
    log_dir.mkdir()
    worker = build_worker(services, "w1", discover(services.plugin_path), run_dir, log_dir)
    status = StatusStore(kafka_logs(services, "status"))
    await status.start(writer=False)
    try:
        running = asyncio.create_task(worker.run())
        try:
            await eventually("every unit RUNNING", lambda: states(status) == {State.RUNNING})
        finally:
            worker.shutdown()
            await running
        await eventually("every unit UNASSIGNED", lambda: states(status) == {State.UNASSIGNED})
    finally:
        await status.close()

    assert len(log_events(log_dir, "plugin_host_ready")) == 1
    stops = [
        (c["connector"], c.get("task"), c["deleted"])
        for c in lifecycle(ledger)
        if c["event"] == "stop"
    ]
    expected = [(n, t, False) for n in CONNECTORS for t in (None, *range(TASKS))]
    assert sorted(stops, key=str) == sorted(expected, key=str)
    for name in CONNECTORS:  # each connector stopped after every one of its tasks
        connector_stop = stops.index((name, None, False))
        assert all(stops.index((name, t, False)) < connector_stop for t in range(TASKS))


async def test_two_versions_of_a_transform_run_side_by_side_each_in_its_own_process(
    services: Settings, run_dir: Path, tmp_path: Path
) -> None:
    """KIP-891 for components: one connector pins UpperCase 1.0.0, the other runs the latest
    (2.0.0), and a third uses the built-in transforms only; each gets the version it named, in
    a plugin process of its own (a process imports one version of a module)."""
    topic = f"{services.cluster}-words"
    await ensure_topic(services.bootstrap_servers, topic, 1)
    await produce_json(services.bootstrap_servers, topic, [{"word": w} for w in ("a", "b")])
    common = {
        "connector.class": "recording_sink.RecordingSinkConnector",
        "topics": topic,
    }
    upper = {"transforms": "up", "transforms.up.type": "UpperCase", "transforms.up.field": "word"}
    configs = {
        "pinned": {**common, **upper, "transforms.up.plugin.version": "1.0.0"},
        "latest": {**common, **upper},
        "builtin": {
            **common,
            "transforms": "tag",
            "transforms.tag.type": "InsertField$Value",
            "transforms.tag.static.field": "upper_version",
            "transforms.tag.static.value": "none",
        },
    }
    with ConfigClient(services.config_addr, services) as client:
        for name, config in configs.items():
            client.create(name, {**config, "path": str(tmp_path / name)})
    log_dir = tmp_path / "log"
    log_dir.mkdir()
    worker = build_worker(services, "w1", discover(services.plugin_path), run_dir, log_dir)
    running = asyncio.create_task(worker.run())
    try:
        for name in configs:
            await eventually(f"{name} got both records", partial(records_of, tmp_path / name))
    finally:
        worker.shutdown()
        await running

    assert records_of(tmp_path / "pinned") == [
        {"word": "A", "upper_version": "1.0.0"},
        {"word": "B", "upper_version": "1.0.0"},
    ]
    assert records_of(tmp_path / "latest") == [
        {"word": "A", "upper_version": "2.0.0"},
        {"word": "B", "upper_version": "2.0.0"},
    ]
    assert records_of(tmp_path / "builtin") == [
        {"word": "a", "upper_version": "none"},
        {"word": "b", "upper_version": "none"},
    ]
    assert len(log_events(log_dir, "plugin_host_ready")) == 3


async def test_a_regex_without_end_fails_its_sink_and_not_its_neighbour(
    services: Settings, run_dir: Path, tmp_path: Path
) -> None:
    """Two sinks of one plugin version share a plugin process; one's topics.regex backtracks
    without end on a topic name the broker holds. Its matching is given up after a bound: that
    sink fails and says why, and its neighbour goes on moving records, before and after."""
    topic = f"{services.cluster}-calm"
    await ensure_topic(services.bootstrap_servers, topic, 1)
    # The pattern meets this name whenever it looks at the broker's topics.
    await ensure_topic(services.bootstrap_servers, "a" * 40 + f"-{services.cluster}", 1)
    await produce_json(services.bootstrap_servers, topic, [{"n": 1}])
    common = {"connector.class": "recording_sink.RecordingSinkConnector"}
    with ConfigClient(services.config_addr, services) as client:
        client.create("calm", {**common, "topics": topic, "path": str(tmp_path / "calm")})
        client.create(
            "hostile", {**common, "topics.regex": "(a|a)+", "path": str(tmp_path / "hostile")}
        )
    log_dir = tmp_path / "log"
    log_dir.mkdir()
    worker = build_worker(services, "w1", discover(services.plugin_path), run_dir, log_dir)
    status = StatusStore(kafka_logs(services, "status"))
    await status.start(writer=False)
    hostile = WorkUnit("hostile", 0)

    def hostile_failed() -> str | None:
        found = status.state.get(hostile)
        return found.trace if found is not None and found.state is State.FAILED else None

    try:
        running = asyncio.create_task(worker.run())
        try:
            trace = await eventually("the hostile sink's task FAILED", hostile_failed)
            await produce_json(services.bootstrap_servers, topic, [{"n": 2}])
            await eventually(
                "the calm sink got both records", partial(records_of, tmp_path / "calm")
            )
        finally:
            worker.shutdown()
            await running
    finally:
        await status.close()

    assert "topics.regex: the regex '(a|a)+' took" in trace
    assert records_of(tmp_path / "calm") == [{"n": 1}, {"n": 2}]
    assert not (tmp_path / "hostile" / "records.jsonl").exists()
    assert len(log_events(log_dir, "plugin_host_ready")) == 1  # one process for both


def records_of(path: Path) -> list[dict[str, object]] | None:
    """The values the recording sink wrote under ``path``, once there are two."""
    found = [r["value"] for r in json_lines(path / "records.jsonl")]
    return found if len(found) == 2 else None


async def produce_json(kafka: str, topic: str, values: list[dict[str, object]]) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=kafka)
    await producer.start()
    try:
        for value in values:
            await producer.send(topic, value=json.dumps(value).encode())
        await producer.flush()
    finally:
        await producer.stop()


PINNED_SINK = '''
"""A sink whose version pins hr-pin; it writes the hr-pin version it imported per record."""
import json
from pathlib import Path

import hr_pin

from headrace.sdk import ConfigDef, ConfigType, SinkConnector, SinkTask


class PinnedSinkConnector(SinkConnector):
    def config(self):
        return ConfigDef().define("path", ConfigType.STRING, doc="where to write")

    async def start(self, config):
        self.path = config["path"]

    def task_class(self):
        return PinnedSinkTask

    def task_configs(self, max_tasks):
        return [{"path": self.path}]

    async def stop(self, deleted=False):
        pass


class PinnedSinkTask(SinkTask):
    async def start(self, config):
        self.path = Path(config["path"])
        self.path.mkdir(parents=True, exist_ok=True)

    async def put(self, records):
        with (self.path / "records.jsonl").open("a") as out:
            for r in records:
                out.write(json.dumps({"value": {"hr_pin": hr_pin.VERSION}}) + "\\n")

    async def stop(self, deleted=False):
        pass
'''


def pinned_plugin(root: Path, version: str, pin: str) -> None:
    """``pinned/<version>/``: the sink above, requiring ``hr-pin==<pin>``, bundled with it."""
    folder = root / "pinned" / version
    (folder / "wheels").mkdir(parents=True)
    build_wheel(folder / "wheels", "hr-pin", pin)
    (folder / "pinned_sink.py").write_text(PINNED_SINK)
    manifest = {
        "class": "pinned_sink.PinnedSinkConnector",
        "version": version,
        "type": "sink",
        "requirements": [f"hr-pin=={pin}"],
    }
    (folder / "manifest.json").write_text(json.dumps(manifest))


async def test_two_versions_with_conflicting_requirements_run_at_once(
    settings_for: Callable[..., Settings], run_dir: Path, tmp_path: Path
) -> None:
    """Each version of one plugin gets the environment its manifest asks for, in its own
    process: 1.0.0 imports hr-pin 1.0 while 2.0.0, running beside it, imports hr-pin 2.0."""
    plugins = tmp_path / "plugins"
    pinned_plugin(plugins, "1.0.0", "1.0")
    pinned_plugin(plugins, "2.0.0", "2.0")
    services = settings_for(plugins)
    topic = f"{services.cluster}-pinned"
    await ensure_topic(services.bootstrap_servers, topic, 1)
    await produce_json(services.bootstrap_servers, topic, [{"n": 1}, {"n": 2}])
    stack = Stack(services)
    try:
        stack.start("config")
        stack.start("coordinator")
        with ConfigClient(services.config_addr, services) as client:
            for version in ("1.0.0", "2.0.0"):
                config = {
                    "connector.class": "PinnedSink",
                    "connector.plugin.version": version,
                    "topics": topic,
                    "path": str(tmp_path / version),
                }
                client.create(f"pinned-{version}", config)
        log_dir = tmp_path / "log"
        log_dir.mkdir()
        worker = build_worker(services, "w1", discover(services.plugin_path), run_dir, log_dir)
        running = asyncio.create_task(worker.run())
        try:
            for version in ("1.0.0", "2.0.0"):
                await eventually(
                    f"pinned {version} got both records",
                    partial(records_of, tmp_path / version),
                )
        finally:
            worker.shutdown()
            await running
    finally:
        stack.down()

    assert records_of(tmp_path / "1.0.0") == [{"hr_pin": "1.0"}] * 2
    assert records_of(tmp_path / "2.0.0") == [{"hr_pin": "2.0"}] * 2
    assert len(log_events(log_dir, "plugin_host_ready")) == 2


async def test_an_idle_worker_s_first_plugin_process_is_the_spare_it_kept_ready(
    services: Settings, run_dir: Path, tmp_path: Path
) -> None:
    log_dir = tmp_path / "log"
    log_dir.mkdir()
    settings = dataclasses.replace(services, plugin_idle_stop_s=0.5)
    worker = build_worker(settings, "w1", discover(services.plugin_path), run_dir, log_dir)
    running = asyncio.create_task(worker.run())
    try:
        [spare] = await eventually("a spare plugin host", plugin_hosts)
        assert "--spare" in spare.cmdline()
        config = {
            "connector.class": "recording_sink.RecordingSinkConnector",
            "tasks.max": "2",
            "topics": f"{services.cluster}-in",
            "path": str(tmp_path / "ledger"),
        }
        with ConfigClient(services.config_addr, services) as client:
            client.create("first", config)
            await eventually(
                "the connector and its two tasks RUNNING",
                lambda: (
                    {t.state for t in client.status("first").tasks} == {"RUNNING"}
                    and len(client.status("first").tasks) == 2
                ),
            )
        # The spare serves the plugin: no process was started for it, and none kept beside.
        [ready] = log_events(log_dir, "plugin_host_ready")
        assert ready["pid"] == spare.pid
        assert [p.pid for p in plugin_hosts()] == [spare.pid]

        # Its units gone, the process is stopped once idle, and the worker keeps a spare again.
        with ConfigClient(services.config_addr, services) as client:
            client.delete("first")
        [again] = await eventually(
            "a new spare in place of the idle process",
            lambda: [p for p in plugin_hosts() if p.pid != spare.pid] or None,
        )
        assert "--spare" in again.cmdline()
        await eventually("the idle process gone", lambda: spare not in plugin_hosts())
    finally:
        worker.shutdown()
        await running
    await eventually("every plugin host gone", lambda: not plugin_hosts())
