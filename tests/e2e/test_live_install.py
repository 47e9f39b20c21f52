"""One install for the whole cluster, with no restart: ``headrace plugins install`` typed as a
user types it, against a running stack whose config service and workers each have a plugin
path of their own (as on machines of their own). Every one of them installs the same jars,
the connectors run on every worker, and a worker that joins afterwards installs it and runs
its share; ``plugins uninstall`` is refused while connectors use it and removes it everywhere
after; a plugin copied into the plugin path by hand is found and run without a restart."""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import grpc
import pytest

from headrace.clients.config import ConfigClient
from headrace.core.settings import BUILTIN_PLUGINS, Settings
from headrace.local.stack import Stack
from headrace.v1 import coordinator_pb2, coordinator_pb2_grpc
from tests.docblocks import block
from tests.support import CONNECT_FILE_VERSIONS, Rest, json_lines, local_settings, wait_for

pytestmark = pytest.mark.kafka

ROOT = Path(__file__).parents[2]
VERSION = CONNECT_FILE_VERSIONS[0]
COORDINATE = f"org.apache.kafka:connect-file:{VERSION}"
STRINGS = "org.apache.kafka.connect.storage.StringConverter"
PIPELINES = ("a", "b")
"""Two FileStream pipelines: four connectors and four tasks, two of each per worker, so that a
third worker joining is given some of them."""


def worker_entry(settings: Settings, worker: str) -> Path:
    return settings.var_dir.parent / f"{worker}-plugins"


@pytest.fixture
def cluster(kafka: str, tmp_path: Path) -> Iterator[tuple[Stack, Settings]]:
    settings = local_settings(
        kafka,
        f"live{uuid.uuid4().hex[:8]}",
        tmp_path / "var",
        (BUILTIN_PLUGINS, tmp_path / "var" / "plugins"),
    )
    stack = Stack(
        settings,
        extra_env={
            worker: {"HEADRACE_PLUGIN_PATH": f"{BUILTIN_PLUGINS}:{worker_entry(settings, worker)}"}
            for worker in ("worker-1", "worker-2", "worker-3")
        },
        external=frozenset({"executor"}),
    )
    try:
        for name in ("config", "coordinator", "worker-1", "worker-2"):
            stack.start(name)
        yield stack, settings
    finally:
        stack.down()


PAGE = "docs/java-connectors.md"
COMMANDS = block(PAGE, f"headrace plugins install {COORDINATE}   # answers once it is recorded")
"""The page's three commands: install, list, uninstall."""


def headrace(settings: Settings, command: str) -> subprocess.CompletedProcess[str]:
    """One command as a user types it at the checkout's root, with its ``.venv/bin`` on
    ``PATH`` (the page's ``source .venv/bin/activate``), pointed at this cluster."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HEADRACE_")}
    env["HEADRACE_CONFIG_ADDR"] = settings.config_addr
    env["PATH"] = f"{ROOT / '.venv' / 'bin'}:{env['PATH']}"
    return subprocess.run(
        ["bash", "-c", command],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def pipeline(settings: Settings, folder: Path, name: str) -> dict[str, dict[str, str]]:
    topic = f"{settings.cluster}-{name}"
    common = {"key.converter": STRINGS, "value.converter": STRINGS}
    return {
        f"source-{name}": {
            "connector.class": "FileStreamSource",
            "file": str(folder / f"{name}.in"),
            "topic": topic,
            **common,
        },
        f"sink-{name}": {
            "connector.class": "FileStreamSink",
            "file": str(folder / f"{name}.out"),
            "topics": topic,
            **common,
        },
    }


def append(folder: Path, name: str, lines: range) -> None:
    with (folder / f"{name}.in").open("a") as out:
        out.writelines(f"{name}-{i}\n" for i in lines)


def arrived(folder: Path, name: str, count: int) -> bool:
    out = folder / f"{name}.out"
    return out.is_file() and len(out.read_text().splitlines()) >= count


def no_deletion_owed(settings: Settings) -> bool:
    """Whether the coordinator's newest generation owes no deletion stop."""
    with grpc.insecure_channel(settings.coordinator_addrs[0]) as channel:
        history = coordinator_pb2_grpc.CoordinatorStub(channel).History(
            coordinator_pb2.HistoryRequest(last=1), timeout=10
        )
    return bool(history.generations) and not history.generations[-1].pending_deletions


def placement(client: ConfigClient, names: list[str]) -> dict[str, str] | None:
    """Unit -> the worker running it, once every unit of ``names`` runs."""
    found: dict[str, str] = {}
    for name in names:
        status = client.find_status(name)
        if status is None or not status.tasks:
            return None
        for unit in (status.connector, *status.tasks):
            if unit.state != "RUNNING":
                return None
            found[f"{name}/{unit.task}"] = unit.worker_id
    return found


def test_one_install_reaches_every_worker_live_and_a_worker_that_joins_later(
    cluster: tuple[Stack, Settings], tmp_path: Path
) -> None:
    stack, settings = cluster
    data = tmp_path
    started = {n: stack.pid(n) for n in ("config", "coordinator", "worker-1", "worker-2")}
    install, listed, uninstall = COMMANDS.commands
    installed = headrace(settings, install)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert f"installed {COORDINATE} for the cluster" in installed.stdout, installed.stdout
    assert "FileStreamSourceConnector" in installed.stdout, installed.stdout
    shown = headrace(settings, listed)
    assert shown.returncode == 0 and COORDINATE in shown.stdout, shown.stdout + shown.stderr
    rest = Rest(f"http://{settings.rest_addr}")
    status, installs = rest("GET", "/admin/plugins")
    assert status == 200 and [i["coordinate"] for i in installs] == [COORDINATE], installs
    assert len(installs[0]["sha512"]) == 128
    status, again = rest("POST", "/admin/plugins", {"coordinate": COORDINATE})
    assert status == 409 and "installed already" in again["message"], again
    status, bad = rest("POST", "/admin/plugins", {"coordinate": "org.example:x:1.0/../../etc"})
    assert status == 400 and "is not a Maven coordinate" in bad["message"], bad
    configs = {k: v for name in PIPELINES for k, v in pipeline(settings, data, name).items()}
    names = sorted(configs)
    with ConfigClient(settings.config_addr, settings) as client:
        for name, config in configs.items():
            client.create(name, config)
        for name in PIPELINES:
            append(data, name, range(100))
        for name in PIPELINES:
            wait_for(f"pipeline {name}'s 100 lines", partial(arrived, data, name, 100), 120)
        placed = wait_for("every unit running", lambda: placement(client, names), 60)
        assert set(placed.values()) == {"worker-1", "worker-2"}, placed
        for worker in ("worker-1", "worker-2"):
            jar = worker_entry(settings, worker) / "connect-file" / VERSION
            assert (jar / f"connect-file-{VERSION}.jar").is_file(), worker

        # A worker that joins later installs it as it joins, and runs its share.
        stack.workers = 3
        stack.start("worker-3")

        def with_worker_3() -> dict[str, str] | None:
            found = placement(client, names)
            return found if found and "worker-3" in found.values() else None

        placed = wait_for("units running on worker-3", with_worker_3, 120)
        third = worker_entry(settings, "worker-3") / "connect-file" / VERSION
        assert (third / f"connect-file-{VERSION}.jar").is_file()
        for name in PIPELINES:
            append(data, name, range(100, 200))
        for name in PIPELINES:
            wait_for(f"pipeline {name}'s 200 lines", partial(arrived, data, name, 200), 120)
            lines = (data / f"{name}.out").read_text().splitlines()
            assert sorted(set(lines)) == sorted(f"{name}-{i}" for i in range(200)), name

        refused = headrace(settings, uninstall)
        assert refused.returncode != 0
        assert "in use" in refused.stderr and "source-a" in refused.stderr, refused.stderr
        for name in names:
            client.delete(name)
        # Uninstalled once their deletions are told: a connector deleted is stopped with
        # deleted=true by the plugin it ran (`headrace coordinator history` shows none owed).
        wait_for("no deletion owed", partial(no_deletion_owed, settings), 60)
        removed = headrace(settings, uninstall)
        assert removed.returncode == 0, removed.stdout + removed.stderr
        entries = [settings.var_dir / "plugins"] + [
            worker_entry(settings, w) for w in ("worker-1", "worker-2", "worker-3")
        ]
        wait_for(
            "connect-file removed everywhere",
            lambda: not any((e / "connect-file" / VERSION).exists() for e in entries),
            60,
        )
        assert not [p for p in client.plugins() if p.class_name.startswith("org.apache.kafka")]

        # Copied in by hand, as into Connect's plugin.path (a volume every worker mounts):
        # found without a restart.
        for entry in entries:
            shutil.copytree(ROOT / "tests/plugins/recording/1.0.0", entry / "recording/1.0.0")
        wait_for(
            "the copied plugin listed",
            lambda: any(p.class_name.startswith("recording_sink") for p in client.plugins()),
            60,
        )
        ledger = data / "ledger"
        client.create(
            "recorded",
            {
                "connector.class": "recording_sink.RecordingSinkConnector",
                "topics": f"{settings.cluster}-a",
                "path": str(ledger),
                "value.converter": STRINGS,
            },
        )
        wait_for(
            "the copied plugin's records",
            lambda: (
                len(json_lines(ledger / "records.jsonl")) >= 200
                if (ledger / "records.jsonl").is_file()
                else None
            ),
            120,
        )
    assert {n: stack.pid(n) for n in started} == started  # no service restarted
