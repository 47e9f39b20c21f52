"""The whole system as real OS processes on the suite's broker: executor, config service,
coordinator and two workers, started once per module through the same launcher `make run` uses."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from headrace.cli.kafka import free_port
from headrace.cli.stack import Stack
from headrace.core.settings import BUILTIN_PLUGINS, Settings

TEST_PLUGINS = Path(__file__).parents[1] / "plugins"


@pytest.fixture(scope="module")
def stack(kafka: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    settings = Settings(
        bootstrap_servers=kafka,
        cluster=f"e2e{uuid.uuid4().hex[:8]}",
        config_addr=f"127.0.0.1:{free_port()}",
        coordinator_addr=f"127.0.0.1:{free_port()}",
        executor_addr=f"127.0.0.1:{free_port()}",
        plugin_path=(BUILTIN_PLUGINS, TEST_PLUGINS),
        var_dir=tmp_path_factory.mktemp("stack"),
        spark_master="local[1]",
    )
    stack = Stack(
        settings,
        extra_args={"coordinator": ("--session-timeout", "6", "--grace-period", "3")},
    )
    try:
        stack.up()
        yield stack
    finally:
        stack.down()
