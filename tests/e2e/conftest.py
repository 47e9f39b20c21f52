"""The whole system as real OS processes on the suite's broker: config service, two coordinator
replicas (one active, one standing by) and two workers, started once per session through the same
launcher `make run` uses, on the suite's one Spark executor (``spark``). A test that kills or
stops a process starts it again before it ends, so the next finds the stack whole."""

from __future__ import annotations

import json
import uuid
from collections.abc import Generator, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pluggy
import pytest

from headrace.core.settings import BUILTIN_PLUGINS
from headrace.local.stack import Stack
from tests.support import local_settings

TEST_PLUGINS = Path(__file__).parents[1] / "plugins"
NOTABLE_LEVELS = frozenset({"warning", "error", "critical"})
NOTABLE_LINES = 6
"""How many of each service's warnings and errors a failed test shows: the last ones."""


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


# Not HEADRACE_*: every test clears those from the environment (``_no_ambient_settings``), and a
# service a test restarts must still inherit this one, as a deployment's secret stays.
PLANTED_ENV = "E2E_PLANTED_SECRET_TOKEN"


@dataclass(frozen=True)
class Planted:
    """Secrets only the workers' config providers can read: a key of a properties file and a
    file of a folder (both in ``folder``), and a variable of the stack's environment."""

    folder: Path
    file_secret: str
    dir_secret: str
    env_secret: str


@pytest.fixture(scope="session")
def planted(tmp_path_factory: pytest.TempPathFactory) -> Planted:
    folder = tmp_path_factory.mktemp("provided")
    secrets = Planted(folder, *(f"planted-{kind}-{uuid.uuid4().hex}" for kind in "fde"))
    (folder / "db.properties").write_text(f"db.user=app\ndb.password={secrets.file_secret}\n")
    (folder / "api-key").write_text(secrets.dir_secret)
    return secrets


@pytest.fixture(scope="session")
def stack(
    kafka: str,
    spark: Stack,
    tmp_path_factory: pytest.TempPathFactory,
    planted: Planted,
    java_plugin_entry: Path,
) -> Iterator[Stack]:
    settings = local_settings(
        kafka,
        f"e2e{uuid.uuid4().hex[:8]}",
        tmp_path_factory.mktemp("stack"),
        (BUILTIN_PLUGINS, TEST_PLUGINS, java_plugin_entry),
        coordinators=2,
        # Long enough for any honest call here (a first Spark write on a busy machine); short
        # enough that the test of a hung plugin does not wait a minute.
        plugin_call_timeout_s=20.0,
    )
    # The folders connectors may write in: each test's own tmp_path, under this run's base, as
    # for the executor. Config providers as an operator enables them; the variable is in every
    # service's environment (a Stack starts each with this process's), as a deployment's secret
    # would be.
    settings = replace(
        settings,
        file_roots=spark.settings.file_roots,
        executor_addr=spark.settings.executor_addr,
        config_providers=("file", "env", "dir"),
        config_provider_paths=(planted.folder,),
        config_provider_env_pattern="E2E_PLANTED_SECRET_.*",
    )
    stack = Stack(
        settings,
        extra_args={"coordinator": COORDINATOR_ARGS, "coordinator-2": COORDINATOR_ARGS},
        external=frozenset({"executor"}),
    )
    with pytest.MonkeyPatch.context() as environment:
        environment.setenv(PLANTED_ENV, planted.env_secret)
        try:
            stack.up()
            yield stack
        finally:
            stack.down()


def _log_sizes(stacks: list[Stack]) -> dict[Path, int]:
    return {
        f: f.stat().st_size for s in stacks if s.log_dir.is_dir() for f in s.log_dir.glob("*.log")
    }


def _notable(line: str) -> bool:
    """Whether a service's log line is a warning, an error or not JSON (a traceback)."""
    try:
        entry = json.loads(line)
    except ValueError:
        return bool(line.strip())
    return not isinstance(entry, dict) or entry.get("level") in NOTABLE_LEVELS


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Function) -> Generator[None, pluggy.Result[None]]:
    """A failed test shows the warnings and errors its services logged while it ran (their logs
    are files a CI run does not keep): the last ``NOTABLE_LINES`` of each log, with its name."""
    stacks = [s for n in ("stack", "spark") if isinstance(s := item.funcargs.get(n), Stack)]
    before = _log_sizes(stacks)
    outcome = yield
    if outcome.excinfo is None:
        return
    lines = []
    for path, size in _log_sizes(stacks).items():
        with path.open("rb") as log:
            log.seek(before.get(path, 0) if before.get(path, 0) <= size else 0)
            text = log.read().decode(errors="replace")
        notable = [line[:300] for line in text.splitlines() if _notable(line)]
        lines += [f"{path.stem}: {line}" for line in notable[-NOTABLE_LINES:]]
    if lines:
        item.add_report_section("call", "service warnings and errors", "\n".join(lines))
