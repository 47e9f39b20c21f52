"""The executor starts Spark's JVM by fork and exec from a thread serving a call: gRPC's fork
handlers must be off in its process, or they can break its poller and the JVM's start."""

from __future__ import annotations

import os
import subprocess
import sys


def _fork_support(environment: dict[str, str]) -> str:
    """The value a fresh headrace process sees, as the executor's ``python -m`` start does."""
    probe = "import headrace, os; print(os.environ['GRPC_ENABLE_FORK_SUPPORT'])"
    done = subprocess.run(
        [sys.executable, "-c", probe], env=environment, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def test_a_headrace_process_runs_with_grpc_fork_support_off() -> None:
    environment = {k: v for k, v in os.environ.items() if k != "GRPC_ENABLE_FORK_SUPPORT"}
    assert _fork_support(environment) == "false"


def test_an_operators_own_setting_wins() -> None:
    assert _fork_support({**os.environ, "GRPC_ENABLE_FORK_SUPPORT": "true"}) == "true"
