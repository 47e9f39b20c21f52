"""A worker in this process, with the config service and the coordinator as real processes on
the suite's broker, runs many units of one plugin at once in one real plugin process.

Connectors are created before the worker starts, as a restarted worker finds them: it starts all
of them in one assignment, then all of their tasks in the next. What a plugin was asked to do is
read from what the recording test plugin wrote, which is in the order the calls reached it.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from headrace.cli.client import ConfigClient
from headrace.cli.stack import Stack
from headrace.core.plugins import discover
from headrace.core.settings import Settings
from headrace.core.status import StatusStore
from headrace.core.structs import CONNECTOR_TASK, State, WorkUnit
from headrace.core.topiclog import kafka_logs
from headrace.worker.worker import Worker
from tests.support import eventually, lifecycle, log_events

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
    with ConfigClient(services.config_addr) as client:
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
    worker = Worker(services, "w1", discover(services.plugin_path), run_dir, log_dir)
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
