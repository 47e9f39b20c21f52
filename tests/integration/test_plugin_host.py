"""The plugin host as a real process, against the real broker the suite starts.

Each test spawns ``python -m headrace.runtime.host`` for one plugin version, drives it over its
Unix socket with the generated gRPC stub, and checks what landed in Kafka, in the test plugins'
files and in the host's JSON log. What a plugin was asked to do (start, stop and its ``deleted``
flag) is read from what the recording plugin wrote, not from the host's log. No fixed sleeps:
every wait polls a condition under a deadline.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import stat
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import grpc
import immutables
import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient

from headrace.core.settings import BUILTIN_PLUGINS, WORKER_PROPERTIES, Settings
from headrace.core.storage.stores import OffsetStore
from headrace.core.storage.topics import ensure_topic
from headrace.isolation.hostfolder import OVERRUN_FILE
from headrace.runtime.watchdog import EXIT_OVERRUN
from headrace.v1 import plugin_pb2 as pb
from tests.support import (
    HOST_DEADLINE_S,
    committed,
    consume,
    eventually,
    json_lines,
    next_event,
    plugin_host,
    start_all,
    start_task,
    stops,
)

pytestmark = pytest.mark.kafka

TEST_PLUGINS = Path(__file__).parents[1] / "plugins"
DATAGEN = BUILTIN_PLUGINS / "datagen" / "1.0.0" / "manifest.json"
DEADLINE_S = HOST_DEADLINE_S
T = TypeVar("T")


async def stored_offset(kafka: str, cluster: str, connector: str, task: int, tasks: int = 1) -> Any:
    store = OffsetStore(Settings(bootstrap_servers=kafka, cluster=cluster), connector)
    try:
        await store.load()
        return store.offset({"generator": connector, "task": task, "of": tasks})
    finally:
        await store.close()  # the store owns Kafka clients


async def produce(kafka: str, topic: str, messages: list[tuple[bytes, bytes]]) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=kafka)
    await producer.start()
    try:
        for key, value in messages:
            await producer.send(topic, value=value, key=key)
        await producer.flush()
    finally:
        await producer.stop()


def at_least(path: Path, count: int) -> Callable[[], list[dict[str, Any]] | None]:
    """A check for ``eventually``: the JSON lines of ``path`` once there are ``count``."""

    def check() -> list[dict[str, Any]] | None:
        found = json_lines(path)
        return found if len(found) >= count else None

    return check


async def test_datagen_tasks_produce_every_id_once(
    kafka: str, cluster: str, tmp_path: Path
) -> None:
    topic, n = f"{cluster}-data", 200
    config = {
        "name": "gen",
        "connector.class": "DatagenSource",
        "tasks.max": "2",
        "topic": topic,
        "records": str(n),
        "batch.size": "50",
    }
    async with plugin_host(DATAGEN, kafka, cluster, tmp_path) as host:
        socket = host.events("plugin_host_ready")[0]["socket"]
        assert stat.S_IMODE(os.stat(socket).st_mode) == 0o600  # only the worker's user calls it
        described = await host.stub.Describe(pb.DescribeRequest())
        assert (described.version, described.type) == ("1.0.0", "source")
        assert len(await start_all(host, "gen", config)) == 2

        records = await consume(kafka, topic, n)
        assert sorted(int(json.loads(r.key or b"")) for r in records) == list(range(n))
        for r in records:
            value = json.loads(r.value or b"")
            assert value == {
                "id": value["id"],
                "name": f"record-{value['id']}",
                "amount": value["id"] * 0.25,
            }

        await host.stub.StopTask(pb.StopRequest(connector="gen", task=0, deleted=False))
        await host.stub.StopTask(pb.StopRequest(connector="gen", task=1, deleted=True))
        await host.stub.StopConnector(pb.StopRequest(connector="gen", task=-1, deleted=True))
        logged = host.entries()
        assert logged and all(e.get("worker") == "test-worker" for e in logged)
    assert len(await committed(kafka, topic)) == n  # nothing produced twice


async def test_stops_reach_the_plugin_once_with_their_deleted_flag(
    kafka: str, cluster: str, tmp_path: Path
) -> None:
    topic, out = f"{cluster}-in", tmp_path / "out"
    await ensure_topic(kafka, topic, 1)
    config = {"name": "rec", "tasks.max": "2", "topics": topic, "path": str(out)}
    manifest = TEST_PLUGINS / "recording" / "1.0.0" / "manifest.json"
    async with plugin_host(manifest, kafka, cluster, tmp_path) as host:
        assert len(await start_all(host, "rec", config)) == 2
        await host.stub.StopTask(pb.StopRequest(connector="rec", task=0, deleted=False))
        await host.stub.StopTask(pb.StopRequest(connector="rec", task=1, deleted=True))
        await host.stub.StopConnector(pb.StopRequest(connector="rec", task=-1, deleted=True))
        await host.stub.StopTask(pb.StopRequest(connector="rec", task=7, deleted=True))  # unknown
        await host.stub.StopConnector(pb.StopRequest(connector="nope", task=-1, deleted=True))

    # After the host's own shutdown too: nothing was stopped twice, nothing unknown was stopped.
    assert stops(out) == [
        ("connector", None, True),
        ("task", 0, False),
        ("task", 1, True),
    ]


async def test_a_restarted_task_resumes_from_its_stored_offset(
    kafka: str, cluster: str, tmp_path: Path
) -> None:
    topic, n = f"{cluster}-data", 300
    config = {
        "name": "slow",
        "tasks.max": "1",
        "topic": topic,
        "records": str(n),
        "batch.size": "10",
        "interval.ms": "50",
    }
    async with plugin_host(DATAGEN, kafka, cluster, tmp_path) as host:
        started = await host.stub.StartConnector(
            pb.StartConnectorRequest(name="slow", config=config)
        )
        request = start_task("slow", 0, config, started.tasks[0])
        await host.stub.StartTask(request)
        await consume(kafka, topic, 30)
        await host.stub.StopTask(pb.StopRequest(connector="slow", task=0))

        stored = await stored_offset(kafka, cluster, "slow", 0)
        produced = len(await committed(kafka, topic))
        assert 30 <= produced < n and stored == {"next": produced}  # a graceful stop commits all

        await host.stub.StartTask(request)
        records = await consume(kafka, topic, n)
        assert sorted(json.loads(r.value or b"")["id"] for r in records) == list(range(n))

        async def final_offset_stored() -> bool:
            return await stored_offset(kafka, cluster, "slow", 0) == {"next": n}

        await eventually("the task's final offset stored", final_offset_stored)
        assert len(await committed(kafka, topic)) == n  # no duplicates, no gaps


@pytest.mark.parametrize("version", ["1.0.0", "2.0.0"])
async def test_recording_sink_gets_every_record_and_one_deleted_stop_per_task(
    kafka: str, cluster: str, tmp_path: Path, version: str
) -> None:
    topic, out, n = f"{cluster}-in", tmp_path / "out", 50
    await ensure_topic(kafka, topic, 2)
    expected = {(str(i), json.dumps({"id": i, "tag": f"r{i}"})) for i in range(n)}
    await produce(kafka, topic, [(json.dumps(k).encode(), v.encode()) for k, v in expected])
    config = {"name": "rec", "tasks.max": "2", "topics": topic, "path": str(out)}
    manifest = TEST_PLUGINS / "recording" / version / "manifest.json"
    async with plugin_host(manifest, kafka, cluster, tmp_path) as host:
        configs = await start_all(host, "rec", config)
        assert [c["topics"] for c in configs] == [topic, topic]  # as Connect hands them down
        got = await eventually("every record", at_least(out / "records.jsonl", n))
        assert {(r["key"], json.dumps(r["value"])) for r in got} == expected
        tagged = {r.get("version") for r in got}
        assert tagged == ({"2.0.0"} if version == "2.0.0" else {None})

        for k in (0, 1):
            await host.stub.StopTask(pb.StopRequest(connector="rec", task=k, deleted=True))
        await host.stub.StopConnector(pb.StopRequest(connector="rec", task=-1, deleted=True))

    assert stops(out) == [
        ("connector", None, True),
        ("task", 0, True),
        ("task", 1, True),
    ]
    assert len(json_lines(out / "records.jsonl")) == n
    admin = AIOKafkaAdminClient(bootstrap_servers=kafka)
    await admin.start()
    try:
        committed = await admin.list_consumer_group_offsets(f"{cluster}-connect-rec")
    finally:
        await admin.close()
    assert sum(meta.offset for meta in committed.values()) == n


async def test_a_failed_sink_task_commits_nothing_it_did_not_deliver(
    kafka: str, cluster: str, tmp_path: Path
) -> None:
    topic, out, n = f"{cluster}-in", tmp_path / "out", 40
    await ensure_topic(kafka, topic, 2)
    await produce(kafka, topic, [(b'"k"', json.dumps({"id": i}).encode()) for i in range(n)])
    config = {
        "name": "rec",
        "tasks.max": "2",
        "topics": topic,
        "path": str(out),
        "fail.put.task": "0",
    }
    manifest = TEST_PLUGINS / "recording" / "1.0.0" / "manifest.json"
    async with plugin_host(manifest, kafka, cluster, tmp_path) as host:
        watch = host.stub.Watch(pb.WatchRequest())
        started = await host.stub.StartConnector(
            pb.StartConnectorRequest(name="rec", config=config)
        )
        await host.stub.StartTask(start_task("rec", 0, config, started.tasks[0]))
        failed = await next_event(watch, lambda e: e.task == 0 and e.state == "FAILED")
        assert "failing on purpose in put" in failed.trace
        # Task 1 joins the group: the failed task's partitions are revoked from it, and that
        # rebalance must not commit the batch its put() never took.
        await host.stub.StartTask(start_task("rec", 1, config, started.tasks[1]))
        got = await eventually(
            "every record, via task 1", at_least(out / "records.jsonl", n), DEADLINE_S
        )
        assert sorted(r["value"]["id"] for r in got) == list(range(n))
        watch.cancel()


@pytest.mark.parametrize("tolerance", ["none", "all"])
async def test_malformed_records_fail_the_task_or_go_to_the_dead_letter_queue(
    kafka: str, cluster: str, tmp_path: Path, tolerance: str
) -> None:
    topic, dlq, out = f"{cluster}-in", f"{cluster}-dlq", tmp_path / "out"
    good, bad = (b'"0"', b'{"id": 0}'), (b'"1"', b"{oops")
    await produce(kafka, topic, [good, bad, (b'"2"', b'{"id": 2}')])
    config = {
        "name": "rec",
        "tasks.max": "1",
        "topics": topic,
        "path": str(out),
        "errors.tolerance": tolerance,
        "errors.deadletterqueue.topic.name": dlq,
        "errors.deadletterqueue.context.headers.enable": "true",
        "errors.log.enable": "true",
        "errors.log.include.messages": "true",
    }
    manifest = TEST_PLUGINS / "recording" / "1.0.0" / "manifest.json"
    async with plugin_host(manifest, kafka, cluster, tmp_path) as host:
        watch = host.stub.Watch(pb.WatchRequest())
        await start_all(host, "rec", config)
        if tolerance == "none":
            failed = await next_event(watch, lambda e: e.state == "FAILED")
            assert (failed.connector, failed.task) == ("rec", 0)
            assert (
                f"value converter failed for the record at topic {topic} partition 0 offset 1"
                in failed.trace
            )
        else:
            got = await eventually(
                "the good records", at_least(out / "records.jsonl", 2), DEADLINE_S
            )
            assert [r["offset"] for r in got] == [0, 2]
            [dead] = await consume(kafka, dlq, 1)
            assert dead.value == b"{oops"
            assert dict(dead.headers)["__connect.errors.offset"] == b"1"
            assert [e["offset"] for e in host.events("record_skipped")] == [1]
        watch.cancel()


@pytest.mark.parametrize("fail_in", ["start", "poll"])
async def test_a_failing_task_is_reported_failed_on_watch_with_its_trace(
    kafka: str, cluster: str, tmp_path: Path, fail_in: str
) -> None:
    topic = f"{cluster}-out"
    config = {
        "name": "bad",
        "tasks.max": "1",
        "topic": topic,
        "fail.in": fail_in,
        "fail.after.records": "3",
    }
    manifest = TEST_PLUGINS / "failing" / "1.0.0" / "manifest.json"
    async with plugin_host(manifest, kafka, cluster, tmp_path) as host:
        watch = host.stub.Watch(pb.WatchRequest())
        await start_all(host, "bad", config)
        failed = await next_event(watch, lambda e: e.task == 0 and e.state == "FAILED")
        assert failed.trace.startswith("Traceback")
        assert f"RuntimeError: failing on purpose in {fail_in}" in failed.trace
        if fail_in == "poll":
            assert len(await committed(kafka, topic)) == 3  # what came before the failure is kept
        await host.stub.StopTask(pb.StopRequest(connector="bad", task=0))
        assert await next_event(watch, lambda e: e.task == 0 and e.state == "STOPPED")
        watch.cancel()


async def test_connector_errors_cross_the_socket_as_status_and_text(
    kafka: str, cluster: str, tmp_path: Path
) -> None:
    async with plugin_host(DATAGEN, kafka, cluster, tmp_path) as host:
        with pytest.raises(grpc.aio.AioRpcError) as invalid:
            await host.stub.StartConnector(
                pb.StartConnectorRequest(name="g", config={"records": "-1"})
            )
        assert invalid.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert 'Missing required configuration "topic"' in (invalid.value.details() or "")
    manifest = TEST_PLUGINS / "failing" / "1.0.0" / "manifest.json"
    async with plugin_host(manifest, kafka, cluster, tmp_path) as host:
        with pytest.raises(grpc.aio.AioRpcError) as internal:
            await host.stub.StartConnector(
                pb.StartConnectorRequest(name="f", config={"fail.in": "connector"})
            )
        assert internal.value.code() == grpc.StatusCode.INTERNAL
        details = internal.value.details() or ""
        assert details.startswith("Traceback") and "failing on purpose" in details


async def test_a_hung_stop_is_abandoned_after_the_timeout(
    kafka: str, cluster: str, tmp_path: Path
) -> None:
    manifest = TEST_PLUGINS / "hanging" / "1.0.0" / "manifest.json"
    config = {"name": "hang", "tasks.max": "1"}
    async with plugin_host(manifest, kafka, cluster, tmp_path, stop_timeout=1.0) as host:
        watch = host.stub.Watch(pb.WatchRequest())
        await start_all(host, "hang", config)
        await next_event(watch, lambda e: e.task == 0 and e.state == "RUNNING")
        began = time.monotonic()
        await host.stub.StopTask(pb.StopRequest(connector="hang", task=0, deleted=True), timeout=30)
        assert time.monotonic() - began < 10
        assert [e["task"] for e in host.events("task_stop_timeout")] == [0]
        assert [e["deleted"] for e in host.events("task_stopped")] == [True]
        watch.cancel()


async def test_a_crashing_plugin_takes_only_its_own_process_down(
    kafka: str, cluster: str, tmp_path: Path
) -> None:
    manifest = TEST_PLUGINS / "crashing" / "1.0.0" / "manifest.json"
    config = {"name": "boom", "tasks.max": "1"}
    async with plugin_host(manifest, kafka, cluster, tmp_path) as host:
        await start_all(host, "boom", config)
        assert await asyncio.wait_for(host.process.wait(), DEADLINE_S) == 3


async def test_sigterm_stops_everything_without_the_deleted_flag(
    kafka: str, cluster: str, tmp_path: Path
) -> None:
    topic, out = f"{cluster}-in", tmp_path / "out"
    await ensure_topic(kafka, topic, 1)
    config = {"name": "rec", "tasks.max": "1", "topics": topic, "path": str(out)}
    manifest = TEST_PLUGINS / "recording" / "1.0.0" / "manifest.json"
    async with plugin_host(manifest, kafka, cluster, tmp_path) as host:
        await start_all(host, "rec", config)
        host.process.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(host.process.wait(), DEADLINE_S) == 0
        assert host.events("plugin_host_stopped")
    assert stops(out) == [("connector", None, False), ("task", 0, False)]


async def test_a_host_whose_lease_runs_out_stops_everything_and_exits(
    kafka: str, cluster: str, tmp_path: Path
) -> None:
    topic, out = f"{cluster}-in", tmp_path / "out"
    await ensure_topic(kafka, topic, 1)
    config = {"name": "rec", "tasks.max": "1", "topics": topic, "path": str(out)}
    manifest = TEST_PLUGINS / "recording" / "1.0.0" / "manifest.json"
    async with plugin_host(manifest, kafka, cluster, tmp_path) as host:
        await start_all(host, "rec", config)
        # The worker says it is alive once, then goes silent (frozen, say).
        await host.stub.KeepAlive(pb.KeepAliveRequest(lease_ms=500, stop_ms=5000))
        assert await asyncio.wait_for(host.process.wait(), DEADLINE_S) == 0
        assert host.events("plugin_host_fenced")
    assert stops(out) == [("connector", None, False), ("task", 0, False)]


async def test_a_clean_up_starts_the_deleted_unit_only_to_stop_it_as_deleted(
    kafka: str, cluster: str, tmp_path: Path
) -> None:
    topic, out = f"{cluster}-in", tmp_path / "out"
    await ensure_topic(kafka, topic, 1)
    await produce(kafka, topic, [(b"k", b"v")])
    config = {"name": "gone", "tasks.max": "1", "topics": topic, "path": str(out)}
    manifest = TEST_PLUGINS / "recording" / "1.0.0" / "manifest.json"
    async with plugin_host(manifest, kafka, cluster, tmp_path) as host:
        for task in (-1, 0):
            await host.stub.Cleanup(
                pb.CleanupRequest(
                    connector="gone", task=task, connector_config=config, task_config=config
                )
            )
    assert [
        (e["unit"], e["event"], e.get("deleted")) for e in json_lines(out / "lifecycle.jsonl")
    ] == [
        ("connector", "start", None),
        ("connector", "stop", True),
        ("task", "start", None),
        ("task", "stop", True),
    ]
    assert json_lines(out / "records.jsonl") == []  # nothing was consumed on the way


@pytest.mark.parametrize("hang_in", ["poll", "block"])
async def test_a_call_that_overruns_its_bound_ends_the_process_with_the_reason_last(
    kafka: str, cluster: str, tmp_path: Path, hang_in: str
) -> None:
    """A poll that never returns, awaiting or holding the event loop, ends its process, whose
    log ends with the call, its unit and its bound; that line alone is left beside its socket,
    for the trace the worker reports."""
    manifest = TEST_PLUGINS / "hanging" / "1.0.0" / "manifest.json"
    config = {"name": "hang", "tasks.max": "1", "hang.in": hang_in}
    bound = {"HEADRACE_PLUGIN_CALL_TIMEOUT": "1.5"}
    async with plugin_host(manifest, kafka, cluster, tmp_path, env=bound) as host:
        await start_all(host, "hang", config)
        code = await asyncio.wait_for(host.process.wait(), 60)
        assert code == EXIT_OVERRUN
        last = host.log_path.read_text().strip().splitlines()[-1]
        assert last.startswith("plugin call timed out: poll of hang-0 has not returned after")
        assert last.endswith("(bound 1.5 s): the plugin process was killed")
        assert (host.folder / OVERRUN_FILE).read_text() == last + "\n"


async def test_a_connector_without_converters_of_its_own_takes_the_worker_config_s(
    kafka: str, cluster: str, tmp_path: Path
) -> None:
    topic = f"{cluster}-enveloped"
    worker = {
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "true",
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
    }
    handed = Settings(worker_config=immutables.Map(worker)).to_env()[WORKER_PROPERTIES]
    config = {
        "name": "gen",
        "connector.class": "DatagenSource",
        "topic": topic,
        "records": "3",
        "key.converter": "json",  # its own: the worker's StringConverter is not taken
    }
    env = {WORKER_PROPERTIES: handed}
    async with plugin_host(DATAGEN, kafka, cluster, tmp_path, env=env) as host:
        await start_all(host, "gen", config)
        records = await consume(kafka, topic, 3)
    for r in records:
        value = json.loads(r.value or b"")
        assert set(value) == {"schema", "payload"}  # the worker's converter, with its key
        assert value["payload"]["name"] == f"record-{value['payload']['id']}"
        # The connector's own converter, not the worker's: JSON, not the bare string.
        assert json.loads(r.key or b"") == {"schema": None, "payload": str(value["payload"]["id"])}
