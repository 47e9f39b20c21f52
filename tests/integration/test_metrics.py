"""Every service exposes Prometheus metrics, scraped over HTTP as Prometheus would, and read as a
user reads them: the config service, a coordinator and a worker as real processes on the suite's
broker, with a pipeline (datagen into a topic, the recording sink out of it) in the worker's
plugin processes, whose counters reach the worker's ``/metrics``. The worker's gRPC health is
probed as Kubernetes would. The last tests run plugin-like processes against a multiprocess
folder, to check what the worker serves of a process that is gone."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
    ProtoReflectionDescriptorDatabase,
)

from headrace.clients.config import ConfigClient
from headrace.core.observability.health import SERVER
from headrace.core.observability.metrics import MULTIPROCESS_ENV
from headrace.core.settings import BUILTIN_PLUGINS
from headrace.core.storage.topics import ensure_topic
from headrace.local.kafka import free_port
from headrace.local.stack import COORDINATOR, Stack
from headrace.worker.metrics import PluginFiles
from tests.support import Samples, local_settings, scrape, value, wait_for

TEST_PLUGINS = Path(__file__).parents[1] / "plugins"
RECORDS = 500
BATCH = 100


@pytest.fixture(scope="module")
def stack(kafka: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    folder = tmp_path_factory.mktemp("metrics")
    settings = local_settings(
        kafka, f"metrics{free_port()}", folder, (BUILTIN_PLUGINS, TEST_PLUGINS)
    )
    stack = Stack(settings)
    try:
        stack.start("config")
        stack.start("coordinator", ready=COORDINATOR)
        stack.start("worker-1")  # ready: joined, and serving health
        yield stack
    finally:
        stack.down()


def logged_events(path: Path) -> list[str]:
    """The events of a service's JSON log lines, in order (other lines skipped)."""
    events = []
    for line in path.read_text(errors="replace").splitlines():
        try:
            events.append(str(json.loads(line)["event"]))
        except (json.JSONDecodeError, KeyError, TypeError):
            continue
    return events


def metrics_of(stack: Stack, name: str) -> Samples:
    address = stack.metrics_address(name)
    assert address is not None, f"{name} logged no metrics_serving"
    return scrape(address)


@pytest.mark.kafka
def test_the_worker_serves_health_once_it_has_joined(stack: Stack) -> None:
    address = stack.health_address("worker-1")
    assert address is not None
    with grpc.insecure_channel(address) as channel:
        answer = health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(service=SERVER), timeout=5
        )
        listed = set(ProtoReflectionDescriptorDatabase(channel).get_services())
    assert answer.status == health_pb2.HealthCheckResponse.SERVING
    assert "grpc.health.v1.Health" in listed
    # It began to serve only once it was ready: joined, its first assignment applied.
    events = logged_events(stack.log_file("worker-1"))
    assert events.index("coordinator_joined") < events.index("worker_ready")
    assert events.index("worker_ready") < events.index("worker_serving")


@pytest.mark.kafka
def test_each_service_says_how_long_it_took_to_start_and_replay(stack: Stack) -> None:
    config = metrics_of(stack, "config")
    assert (value(config, "headrace_startup_seconds", service="config") or 0) > 0
    assert value(config, "headrace_replay_seconds", log="configs") is not None
    assert value(config, "headrace_replay_seconds", log="status") is not None

    coordinator = metrics_of(stack, "coordinator")
    assert (value(coordinator, "headrace_startup_seconds", service="coordinator") or 0) > 0
    assert value(coordinator, "headrace_replay_seconds", log="assignments") is not None
    assert value(coordinator, "headrace_replay_seconds", log="configs") is not None

    worker = metrics_of(stack, "worker-1")
    assert (value(worker, "headrace_startup_seconds", service="worker") or 0) > 0
    assert value(worker, "headrace_replay_seconds", log="configs") is not None
    assert value(worker, "process_cpu_seconds_total") is not None  # the library's own, too


@pytest.mark.kafka
def test_the_group_shows_its_generation_leader_and_members(stack: Stack) -> None:
    coordinator = metrics_of(stack, "coordinator")
    assert value(coordinator, "headrace_coordinator_leader") == 1
    assert value(coordinator, "headrace_coordinator_members") == 1
    assert (value(coordinator, "headrace_coordinator_generation") or 0) >= 1
    assert (value(coordinator, "headrace_coordinator_rebalances_total") or 0) >= 1

    worker = metrics_of(stack, "worker-1")
    assert (value(worker, "headrace_worker_generation") or 0) >= 1
    assert (value(worker, "headrace_worker_rebalances_total") or 0) >= 1


@pytest.mark.kafka
def test_a_pipeline_counts_its_records_batches_and_lag(stack: Stack, tmp_path: Path) -> None:
    settings = stack.settings
    topic = f"{settings.cluster}-numbers"
    asyncio.run(ensure_topic(settings.bootstrap_servers, topic, 1))
    source = {"connector": "numbers", "task": "0"}
    sink = {"connector": "ledger", "task": "0"}
    with ConfigClient(settings.config_addr, settings) as client:
        client.create(
            "ledger",
            {
                "connector.class": "recording_sink.RecordingSinkConnector",
                "tasks.max": "1",
                "topics": topic,
                "path": str(tmp_path / "ledger"),
            },
        )
        client.create(
            "numbers",
            {
                "connector.class": "DatagenSource",
                "tasks.max": "1",
                "topic": topic,
                "records": str(RECORDS),
                "batch.size": str(BATCH),
            },
        )
        try:
            worker = wait_for(
                "every record put into the sink, as the worker's metrics count them",
                lambda: (
                    found
                    if value(
                        found := metrics_of(stack, "worker-1"),
                        "headrace_sink_records_put_total",
                        **sink,
                    )
                    == RECORDS
                    else None
                ),
            )
            assert value(worker, "headrace_source_records_polled_total", **source) == RECORDS
            assert value(worker, "headrace_source_records_produced_total", **source) == RECORDS
            assert value(worker, "headrace_source_batch_records_count", **source) == RECORDS / BATCH
            assert value(worker, "headrace_source_batch_records_sum", **source) == RECORDS
            assert (value(worker, "headrace_source_batch_seconds_count", **source) or 0) > 0
            assert value(worker, "headrace_sink_records_consumed_total", **sink) == RECORDS
            assert (value(worker, "headrace_sink_batch_seconds_count", **sink) or 0) >= 1
            assert value(worker, "headrace_task_records_skipped_total", **sink) == 0
            for name in ("numbers", "ledger"):
                for kind in ("connector", "task"):
                    labels = {"connector": name, "kind": kind, "state": "RUNNING"}
                    assert value(worker, "headrace_worker_units", **labels) == 1
            assert (value(worker, "headrace_worker_plugin_processes") or 0) >= 2
            wait_for(
                "the sink caught up: no lag",
                lambda: (
                    value(metrics_of(stack, "worker-1"), "headrace_sink_consumer_lag", **sink) == 0
                ),
            )
        finally:
            client.delete("numbers")
            client.delete("ledger")
    after = wait_for(
        "the deleted connectors' units gone from the worker",
        lambda: found if not units(found := metrics_of(stack, "worker-1")) else None,
    )
    # The counters of what ran stay: totals never go back while the worker runs.
    assert value(after, "headrace_source_records_produced_total", **source) == RECORDS
    assert (value(after, "headrace_sink_consumer_lag", **sink) or 0) == 0


def units(samples: Samples) -> dict[frozenset[tuple[str, str]], float]:
    """The worker's unit counts, by their labels."""
    return {labels: v for (name, labels), v in samples.items() if name == "headrace_worker_units"}


# Plugin-like processes writing to a multiprocess folder, as a worker's plugin processes do.

TASK_PROCESS = """
import sys
from headrace.core.observability import metrics
task = metrics.SinkTaskMetrics("gone", 0)
task.batch(consumed=10, put=10, skipped=0, seconds=0.1)
task.lag.set(7)
print("written", flush=True)
sys.stdin.read()  # until the test closes it, or kills the process
"""


def task_process(folder: Path) -> subprocess.Popen[str]:
    """A process that counts a batch of a sink task and sets its lag, then waits."""
    process = subprocess.Popen(
        [sys.executable, "-c", TASK_PROCESS],
        env={**os.environ, MULTIPROCESS_ENV: str(folder)},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    assert process.stdout.readline() == "written\n"
    return process


def merged(folder: Path) -> Samples:
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in PluginFiles(folder).collect()
        for s in family.samples
    }


def test_a_dead_plugin_process_keeps_its_counters_and_loses_its_gauges(tmp_path: Path) -> None:
    labels = {"connector": "gone", "task": "0"}
    first, second = task_process(tmp_path), task_process(tmp_path)
    try:
        live = merged(tmp_path)
        assert value(live, "headrace_sink_records_put_total", **labels) == 20
        assert value(live, "headrace_sink_consumer_lag", **labels) == 14  # summed over both
        first.kill()  # no chance to drop its gauges itself
        first.wait()
        after = merged(tmp_path)
    finally:
        for process in (first, second):
            if process.poll() is None:
                process.kill()
            process.wait()
            assert process.stdin is not None and process.stdout is not None
            process.stdin.close()
            process.stdout.close()
    assert value(after, "headrace_sink_records_put_total", **labels) == 20
    assert value(after, "headrace_sink_consumer_lag", **labels) == 7
