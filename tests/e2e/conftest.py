"""The whole system as real OS processes on the suite's broker: config service, two coordinator
replicas (one active, one standing by) and two workers, started once per session through the same
launcher `make run` uses, on the suite's one Spark executor (``spark``). A test that kills or
stops a process starts it again before it ends, so the next finds the stack whole."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from headrace.cli.stack import Stack
from headrace.core.settings import BUILTIN_PLUGINS
from tests.support import local_settings

TEST_PLUGINS = Path(__file__).parents[1] / "plugins"


# Short enough to keep the waits of the tests that lose a worker short; long enough that a
# coordinator's failover (lease 1.5 s) fits well inside a worker's fencing time (0.6 of it).
COORDINATOR_ARGS = (
    "--session-timeout",
    "8",
    "--grace-period",
    "3",
    "--lease-timeout",
    "1.5",
)


@pytest.fixture(scope="session")
def stack(kafka: str, spark: Stack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    settings = local_settings(
        kafka,
        f"e2e{uuid.uuid4().hex[:8]}",
        tmp_path_factory.mktemp("stack"),
        (BUILTIN_PLUGINS, TEST_PLUGINS),
        coordinators=2,
        # Long enough for any honest call here (a first Spark write on a busy machine); short
        # enough that the test of a hung plugin does not wait a minute.
        plugin_call_timeout_s=20.0,
    )
    # The folders connectors may write in: each test's own tmp_path, under this run's base,
    # as for the executor.
    settings = replace(
        settings,
        file_roots=spark.settings.file_roots,
        executor_addr=spark.settings.executor_addr,
    )
    stack = Stack(
        settings,
        extra_args={"coordinator": COORDINATOR_ARGS, "coordinator-2": COORDINATOR_ARGS},
        external=frozenset({"executor"}),
    )
    try:
        stack.up()
        yield stack
    finally:
        stack.down()
