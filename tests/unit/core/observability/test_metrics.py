"""The pure parts of the metrics: what a worker's units count as, which files are whose, how a
task's batch moves its series, and how the flags read their defaults."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from prometheus_client import REGISTRY

from headrace.core.model.structs import State, WorkUnit
from headrace.core.observability import metrics
from headrace.worker import metrics as worker_metrics
from headrace.worker.__main__ import bindable


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_units_are_counted_by_connector_kind_and_state() -> None:
    states = {
        WorkUnit.of("a"): State.RUNNING,
        WorkUnit("a", 0): State.RUNNING,
        WorkUnit("a", 1): State.FAILED,
        WorkUnit("a", 2): State.RUNNING,
        WorkUnit.of("b"): State.PAUSED,
    }
    assert worker_metrics.unit_counts(states) == {
        ("a", "connector", "RUNNING"): 1,
        ("a", "task", "RUNNING"): 2,
        ("a", "task", "FAILED"): 1,
        ("b", "connector", "PAUSED"): 1,
    }


def test_the_worker_collector_reads_the_state_it_is_given_at_each_scrape() -> None:
    states: dict[WorkUnit, State] = {WorkUnit("a", 0): State.RUNNING}
    collector = worker_metrics.WorkerCollector(lambda: states, lambda: 3)
    first = {f.name: f.samples for f in collector.collect()}
    states = {}
    second = {f.name: f.samples for f in collector.collect()}

    [running] = first["headrace_worker_units"]
    assert running.labels == {"connector": "a", "kind": "task", "state": "RUNNING"}
    assert running.value == 1
    assert second["headrace_worker_units"] == []  # a unit that left is no longer counted
    assert [s.value for s in first["headrace_worker_plugin_processes"]] == [3]


@pytest.mark.parametrize(
    ("name", "pid"),
    [
        ("counter_123.db", 123),
        ("gauge_livesum_4567.db", 4567),
        ("histogram_9.db", 9),
        ("counter_123.db.tmp", None),
        ("notes.txt", None),
        ("gauge_livesum_x.db", None),
    ],
)
def test_a_multiprocess_file_is_named_for_its_process(name: str, pid: int | None) -> None:
    assert worker_metrics.pid_of(Path(name)) == pid


def test_a_source_batch_moves_its_task_series_once() -> None:
    task = metrics.SourceTaskMetrics("unit-source", 3)
    labels = {"connector": "unit-source", "task": "3"}
    task.batch(polled=100, produced=98, skipped=2, seconds=0.02)
    task.batch(polled=50, produced=50, skipped=0, seconds=0.01)

    assert sample("headrace_source_records_polled_total", **labels) == 150
    assert sample("headrace_source_records_produced_total", **labels) == 148
    assert sample("headrace_task_records_skipped_total", **labels) == 2
    assert sample("headrace_source_batch_records_count", **labels) == 2
    assert sample("headrace_source_batch_records_sum", **labels) == 150
    assert sample("headrace_source_batch_records_bucket", le="100.0", **labels) == 2
    assert sample("headrace_source_batch_seconds_sum", **labels) == pytest.approx(0.03)


def test_a_sink_batch_moves_its_task_series_once() -> None:
    task = metrics.SinkTaskMetrics("unit-sink", 0)
    labels = {"connector": "unit-sink", "task": "0"}
    task.batch(consumed=10, put=9, skipped=1, seconds=0.5)
    task.lag.set(42)

    assert sample("headrace_sink_records_consumed_total", **labels) == 10
    assert sample("headrace_sink_records_put_total", **labels) == 9
    assert sample("headrace_task_records_skipped_total", **labels) == 1
    assert sample("headrace_sink_batch_records_sum", **labels) == 10
    assert sample("headrace_sink_consumer_lag", **labels) == 42


def test_startup_is_set_only_when_the_service_is_first_ready() -> None:
    startup = metrics.Startup("unit-service")
    startup.ready()
    first = sample("headrace_startup_seconds", service="unit-service")
    startup.ready()
    assert first >= 0
    assert sample("headrace_startup_seconds", service="unit-service") == first


def test_the_metrics_flag_defaults_to_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    def parsed(*argv: str) -> str:
        parser = argparse.ArgumentParser()
        metrics.add_flag(parser)
        address: str = parser.parse_args(argv).metrics_addr
        return address

    assert parsed() == ""  # unset: no metrics server
    monkeypatch.setenv(metrics.ADDRESS_ENV, "0.0.0.0:9400")
    assert parsed() == "0.0.0.0:9400"
    assert parsed("--metrics-addr", "127.0.0.1:0") == "127.0.0.1:0"


def test_no_address_serves_no_metrics() -> None:
    assert metrics.serve("") is None


def test_port_zero_becomes_a_port_and_a_set_port_stays() -> None:
    host, _, port = bindable("127.0.0.1:0").rpartition(":")
    assert host == "127.0.0.1"
    assert int(port) > 0
    assert bindable("0.0.0.0:50054") == "0.0.0.0:50054"
