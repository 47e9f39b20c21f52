"""End to end: records from a source connector reach Parquet through Kafka and Spark, and
deleting a connector is the one stop that says ``deleted=True``."""

from __future__ import annotations

import asyncio
import json
import signal
from functools import partial
from pathlib import Path

import grpc
import pyarrow.dataset as ds
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import KafkaError

from headrace.cli.shapes import status_json
from headrace.clients.config import ConfigClient
from headrace.core.storage.topics import ensure_topic
from headrace.local.stack import Stack
from tests.support import committed, eventually, json_lines, lifecycle, log_events, stops, wait_for

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

RECORDS = 600


def rows_in(path: Path) -> int:
    if not path.exists():
        return 0
    return ds.dataset(path, format="parquet", ignore_prefixes=[".", "_"]).count_rows()


def all_running(client: ConfigClient, name: str, tasks: int) -> dict | None:
    status = status_json(client.status(name))
    states = [status["connector"]["state"], *(t["state"] for t in status["tasks"])]
    if len(status["tasks"]) == tasks and all(s == "RUNNING" for s in states):
        return status
    return None


def recording_sink(folder: Path, topics: str, tasks: int = 2) -> dict[str, str]:
    """The config of a recording test sink writing its lifecycle calls under ``folder``."""
    return {
        "connector.class": "recording_sink.RecordingSinkConnector",
        "tasks.max": str(tasks),
        "topics": topics,
        "path": str(folder),
    }


def test_source_to_parquet_then_delete_the_sink(stack: Stack, tmp_path: Path) -> None:
    out = tmp_path / "parquet"
    ledger = tmp_path / "ledger"
    topic = "e2e-records"
    with ConfigClient(stack.settings.config_addr, stack.settings) as client:
        # Beside the Parquet sink, a recording sink on the same topic: it writes down every stop
        # call it gets, so its deletion can be checked call by call.
        client.create("ledger", recording_sink(ledger, topic))
        client.create(
            "gen",
            {
                "connector.class": "DatagenSource",
                "tasks.max": "2",
                "topic": topic,
                "records": str(RECORDS),
                "batch.size": "50",
            },
        )
        client.create(
            "lake",
            {
                "connector.class": "headrace_parquet.ParquetSinkConnector",
                "tasks.max": "2",
                "topics": topic,
                "path": str(out),
            },
        )

        wait_for(f"{RECORDS} rows in Parquet", lambda: rows_in(out) >= RECORDS, timeout=180)
        table = ds.dataset(out, format="parquet", ignore_prefixes=[".", "_"]).to_table()
        rows = sorted(table.select(["id", "name", "amount"]).to_pylist(), key=lambda r: r["id"])
        assert rows == [
            {"id": i, "name": f"record-{i}", "amount": i * 0.25} for i in range(RECORDS)
        ]

        for name in ("gen", "lake"):
            status = wait_for(f"{name} running", partial(all_running, client, name, 2))
            assert {status["connector"]["version"], *(t["version"] for t in status["tasks"])} == {
                "1.0.0"
            }
        markers = out / "_provisioned"
        assert sorted(p.name for p in markers.iterdir()) == [
            "connector-lake",
            "lake-task-0",
            "lake-task-1",
        ]

        wait_for("the ledger running", partial(all_running, client, "ledger", 2))
        client.delete("lake")
        client.delete("ledger")
        wait_for("the sink's provisioned markers removed", lambda: not any(markers.iterdir()))
        wait_for("the ledger's connector and tasks stopped", lambda: len(stops(ledger)) >= 3)
        assert stops(ledger) == [("connector", None, True), ("task", 0, True), ("task", 1, True)]
        for name in ("lake", "ledger"):
            with pytest.raises(grpc.RpcError) as info:
                client.status(name)
            assert info.value.code() == grpc.StatusCode.NOT_FOUND
        assert rows_in(out) == RECORDS  # deletion cleans up what was provisioned, not the data
        client.delete("gen")


def test_shutdown_and_rebalance_stop_with_deleted_false(stack: Stack, tmp_path: Path) -> None:
    out = tmp_path / "recorded"
    with ConfigClient(stack.settings.config_addr, stack.settings) as client:
        client.create("keeper", recording_sink(out, "keeper-in"))
        before = wait_for("keeper running", lambda: all_running(client, "keeper", 2))
        owners = {before["connector"]["worker_id"], *(t["worker_id"] for t in before["tasks"])}
        assert owners == {"worker-1", "worker-2"}  # three units over two workers

        stack.stop("worker-2")  # a clean shutdown: its units stop, and move to worker-1
        moved = wait_for(
            "keeper running on worker-1 alone",
            lambda: (
                (s := all_running(client, "keeper", 2))
                and {s["connector"]["worker_id"], *(t["worker_id"] for t in s["tasks"])}
                == {"worker-1"}
                and s
            ),
        )
        assert moved

        stack.start("worker-2")  # a rebalance: worker-1 hands units back
        wait_for(
            "keeper spread over both workers again",
            lambda: (
                (s := all_running(client, "keeper", 2))
                and {s["connector"]["worker_id"], *(t["worker_id"] for t in s["tasks"])}
                == {"worker-1", "worker-2"}
            ),
        )

        moves = stops(out)
        assert moves, "the shutdown and the rebalance stopped units"
        assert all(deleted is False for _, _, deleted in moves)
        client.delete("keeper")
        wait_for(
            "keeper stopped as deleted",
            lambda: sum(deleted for _, _, deleted in stops(out)) >= 3,
        )
        assert [(u, t) for u, t, deleted in stops(out) if deleted] == [
            ("connector", None),
            ("task", 0),
            ("task", 1),
        ]


def test_a_crashed_worker_s_units_run_again_elsewhere(stack: Stack, tmp_path: Path) -> None:
    out = tmp_path / "crash"
    with ConfigClient(stack.settings.config_addr, stack.settings) as client:
        client.create(
            "survivor",
            {
                "connector.class": "headrace_parquet.ParquetSinkConnector",
                "tasks.max": "2",
                "topics": "survivor-in",
                "path": str(out),
            },
        )
        wait_for("survivor running", lambda: all_running(client, "survivor", 2))
        stack.stop("worker-1", sig=signal.SIGKILL)
        wait_for(
            "survivor running on worker-2 alone",
            lambda: (
                (s := all_running(client, "survivor", 2))
                and {s["connector"]["worker_id"], *(t["worker_id"] for t in s["tasks"])}
                == {"worker-2"}
            ),
            timeout=60,
        )
        stack.start("worker-1")
        client.delete("survivor")


# What the crashing plugin writes to its standard error as it dies: it stays in its own log.
LAST_WORDS = "db.password=crash-time-secret"

MISBEHAVING = {
    "raises-in-start": (
        {"connector.class": "failing_source.FailingSourceConnector", "fail.in": "start"},
        "failing on purpose in start",
    ),
    "blocks-in-poll": (
        {"connector.class": "hanging_source.HangingSourceConnector", "hang.in": "block"},
        "plugin call timed out: poll of blocks-in-poll-0 has not returned",
    ),
    "crashes": (
        {
            "connector.class": "crashing_source.CrashingSourceConnector",
            "crash.after.records": "5",
            "last.words": LAST_WORDS,
        },
        "exited with code 3",
    ),
}


def failed_task(client: ConfigClient, name: str) -> dict | None:
    status = status_json(client.status(name))
    tasks = status["tasks"]
    return tasks[0] if tasks and tasks[0]["state"] == "FAILED" else None


def test_misbehaving_plugins_fail_only_themselves_while_another_moves_1000_records(
    stack: Stack, tmp_path: Path
) -> None:
    out, topic = tmp_path / "steady", f"{tmp_path.name}-in"
    asyncio.run(ensure_topic(stack.settings.bootstrap_servers, topic, 2))
    with ConfigClient(stack.settings.config_addr, stack.settings) as client:
        client.create("steady", {**recording_sink(out, topic), "connector.plugin.version": "2.0.0"})
        # First, and alone: its plugin's process also hosts blocks-in-poll, which ends it.
        client.create("hangs-in-stop", {"connector.class": "hanging_source.HangingSourceConnector"})
        wait_for("hangs-in-stop running", lambda: all_running(client, "hangs-in-stop", 1))
        client.delete("hangs-in-stop")  # its stop never returns: abandoned, the deletion goes on
        wait_for(
            "hangs-in-stop's stop abandoned",
            lambda: log_events(stack.log_dir, "task_stop_timeout", connector="hangs-in-stop"),
        )
        for name, (config, _) in MISBEHAVING.items():
            client.create(name, {**config, "tasks.max": "1"})
        client.create(
            "flow",
            {"connector.class": "DatagenSource", "topic": topic, "records": "1000"},
        )
        for name, (_, reason) in MISBEHAVING.items():
            task = wait_for(f"{name}'s task FAILED", partial(failed_task, client, name))
            assert reason in task["trace"], task["trace"]
            assert LAST_WORDS not in task["trace"]
        got = wait_for(
            "1,000 records delivered",
            lambda: r if len(r := json_lines(out / "records.jsonl")) >= 1000 else None,
        )
        assert len({(r["partition"], r["offset"]) for r in got}) == 1000
        steady = wait_for("steady still running", lambda: all_running(client, "steady", 2))
        assert {t["version"] for t in steady["tasks"]} == {"2.0.0"}  # the version asked for
        assert all(stack.pid(w) for w in ("worker-1", "worker-2"))  # no worker went down
        for name in [*MISBEHAVING, "flow", "steady"]:
            client.delete(name)


def test_deleting_and_recreating_at_once_still_stops_the_old_one_as_deleted(
    stack: Stack, tmp_path: Path
) -> None:
    out = tmp_path / "again"
    config = recording_sink(out, "again-in", tasks=1)
    with ConfigClient(stack.settings.config_addr, stack.settings) as client:
        client.create("again", config)
        wait_for("again running", lambda: all_running(client, "again", 1))
        client.delete("again")
        client.create("again", config)  # right away: the coordinator may see both at once

        wait_for("the old incarnation stopped", lambda: len(stops(out)) >= 2)
        wait_for("the new one running", lambda: all_running(client, "again", 1))
        assert sorted(deleted for _, _, deleted in stops(out)) == [True, True]
        # The new incarnation started afresh, connector and task, after the old one stopped.
        calls = [(e["event"], e["unit"]) for e in lifecycle(out)]
        last_stop = max(i for i, (event, _) in enumerate(calls) if event == "stop")
        started = {unit for event, unit in calls[last_stop:] if event == "start"}
        assert started == {"connector", "task"}
        client.delete("again")


def test_a_transform_chain_with_a_predicate_end_to_end(stack: Stack, tmp_path: Path) -> None:
    out, topic, n = tmp_path / "shaped", "shape-raw", 150
    kafka = stack.settings.bootstrap_servers

    def source(origin: str, extra: dict[str, str]) -> dict[str, str]:
        """A datagen whose transforms insert a field naming it, and any ``extra`` ones."""
        return {
            "connector.class": "DatagenSource",
            "topic": topic,
            "records": str(n),
            "batch.size": "50",
            "transforms": ",".join(["origin", *sorted({k.split(".")[1] for k in extra})]),
            "transforms.origin.type": "org.apache.kafka.connect.transforms.InsertField$Value",
            "transforms.origin.static.field": "origin",
            "transforms.origin.static.value": origin,
            **extra,
        }

    with ConfigClient(stack.settings.config_addr, stack.settings) as client:
        # The marked source's records, each with a header, are all in the topic before the
        # plain source's: a sink that has the plain ones has read past every marked one.
        marked = {
            "transforms.mark.type": "InsertHeader",
            "transforms.mark.header": "skip",
            "transforms.mark.value.literal": "y",
        }
        asyncio.run(ensure_topic(kafka, topic, 1))
        client.create("shape-marked", source("marked", marked))
        wait_for(
            "the marked records in Kafka", lambda: len(asyncio.run(committed(kafka, topic))) >= n
        )
        client.create("shape-plain", source("plain", {}))
        # The sink drops what carries the header, and sees the topic under another name.
        sink = recording_sink(out, topic, tasks=1) | {
            "transforms": "unmarked,rename",
            "transforms.unmarked.type": "Filter",
            "transforms.unmarked.predicate": "marked",
            "transforms.rename.type": "RegexRouter",
            "transforms.rename.regex": "(.*)-raw",
            "transforms.rename.replacement": "$1-clean",
            "predicates": "marked",
            "predicates.marked.type": "HasHeaderKey",
            "predicates.marked.name": "skip",
        }
        client.create("shape-sink", sink)

        wait_for(f"{n} records in the sink", lambda: len(json_lines(out / "records.jsonl")) >= n)
        records = json_lines(out / "records.jsonl")
        assert {r["value"]["id"] for r in records} == set(range(n))
        assert {r["value"]["origin"] for r in records} == {"plain"}  # no marked one
        assert {r["topic"] for r in records} == {"shape-clean"}
        for name in ("shape-marked", "shape-plain", "shape-sink"):
            client.delete(name)


async def _produce(bootstrap: str, topic: str, ids: range) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        for i in ids:
            await producer.send(topic, json.dumps({"id": i}).encode(), partition=0)
        await producer.flush()
    finally:
        await producer.stop()


async def _recreate(bootstrap: str, topic: str) -> None:
    """Deletes the topic, waits until the old one is gone, and makes sure it exists again.

    The test broker creates a topic a client asks about, and the running sink keeps asking, so
    the topic may be made again before a listing ever shows it missing: either is the old one
    gone, and a topic made again starts empty."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.delete_topics([topic])

        async def old_one_gone() -> bool:
            return (
                topic not in await admin.list_topics() or await _end_offset(bootstrap, topic) == 0
            )

        await eventually(f"the old {topic} to be deleted", old_one_gone)
        await ensure_topic(bootstrap, topic, 1)
    finally:
        await admin.close()


async def _end_offset(bootstrap: str, topic: str) -> int | None:
    """Partition 0's end offset, None while the broker cannot say (the topic being deleted)."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, request_timeout_ms=5000)
    await consumer.start()
    try:
        partition = TopicPartition(topic, 0)
        return (await asyncio.wait_for(consumer.end_offsets([partition]), 5))[partition]
    except (KafkaError, TimeoutError):
        return None
    finally:
        await consumer.stop()


def test_a_topic_deleted_and_created_again_loses_none_of_its_new_rows(
    stack: Stack, tmp_path: Path
) -> None:
    """Its offsets start at 0 again: rows the sink wrote from the old topic must not make the
    new topic's first rows look written."""
    out, topic = tmp_path / "recreated", "e2e-recreated"
    bootstrap = stack.settings.bootstrap_servers
    asyncio.run(ensure_topic(bootstrap, topic, 1))
    asyncio.run(_produce(bootstrap, topic, range(0, 30)))
    with ConfigClient(stack.settings.config_addr, stack.settings) as client:
        client.create(
            "recreated",
            {
                "connector.class": "headrace_parquet.ParquetSinkConnector",
                "tasks.max": "1",
                "topics": topic,
                "path": str(out),
                "value.converter.schemas.enable": "false",
                "flush.max.records": "10",
            },
        )
        wait_for("the old topic's 30 rows", lambda: rows_in(out) >= 30, timeout=120)
        asyncio.run(_recreate(bootstrap, topic))
        asyncio.run(_produce(bootstrap, topic, range(100, 120)))
        wait_for("the new topic's 20 rows", lambda: rows_in(out) >= 50, timeout=120)
        table = ds.dataset(out, format="parquet", ignore_prefixes=[".", "_"]).to_table()
        assert sorted(table.column("id").to_pylist()) == [*range(0, 30), *range(100, 120)]
        client.delete("recreated")
