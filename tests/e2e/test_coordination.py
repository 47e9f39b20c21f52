"""End to end: the coordinator's promises, with real processes killed, frozen and restarted.

- a failover to the standby, or a restart of every coordinator replica, under load, stops no
  task and loses no record;
- a worker back within its grace period gets its own work back, and nothing else moves;
- a lost worker's units move only once its session and grace period are over;
- a frozen worker's plugins stop by themselves, so no unit runs on two workers at once;
- a deletion reaches each unit's plugin exactly once: when its worker comes back, or on
  another worker when it never does, and across a coordinator crash with a re-create.

What the plugins saw is read from what the recording sink wrote (its lifecycle calls, in the
order they happened, and the records it got); where units run, from the status API.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from headrace.cli.shapes import status_json
from headrace.clients.config import ConfigClient
from headrace.core.storage.topics import ensure_topic
from headrace.local.stack import Stack
from tests.support import committed, crash, json_lines, lifecycle, log_events, stops, wait_for

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

TASKS = 2


def sink(folder: Path, topic: str) -> dict[str, str]:
    return {
        "connector.class": "recording_sink.RecordingSinkConnector",
        "tasks.max": str(TASKS),
        "topics": topic,
        "path": str(folder),
    }


def placement(client: ConfigClient, name: str) -> dict[str, str] | None:
    """Where each unit of the connector runs, once all of them are RUNNING."""
    status = status_json(client.status(name))
    units = [("connector", status["connector"])] + [(f"task-{t['id']}", t) for t in status["tasks"]]
    if len(status["tasks"]) != TASKS or any(u["state"] != "RUNNING" for _, u in units):
        return None
    return {unit: u["worker_id"] for unit, u in units}


def coordinator_history(stack: Stack, *args: str) -> list[dict[str, Any]]:
    """``headrace coordinator history ARGS``, run as a user runs it, against this stack."""
    env = {**os.environ, "HEADRACE_COORDINATOR_ADDR": stack.settings.coordinator_addr}
    done = subprocess.run(
        [sys.executable, "-m", "headrace.cli.main", "coordinator", "history", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    history: list[dict[str, Any]] = json.loads(done.stdout)
    return history


def running_on(client: ConfigClient, name: str, workers: set[str]) -> dict[str, str] | None:
    found = placement(client, name)
    return found if found and set(found.values()) <= workers else None


def never_twice_at_once(folder: Path) -> None:
    """Each unit's lifecycle calls alternate start, stop: it never started where it already
    ran. (Clean-ups of deleted units are a start and a stop too.) Only for histories where no
    plugin process is killed: a killed one writes no stop."""
    seen: dict[tuple[str, Any], str] = {}
    for entry in lifecycle(folder):
        unit = (entry["unit"], entry.get("task"))
        assert seen.get(unit) != entry["event"], f"{unit}: {entry['event']} twice in a row"
        seen[unit] = entry["event"]


def deleted_stops(folder: Path) -> Counter[tuple[str, Any]]:
    return Counter(
        (e["unit"], e.get("task"))
        for e in lifecycle(folder)
        if e["event"] == "stop" and e["deleted"]
    )


def active_coordinator(stack: Stack) -> str:
    """The service name of the coordinator replica that took the lease last."""
    ready = max(log_events(stack.log_dir, "coordinator_ready"), key=lambda e: e["timestamp"])
    return next(
        s.name
        for s in stack.specs()
        if s.module == "headrace.coordinator" and ready["address"] in s.args
    )


@contextmanager
def connector(client: ConfigClient, name: str, config: dict[str, str]) -> Iterator[None]:
    client.create(name, config)
    try:
        yield
    finally:
        client.delete(name)


def restart_every_replica(stack: Stack) -> None:
    """Kills every coordinator replica and starts them again, the one that led first: no
    standby takes over, the coordinator rebuilds its state from the topics."""
    replicas = sorted(
        (s.name for s in stack.specs() if s.module == "headrace.coordinator"),
        key=lambda name: name != active_coordinator(stack),
    )
    for name in replicas:
        crash(stack, name)
    for name in replicas:
        stack.start(name)


def fail_over(stack: Stack) -> None:
    """Kills the leading replica: the standby takes over. The killed one comes back as the
    standby."""
    active = active_coordinator(stack)
    ready = len(log_events(stack.log_dir, "coordinator_ready"))
    crash(stack, active)
    wait_for(
        "the standby leading",
        lambda: len(log_events(stack.log_dir, "coordinator_ready")) > ready,
    )
    stack.start(active)


@pytest.mark.parametrize("outage", [fail_over, restart_every_replica], ids=lambda f: f.__name__)
def test_a_coordinator_outage_under_load_stops_no_task_and_loses_no_record(
    stack: Stack, tmp_path: Path, outage: Callable[[Stack], None]
) -> None:
    out, topic = tmp_path / "steady", f"{tmp_path.name}-in"
    steady, flow = (f"{name}-{outage.__name__.replace('_', '-')}" for name in ("steady", "flow"))
    kafka = stack.settings.bootstrap_servers
    asyncio.run(ensure_topic(kafka, topic, 1))
    source = {
        "connector.class": "DatagenSource",
        "tasks.max": "2",
        "topic": topic,
        "batch.size": "20",
        "interval.ms": "50",
    }
    with ConfigClient(stack.settings.config_addr, stack.settings) as client:
        with connector(client, steady, sink(out, topic)):
            with connector(client, flow, source):
                before = wait_for("steady running", lambda: placement(client, steady))
                wait_for("records flowing", lambda: len(json_lines(out / "records.jsonl")) > 100)
                applied = len(log_events(stack.log_dir, "assignment_applied"))
                fenced = len(log_events(stack.log_dir, "worker_fenced"))
                outage(stack)
                wait_for(
                    "both workers acting on the coordinator that leads now",
                    lambda: len(log_events(stack.log_dir, "assignment_applied")) >= applied + 2,
                )
                flowed = len(json_lines(out / "records.jsonl"))
                wait_for(
                    "records still flowing",
                    lambda: len(json_lines(out / "records.jsonl")) > flowed + 100,
                )
                assert placement(client, steady) == before
                assert stops(out) == []
                assert len(log_events(stack.log_dir, "worker_fenced")) == fenced
            # The source is gone: all it wrote reaches the sink (once or more), with no gap.
            wait_for(
                "the source's tasks stopped",
                lambda: len(log_events(stack.log_dir, "task_stopped", connector=flow)) >= 2,
            )
            written = {(r.partition, r.offset) for r in asyncio.run(committed(kafka, topic))}
            wait_for("every record delivered", lambda: delivered(out) >= written)
        wait_for("steady stopped as deleted", lambda: len(stops(out)) >= 3)
        assert stops(out) == [("connector", None, True), ("task", 0, True), ("task", 1, True)]


def delivered(out: Path) -> set[tuple[int, int]]:
    """Where each record the sink got came from: (partition, offset)."""
    return {(r["partition"], r["offset"]) for r in json_lines(out / "records.jsonl")}


def test_a_worker_back_within_its_grace_period_gets_its_own_work_back(
    stack: Stack, tmp_path: Path
) -> None:
    out = tmp_path / "homing"
    with (
        ConfigClient(stack.settings.config_addr, stack.settings) as client,
        connector(client, "homing", sink(out, "homing-in")),
    ):
        before = wait_for("homing running", lambda: placement(client, "homing"))
        assert set(before.values()) == {"worker-1", "worker-2"}
        crash(stack, "worker-2")
        stack.start("worker-2")  # back at once: well within session and grace
        wait_for("homing running as before", lambda: placement(client, "homing") == before)
        # What ran on worker-1 never stopped; worker-2's died with it, without a stop.
        assert stops(out) == []


def test_a_lost_worker_s_units_move_only_after_its_session_and_grace(
    stack: Stack, tmp_path: Path
) -> None:
    out = tmp_path / "moving"
    with ConfigClient(stack.settings.config_addr, stack.settings) as client:
        with connector(client, "moving", sink(out, "moving-in")):
            before = wait_for("moving running", lambda: placement(client, "moving"))
            lost = {u for u, w in before.items() if w == "worker-2"}
            crash(stack, "worker-2")
            after = wait_for(
                "moving running on worker-1 alone",
                lambda: running_on(client, "moving", {"worker-1"}),
                timeout=60,
            )
            assert set(after) == set(before)
            expired = log_events(stack.log_dir, "worker_expired", worker="worker-2")
            assert expired, "worker-2's units moved before its grace period was over"
            moved = [
                e
                for e in log_events(stack.log_dir, "unit_started", worker="worker-1")
                if e["connector"] == "moving"
            ]
            assert moved and lost
            assert min(e["timestamp"] for e in moved[-len(lost) :]) > expired[-1]["timestamp"]
            assert stops(out) == []  # worker-1 stopped nothing of its own
            # The history the leading coordinator answers says where they went, as a user
            # reads it (whichever replica leads: the command asks each in turn).
            moves = {
                (m["unit"], m["from"], m["to"])
                for g in coordinator_history(stack, "--last", "50")
                for m in g["moved"]
            }
            wanted = {
                (u.replace("task-", "moving-") if u != "connector" else "moving") for u in lost
            }
            assert {(u, "worker-2", "worker-1") for u in wanted} <= moves
        stack.start("worker-2")


def test_a_frozen_worker_s_plugins_stop_before_its_units_run_elsewhere(
    stack: Stack, tmp_path: Path
) -> None:
    out = tmp_path / "frozen"
    with (
        ConfigClient(stack.settings.config_addr, stack.settings) as client,
        connector(client, "frozen", sink(out, "frozen-in")),
    ):
        before = wait_for("frozen running", lambda: placement(client, "frozen"))
        assert "worker-2" in before.values()
        stack.send_signal("worker-2", signal.SIGSTOP)  # its plugin processes run on
        try:
            wait_for(
                "frozen running on worker-1 alone",
                lambda: running_on(client, "frozen", {"worker-1"}),
                timeout=60,
            )
        finally:
            stack.send_signal("worker-2", signal.SIGCONT)
        assert log_events(stack.log_dir, "plugin_host_fenced", worker="worker-2")
        wait_for(
            "frozen spread over both workers again",
            lambda: (
                (p := placement(client, "frozen"))
                and set(p.values())
                == {
                    "worker-1",
                    "worker-2",
                }
            ),
            timeout=60,
        )
        never_twice_at_once(out)
        assert all(not deleted for _, _, deleted in stops(out))


def delete_while_worker_2_is_down(stack: Stack, client: ConfigClient, name: str, out: Path) -> None:
    """Runs a connector over both workers, crashes worker-2, and deletes the connector."""
    client.create(name, sink(out, f"{name}-in"))
    before = wait_for(f"{name} running", lambda: placement(client, name))
    assert set(before.values()) == {"worker-1", "worker-2"}
    crash(stack, "worker-2")
    client.delete(name)


ONCE_EACH = {("connector", None): 1, ("task", 0): 1, ("task", 1): 1}


def test_a_deletion_reaches_a_worker_that_was_down_once_it_is_back(
    stack: Stack, tmp_path: Path
) -> None:
    out = tmp_path / "doomed"
    with ConfigClient(stack.settings.config_addr, stack.settings) as client:
        delete_while_worker_2_is_down(stack, client, "doomed", out)
        stack.start("worker-2")  # within its grace period: the deletion waited for it
        wait_for("every unit stopped as deleted", lambda: sum(deleted_stops(out).values()) >= 3)
        assert deleted_stops(out) == ONCE_EACH
        wait_for(
            "worker-2 cleaned its part up",
            lambda: log_events(stack.log_dir, "deletion_cleaned_up", worker="worker-2"),
        )


def test_a_deletion_whose_worker_never_returns_is_cleaned_up_elsewhere_once(
    stack: Stack, tmp_path: Path
) -> None:
    out = tmp_path / "orphan"
    with ConfigClient(stack.settings.config_addr, stack.settings) as client:
        delete_while_worker_2_is_down(stack, client, "orphan", out)
        wait_for(
            "every unit stopped as deleted",
            lambda: sum(deleted_stops(out).values()) >= 3,
            timeout=60,
        )
        wait_for(
            "worker-1 cleaned worker-2's part up",
            lambda: log_events(stack.log_dir, "deletion_cleaned_up", worker="worker-1"),
        )
        applied = len(log_events(stack.log_dir, "assignment_applied", worker="worker-2"))
        stack.start("worker-2")
        wait_for(
            "worker-2 back in the group",
            lambda: (
                len(log_events(stack.log_dir, "assignment_applied", worker="worker-2")) > applied
            ),
        )
        assert deleted_stops(out) == ONCE_EACH  # and none again when it came back


def test_a_connector_deleted_and_created_again_while_no_coordinator_runs(
    stack: Stack, tmp_path: Path
) -> None:
    out = tmp_path / "phoenix"
    with ConfigClient(stack.settings.config_addr, stack.settings) as client:
        client.create("phoenix", sink(out, "phoenix-in"))
        wait_for("phoenix running", lambda: placement(client, "phoenix"))
        coordinators = [s.name for s in stack.specs() if s.module == "headrace.coordinator"]
        for name in coordinators:
            crash(stack, name)
        client.delete("phoenix")
        client.create("phoenix", sink(out, "phoenix-in"))
        for name in coordinators:
            stack.start(name)
        wait_for("the old incarnation stopped as deleted", lambda: len(deleted_stops(out)) >= 3)
        wait_for("the new one running", lambda: placement(client, "phoenix"))
        assert deleted_stops(out) == ONCE_EACH
        never_twice_at_once(out)
        client.delete("phoenix")


def committed_ids(kafka: str, topic: str) -> list[int]:
    """The ids of the datagen records a consumer reading committed data sees, in no order."""
    return [json.loads(r.value or b"")["id"] for r in asyncio.run(committed(kafka, topic))]


def test_a_source_whose_worker_is_killed_mid_stream_writes_each_record_exactly_once(
    stack: Stack, tmp_path: Path
) -> None:
    topic, n = f"{tmp_path.name}-once", 4000
    kafka = stack.settings.bootstrap_servers
    asyncio.run(ensure_topic(kafka, topic, 2))
    source = {
        "connector.class": "DatagenSource",
        "tasks.max": "2",
        "topic": topic,
        "records": str(n),
        "batch.size": "10",
        "interval.ms": "50",  # about 400 records a second: the crash comes mid-stream
        "exactly.once.support": "required",
    }
    with (
        ConfigClient(stack.settings.config_addr, stack.settings) as client,
        connector(client, "once", source),
    ):
        running = wait_for("once running", lambda: placement(client, "once"))
        wait_for("records flowing", lambda: len(committed_ids(kafka, topic)) > n // 10)
        victim = running["task-0"]
        crash(stack, victim)  # the worker and its plugin processes, mid-transaction or not
        assert len(committed_ids(kafka, topic)) < n, "the source finished before the crash"
        stack.start(victim)

        def all_in() -> list[int] | None:
            found = committed_ids(kafka, topic)
            return found if len(found) >= n else None

        ids = wait_for(f"all {n} records committed", all_in)
    assert len(ids) == n and set(ids) == set(range(n))  # none lost, none twice


def written_to(kafka: str, topic: str) -> set[tuple[int, int]]:
    """Where each committed record of ``topic`` is: (partition, offset)."""
    return {(r.partition, r.offset) for r in asyncio.run(committed(kafka, topic))}


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_a_sink_whose_worker_stops_mid_stream_loses_nothing(
    stack: Stack, tmp_path: Path, request: pytest.FixtureRequest, sig: signal.Signals
) -> None:
    """Every record reaches the sink after the worker running its tasks stops mid-stream.
    Killed, it delivers at least once: those delivered twice (read again from the last
    committed offset) are counted and reported in the test's properties. Stopped with SIGTERM,
    it commits what its tasks were given before it goes, and none is delivered twice."""
    out, topic = tmp_path / "stopped", f"{tmp_path.name}-in"
    # Names of their own: a source's offsets outlive the connector, so a datagen of the same
    # name would find its records all written.
    sink_name, source_name = f"{sig.name.lower()}-sink", f"{sig.name.lower()}-flow"
    kafka = stack.settings.bootstrap_servers
    asyncio.run(ensure_topic(kafka, topic, 2))
    source = {
        "connector.class": "DatagenSource",
        "topic": topic,
        "records": "3000",
        "batch.size": "50",
        "interval.ms": "20",
    }
    with (
        ConfigClient(stack.settings.config_addr, stack.settings) as client,
        connector(client, sink_name, sink(out, topic)),
    ):
        sinks_on = wait_for("the sink running", lambda: placement(client, sink_name))
        with connector(client, source_name, source):
            wait_for("records flowing", lambda: len(json_lines(out / "records.jsonl")) > 300)
            victim = sinks_on["task-0"]
            stack.stop(victim, sig=sig)
            try:
                written = wait_for(
                    "the source's 3,000 records written",
                    lambda: w if len(w := written_to(kafka, topic)) >= 3000 else None,
                    timeout=120,
                )
                wait_for("every record delivered", lambda: delivered(out) >= written, timeout=120)
            finally:
                stack.start(victim)
    lines = json_lines(out / "records.jsonl")
    seen = Counter((r["partition"], r["offset"]) for r in lines)
    assert set(seen) == written  # nothing lost, nothing invented
    twice = len(lines) - len(seen)
    if sig is signal.SIGTERM:
        assert twice == 0, f"{twice} records delivered twice after a graceful stop"
    request.node.user_properties.append(
        (
            "reported",
            f"a sink's worker stopped with {sig.name} mid-stream: {len(written)} records "
            f"delivered, none lost, {twice} of them twice",
        )
    )
