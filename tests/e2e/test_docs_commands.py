"""The documentation's command blocks, run as a user runs them: each block as the page has it
(``tests/docblocks.py`` reads it from the page), in one shell, from a checkout root with the
default environment (no ``HEADRACE_*`` variable the page does not set) and the default ports.

The checkout root is one of the test's own: the checkout's files, linked, and a ``var/`` of its
own, where the pages' commands write, so that the run leaves nothing in the checkout. Which
blocks run where, and why the others do not yet, is in ``tests/unit/docs/test_commands.py``."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import psycopg
import pytest

from tests.docblocks import ROOT, Block, block, blocks
from tests.postgres import start_postgres
from tests.support import Deadline, consume, wait_for

pytestmark = pytest.mark.kafka

GUIDE = "docs/writing-a-connector.md"


@pytest.fixture
def checkout(tmp_path: Path) -> Iterator[Path]:
    """A checkout root of the test's own, with a var/ of its own."""
    root = tmp_path / "checkout"
    root.mkdir()
    for entry in ROOT.iterdir():
        if entry.name not in ("var", ".git"):
            (root / entry.name).symlink_to(entry)
    yield root


DEFAULT_PORTS = frozenset({9092, 8083, 50051, 50052, 50053})
"""Kafka's, the REST API's and the config service's, coordinator's and executor's gRPC."""


def _holders(ports: frozenset[int]) -> list[str]:
    """Who holds a local TCP port among ``ports`` (the process, when it can be told)."""
    held = []
    for conn in psutil.net_connections(kind="tcp"):
        if conn.laddr and conn.laddr.port in ports and conn.status != psutil.CONN_TIME_WAIT:
            try:
                who = " ".join(psutil.Process(conn.pid).cmdline()[:3]) if conn.pid else "?"
            except psutil.Error:
                who = "?"
            held.append(f"{conn.laddr.port} ({conn.status}): {who}")
    return held


GRPC_PORTS = frozenset({50051, 50052, 50053})


@contextlib.contextmanager
def default_ports() -> Iterator[None]:
    """Waits until no socket holds a default port, before a page's stack starts, naming who
    holds one if it stays held; then, until the block ends, keeps the gRPC ones from being
    handed to any other socket. A client's own end takes its port from the ephemeral range
    these sit in (32768 to 60999 here): one took the coordinator's 50052 in the seconds between
    the wait and the coordinator's bind, in a fresh clone's run beside other work (twice in
    one run). Each is held by a socket bound with SO_REUSEPORT that never listens: the kernel
    gives a bound port to no new connection, and gRPC's servers bind with SO_REUSEPORT too, so
    the page's services still bind and listen there as a user's would. Kafka's and the REST
    API's listeners do not share a port so: those are only waited for."""
    deadline = Deadline("the default ports free", 60)
    while held := _holders(DEFAULT_PORTS):
        deadline.check(held)
        time.sleep(0.2)
    with contextlib.ExitStack() as guards:
        for port in sorted(GRPC_PORTS):
            guard = guards.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            guard.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            guard.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            guard.bind(("127.0.0.1", port))
        yield


def user_env() -> dict[str, str]:
    """The environment of a user's shell: none of the suite's own settings."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("HEADRACE_", "KAFKA_"))}


def run(
    checkout: Path,
    *blocks: Block,
    timeout: float = 600,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """The blocks' lines, in order, in one bash shell at ``checkout``: it stops at the first
    command that fails, as a user would."""
    script = "set -euo pipefail\n" + "\n".join(line for b in blocks for line in b.lines)
    return subprocess.run(
        ["bash", "-c", script],
        cwd=checkout,
        env=env or user_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_the_guide_s_commands_run_its_example_plugins_as_it_says(checkout: Path) -> None:
    """``docs/writing-a-connector.md``: the plugin path and file roots exported, the local stack
    started, the example plugins found and validated, the example connectors applied, their
    output read, one deleted, the stack stopped."""
    start = block(
        GUIDE, "export HEADRACE_PLUGIN_PATH=$PWD/services/headrace/plugins:$PWD/docs/example"
    )
    check = block(GUIDE, ".venv/bin/headrace plugins list")
    create = block(GUIDE, ".venv/bin/headrace apply -f docs/example-connectors/ --wait")
    rest = block(
        "docs/reference/rest.md",
        "curl -X POST -H 'Content-Type: application/json' localhost:8083/connectors \\",
    )
    delete = block(
        GUIDE, ".venv/bin/headrace delete connector counts --wait    # gives var/files/counts up"
    )
    try:
        with default_ports():
            done = run(checkout, start, check, create, rest, delete)
        said = done.stdout + done.stderr
        assert done.returncode == 0, said[-6000:]
        # The REST reference's calls, on the same stack: created, stopped, its offsets, and a
        # validation that finds the topic's name wrong.
        assert '"name":"gen"' in done.stdout.replace(" ", ""), said[-6000:]
        assert '"offsets"' in done.stdout and '"error_count"' in done.stdout, said[-6000:]
        assert "TextLinesSource" in said and "WordCountSink" in said  # found on the plugin path
        # What ``cat var/files/counts/counts-lines-0.json`` showed: both lines, counted.
        assert '"topic": "lines"' in done.stdout and '"records": 2' in done.stdout, said[-6000:]
    finally:
        stop = subprocess.run(
            [str(checkout / ".venv/bin/python"), "-m", "headrace.local", "stack", "down"],
            cwd=checkout,
            env=user_env(),
            capture_output=True,
            text=True,
            check=False,
        )
    assert stop.returncode == 0, stop.stderr


def test_the_guide_s_type_check_passes_as_it_says(checkout: Path) -> None:
    done = run(checkout, block(GUIDE, ".venv/bin/mypy --strict docs/example/text-lines/1.0.0/*.py"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Success: no issues found" in done.stdout


@pytest.mark.parametrize(
    ("page", "first"),
    [
        (
            "README.md",
            "make kafka-up         # the embedded broker on 127.0.0.1:9092; or name yours in the "
            "worker file",
        ),
        ("docs/standalone.md", "make kafka-up"),
    ],
)
def test_the_standalone_quickstart_moves_every_line_as_the_page_says(
    checkout: Path, page: str, first: str
) -> None:
    """The embedded broker started, a file of 1,000 lines made, and ``headrace standalone`` run
    on Kafka's quickstart files, as the page says: every line reaches ``test.sink.txt``, in
    order; Ctrl-C stops it; ``make kafka-down`` stops the broker."""
    quickstart = block(page, first)
    folder = checkout / "var" / "quickstart"
    script = "set -euo pipefail\n" + "\n".join(quickstart.lines)
    output = checkout.parent / "quickstart.out"
    ports = contextlib.ExitStack()
    with output.open("w") as out:
        ports.enter_context(default_ports())
        shell = subprocess.Popen(
            ["bash", "-c", script],
            cwd=checkout,
            env=user_env(),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        sink = folder / "test.sink.txt"
        wait_for(
            "every line in test.sink.txt",
            lambda: sink.is_file() and len(sink.read_text().splitlines()) >= 1000,
            timeout=300,
        )
        assert sink.read_text().splitlines() == (folder / "test.txt").read_text().splitlines()
        os.killpg(shell.pid, signal.SIGINT)  # Ctrl-C, at the terminal's whole foreground group
        assert shell.wait(timeout=120) in (0, 130, -signal.SIGINT), output.read_text()[-4000:]
    finally:
        ports.close()
        if shell.poll() is None:
            os.killpg(shell.pid, signal.SIGKILL)
            shell.wait()
        down = subprocess.run(
            ["make", "kafka-down"], cwd=checkout, env=user_env(), capture_output=True, text=True
        )
    assert down.returncode == 0, down.stdout + down.stderr


MIGRATION = "docs/migration.md"


README_MIGRATE = (
    "make connect-up           # a Kafka Connect to try it on, on 127.0.0.1:8093; or set CONNECT "
    "to yours"
)


def migrations_as_the_page_says(checkout: Path, env: dict[str, str]) -> None:
    """``docs/migration.md`` on a running ``make run`` stack: ``make connect-up``, a FileStream
    pair copying 1,000 lines created in Kafka Connect; the plan names what blocks each (the
    converters Connect's worker gives, the plugin headrace lacks, with the command that installs
    it), and nothing more with the worker's file; the cutover installs connect-file and moves
    both; 1,000 lines more are appended; both go back to Connect; every line reaches the copy
    once, in order; a plan over REST; the README's block moves both to headrace again (the
    plugin is there: nothing to install); ``make connect-down``."""
    walk = block(
        MIGRATION,
        "make run                                      # in another shell: headrace, on the "
        "embedded broker",
    )
    assert walk.commands[0] == "make run"  # the stack this test's caller started
    steps = [
        Block(MIGRATION, walk.line, "", walk.lines[1:]),
        block(MIGRATION, "headrace migrate --from $CONNECT --plan                      # every "
              "connector"),
        block(MIGRATION, "headrace migrate --from $CONNECT --plan --worker-properties $WORKER"),
        block(MIGRATION, "headrace migrate --from $CONNECT --cutover --install "
              "--worker-properties $WORKER"),
        block(MIGRATION, "headrace migrate --to $CONNECT --cutover --connector lines-in "
              "--connector lines-out"),
    ]  # fmt: skip
    automation = block(
        MIGRATION, "curl -s -X POST -H 'Content-Type: application/json' localhost:8083/migrations "
        "-d '{"
    )  # fmt: skip
    try:
        moved = run(checkout, *steps, env=env)
        said = moved.stdout + moved.stderr
        assert moved.returncode == 0, said[-6000:]
        coordinate = "headrace plugins install org.apache.kafka:connect-file:4.3.0"
        assert "installed org.apache.kafka:connect-file:4.3.0 for the whole cluster" in said, said
        plans, rest = said.split("lines-in: create it STOPPED on headrace", 1)
        plan, with_worker = plans.split("lines-in cannot move:")[1:]  # without, with the file
        assert "key.converter: its config names none" in plan and coordinate in plan, said
        assert "key.converter" not in with_worker and coordinate in with_worker, said
        for name in ("lines-in", "lines-out"):
            assert f"{name}: on headrace: RUNNING" in rest, said
            assert f"{name}: on Kafka Connect: RUNNING" in rest, said
        copy = checkout / "var" / "files" / "lines-copy.txt"
        every = [str(n) for n in range(1, 2001)]
        wait_for(
            "every line in lines-copy.txt",
            lambda: copy.is_file() and len(copy.read_text().splitlines()) >= len(every),
            timeout=120,
        )
        assert copy.read_text().splitlines() == every
        planned = run(checkout, automation, env=env)
        assert planned.returncode == 0, planned.stdout + planned.stderr
        answered = planned.stdout.replace(" ", "")  # a plan of both, each movable, and the list
        assert '"url":"http://127.0.0.1:8093"' in answered, planned.stdout
        assert answered.count('"movable":true') >= 2 and '"movable":false' not in answered, (
            planned.stdout
        )
        readme = run(checkout, block("README.md", README_MIGRATE), env=env)  # both, again
        said = readme.stdout + readme.stderr
        assert readme.returncode == 0, said[-6000:]
        assert "connect-file" not in said.split("lines-in: create it STOPPED")[0], said  # had it
        for name in ("lines-in", "lines-out"):
            assert f"{name}: on headrace: RUNNING" in said, said
    finally:
        subprocess.run(["make", "connect-down"], cwd=checkout, env=env, capture_output=True,
                       check=False)  # fmt: skip


def test_make_run_the_readme_s_first_steps_and_debezium_s_five_commands_as_written(
    checkout: Path, tmp_path: Path
) -> None:
    """One ``make run`` stack for four pages. ``docs/java-connectors.md``: ``make run`` in
    another shell (the README's first command; its second, ``make test``, is this suite), with
    the demo it runs end to end; then ``docs/migration.md``'s commands, with Kafka Connect
    beside it (:func:`migrations_as_the_page_says`); ``docs/architecture.md``'s readiness probes
    of the config service and the coordinator; then the README's "Using it" commands and
    REST call against that stack; then Debezium's PostgreSQL connector installed into the
    running stack, created from the page's ``inventory.json``, listed, and its offsets read,
    against a PostgreSQL where the page says (127.0.0.1:5432, logical decoding, a database
    ``inventory``) with a row in a table, whose change event arrives in
    ``inventory.public.customers``; and ``make down``."""
    page = "docs/java-connectors.md"
    five = block(
        page,
        "make run                                      # in another shell: the stack, running on",
    )
    two = block(
        "README.md",
        "make run     # install, start Kafka and every service, run the demo pipeline end to end",
    )
    assert two.commands == ["make run", "make test"]  # the second is the suite itself
    assert five.commands[0] == "make run"  # in another shell
    using = block("README.md", ".venv/bin/headrace plugins list")
    probes = block(
        "docs/architecture.md",
        ".venv/bin/headrace probe 127.0.0.1:50051 --service headrace.v1.ConfigService   # ready: "
        "replayed",
    )
    curl = block(
        "README.md",
        "curl -X POST -H 'Content-Type: application/json' localhost:8083/connectors \\",
    )
    [inventory] = [b for b in blocks(ROOT / page) if b.info == "json" and "inventory" in b.first]
    (checkout / "inventory.json").write_text("\n".join(inventory.lines))
    server = start_postgres(tmp_path / "pg", port=5432)
    env = {**user_env(), "PATH": f"{checkout / '.venv/bin'}:{os.environ['PATH']}"}  # activated
    said = tmp_path / "make-run.out"
    stack: subprocess.Popen[bytes] | None = None
    ports = contextlib.ExitStack()
    try:
        with server.connect() as conn:
            conn.execute("CREATE DATABASE inventory")
        with psycopg.connect(host=server.host, port=5432, dbname="inventory",
                             user=server.user, autocommit=True) as conn:  # fmt: skip
            conn.execute("CREATE TABLE customers (id int PRIMARY KEY, name text)")
            conn.execute("INSERT INTO customers VALUES (1, 'Ada')")
        with said.open("w") as output:
            ports.enter_context(default_ports())
            stack = subprocess.Popen(
                ["bash", "-c", five.lines[0]], cwd=checkout, env=env, stdout=output,
                stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip

        def up() -> bool:
            assert stack is not None
            assert stack.poll() in (None, 0), said.read_text()[-4000:]  # it failed: say why
            return "the stack keeps running" in said.read_text()

        wait_for("make run up", up, 600)
        # As the README says: every one of the demo's 1,000 rows landed, both connectors' status.
        started = said.read_text()
        assert "1000 rows in Parquet under" in started, started[-3000:]
        assert "demo-source: RUNNING" in started and "demo-sink: RUNNING" in started

        migrations_as_the_page_says(checkout, env)
        probed = run(checkout, probes)
        assert probed.returncode == 0, probed.stdout + probed.stderr
        assert probed.stdout.split() == ["SERVING", "SERVING"], probed.stdout
        used = run(checkout, using, curl)
        told = used.stdout + used.stderr
        assert used.returncode == 0, told[-6000:]
        listed = [line for line in used.stdout.splitlines() if line.startswith("my-")]
        assert any(line.startswith("my-source") and "RUNNING" in line for line in listed), told
        assert any(line.startswith("my-sink") and "RUNNING" in line for line in listed), told
        assert '"name":"gen"' in used.stdout.replace(" ", ""), told  # the README's REST call

        # Its last line installed Kafka's connect-file into the running stack, for all of it.
        assert "installed org.apache.kafka:connect-file:3.9.1 for the cluster" in used.stdout, told
        kafkas = [
            line for line in used.stdout.splitlines() if "org.apache.kafka.connect.file" in line
        ]  # the version the migration installed, and the README's
        assert sum("3.9.1" in line for line in kafkas) == 2, told
        assert sum("4.3.0" in line for line in kafkas) == 2, told

        rest = run(checkout, Block(page, five.line, "", five.lines[1:]), env=env)
        assert rest.returncode == 0, rest.stdout + rest.stderr
        assert "installed io.debezium:debezium-connector-postgres:3.6.1.Final for the cluster" in (
            rest.stdout
        ), rest.stdout  # by the running stack, not into a folder beside it
        listed = [line for line in rest.stdout.splitlines() if line.startswith("inventory")]
        assert listed and "RUNNING" in listed[0] and "3.6.1.Final" in listed[0], rest.stdout
        events = asyncio.run(consume("127.0.0.1:9092", "inventory.public.customers", 1, 120))
        assert b"Ada" in (events[0].value or b"")
    finally:
        ports.close()
        down = subprocess.run(["make", "down"], cwd=checkout, env=env, capture_output=True,
                              text=True)  # fmt: skip
        if stack is not None:
            stack.wait(timeout=60)
        server.stop()
    assert down.returncode == 0, down.stdout + down.stderr
