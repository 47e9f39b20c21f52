"""The ``headrace`` command as a user runs it (a process of its own, its exit code, its stdout
and stderr), against a real config service on the suite's broker. There are no workers here, so
nothing ever runs: statuses stay UNASSIGNED, which is what a wait for RUNNING must report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from headrace.cli.shapes import info_json
from headrace.clients.config import ConfigClient
from headrace.core.settings import Settings
from headrace.local.stack import Stack

pytestmark = pytest.mark.kafka


class Run:
    """One finished ``headrace`` command."""

    def __init__(self, done: subprocess.CompletedProcess[str]) -> None:
        self.code, self.out, self.err = done.returncode, done.stdout, done.stderr

    def json(self) -> Any:
        assert self.code == 0, self.err
        return json.loads(self.out)


def headrace(settings: Settings, *args: str, stdin: str | None = None) -> Run:
    """``python -m headrace.cli.main ARGS`` pointed at this test's config service."""
    env = {**os.environ, "HEADRACE_CONFIG_ADDR": settings.config_addr}
    done = subprocess.run(
        [sys.executable, "-m", "headrace.cli.main", *args],
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert "Traceback" not in done.stderr, done.stderr
    return Run(done)


def ok(settings: Settings, *args: str, stdin: str | None = None) -> list[str]:
    """The lines a command that must succeed printed."""
    run = headrace(settings, *args, stdin=stdin)
    assert run.code == 0, f"{args}: {run.err}"
    return run.out.splitlines()


def target_state(settings: Settings, name: str) -> str:
    described = headrace(settings, "describe", "connector", name, "-o", "json").json()
    return str(described["target_state"])


GEN = {"name": "gen", "config": {"connector.class": "Gen", "tasks.max": 2, "topic": "t1"}}
LAKE = {"name": "lake", "connector.class": "Lake", "topics": "t1"}  # PUT /config's bare config


def test_apply_get_describe_and_patch(
    config_service: tuple[Stack, Settings], tmp_path: Path
) -> None:
    _, settings = config_service
    folder = tmp_path / "connectors"
    folder.mkdir()
    (folder / "gen.json").write_text(json.dumps(GEN))
    (folder / "lake.json").write_text(json.dumps(LAKE))

    assert ok(settings, "apply", "-f", str(folder)) == [
        "connector/gen created",
        "connector/lake created",
    ]
    again = ["connector/gen unchanged", "connector/lake unchanged"]
    assert ok(settings, "apply", "-f", str(folder)) == again
    (folder / "lake.json").write_text(json.dumps({**LAKE, "topics": "t2"}))
    assert ok(settings, "apply", "-f", str(folder)) == [
        "connector/gen unchanged",
        "connector/lake configured",
    ]

    listing = headrace(settings, "get", "connectors", "-o", "json").json()
    with ConfigClient(settings.config_addr, settings) as client:
        assert {n: e["info"] for n, e in listing.items()} == {
            n: info_json(client.get(n)) for n in ("gen", "lake")
        }
    assert listing["gen"]["info"]["config"] == {
        "connector.class": "Gen",
        "tasks.max": "2",
        "topic": "t1",
        "name": "gen",
    }
    assert listing["lake"]["info"]["config"]["topics"] == "t2"
    assert listing["lake"]["status"] == {
        "name": "lake",
        "connector": {"state": "UNASSIGNED", "worker_id": ""},
        "tasks": [],
        "type": "sink",
    }
    assert yaml.safe_load(headrace(settings, "get", "conn", "-o", "yaml").out) == listing
    assert ok(settings, "get", "connectors", "-o", "name") == ["connector/gen", "connector/lake"]
    table = ok(settings, "get", "connectors", "lake")
    assert table[0].split() == ["NAME", "TYPE", "STATE", "TASKS", "PLUGIN", "VERSION", "WORKER"]
    assert table[1].split() == ["lake", "sink", "UNASSIGNED", "0/0", "<none>", "<none>"]
    missing = headrace(settings, "get", "connectors", "gen", "nope")
    assert missing.code == 1 and "NOT_FOUND" in missing.err and "gen" in missing.out

    described = ok(settings, "describe", "connector", "gen")
    assert described[:3] == [
        "Name:          gen",
        "Type:          source",
        "Target state:  RUNNING",
    ]
    assert "  topic            t1" in described
    as_json = headrace(settings, "describe", "connector/gen", "-o", "json").json()
    assert as_json["target_state"] == "RUNNING" and as_json["offsets"] == []

    assert ok(settings, "patch", "connector", "gen", "--unset", "topic", "--set", "label=x") == [
        "connector/gen patched"
    ]
    assert ok(settings, "patch", "conn", "gen", "-p", '{"label": "x"}') == [
        "connector/gen patched (no change)"
    ]
    patched = headrace(settings, "get", "connectors", "gen", "-o", "json").json()["gen"]
    config = patched["info"]["config"]
    assert config == {"connector.class": "Gen", "tasks.max": "2", "label": "x", "name": "gen"}


def test_a_bad_file_is_named_and_the_good_ones_are_still_applied(
    config_service: tuple[Stack, Settings], tmp_path: Path
) -> None:
    _, settings = config_service
    (tmp_path / "a-broken.json").write_text('{"name": "broken", "config": {')
    (tmp_path / "b-gen.json").write_text(json.dumps(GEN))
    (tmp_path / "c-refused.json").write_text(json.dumps({"name": "x", "tasks.max": "1"}))
    run = headrace(settings, "apply", "-f", str(tmp_path))
    assert run.code == 1
    assert run.out.splitlines() == ["connector/gen created"]
    assert f"error: {tmp_path / 'a-broken.json'}: not valid JSON" in run.err
    assert "error: connector/x (" in run.err and "INVALID_ARGUMENT" in run.err
    assert "connector.class" in run.err
    with ConfigClient(settings.config_addr, settings) as client:
        assert client.names() == ["gen"]


def test_lifecycle_offsets_plugins_validate_and_delete(
    config_service: tuple[Stack, Settings], tmp_path: Path
) -> None:
    _, settings = config_service
    assert ok(settings, "apply", "-f", "-", stdin=json.dumps(GEN)) == ["connector/gen created"]

    assert ok(settings, "pause", "connector", "gen") == ["connector/gen paused"]
    assert target_state(settings, "gen") == "PAUSED"
    late = headrace(settings, "resume", "connector", "gen", "--wait", "--timeout", "1s")
    assert late.code == 1 and late.out.splitlines() == ["connector/gen resumed"]
    assert "error: connector/gen is not RUNNING after 1s: connector UNASSIGNED" in late.err

    offsets = tmp_path / "offsets.json"
    offsets.write_text(json.dumps({"offsets": [{"partition": {"task": 0}, "offset": {"next": 9}}]}))
    refused = headrace(settings, "offsets", "alter", "gen", "-f", str(offsets))
    assert refused.code == 1 and refused.err.startswith("error: FAILED_PRECONDITION: ")
    assert "STOPPED" in refused.err

    assert ok(settings, "stop", "connector", "gen") == ["connector/gen stopped"]
    assert headrace(settings, "offsets", "get", "gen", "-o", "json").json() == {"offsets": []}
    assert ok(settings, "offsets", "alter", "gen", "-f", str(offsets))[0].startswith(
        "connector/gen: "
    )
    assert headrace(settings, "get", "offsets", "gen", "-o", "json").json() == json.loads(
        offsets.read_text()
    )
    assert ok(settings, "offsets", "get", "gen")[1].split() == ['{"task":0}', '{"next":9}']
    ok(settings, "offsets", "reset", "gen")
    assert headrace(settings, "offsets", "get", "gen", "-o", "yaml").out == "offsets: []\n"

    # Topic tracking (KIP-558): with no worker, the connector has used none yet.
    assert headrace(settings, "topics", "get", "gen", "-o", "json").json() == {
        "gen": {"topics": []}
    }
    assert ok(settings, "topics", "reset", "gen") == ["connector/gen: topics reset"]
    missing = headrace(settings, "topics", "get", "nobody")
    assert missing.code == 1 and missing.err.startswith("error: NOT_FOUND: ")

    restarted = ok(settings, "restart", "connector", "gen", "--include-tasks")
    assert restarted == ["connector/gen restarting connector"]
    no_task = headrace(settings, "restart", "task", "gen", "0")
    assert no_task.code == 1 and no_task.err.startswith("error: NOT_FOUND: ")

    bad = headrace(settings, "validate", "Gen", "--set", "tasks.max=0", "--set", "topic=t")
    assert bad.code == 1 and "tasks.max" in bad.out
    assert bad.out.splitlines()[0].split() == ["KEY", "VALUE", "ERROR"]
    good = tmp_path / "good.json"
    good.write_text(json.dumps(GEN))
    checked = headrace(settings, "validate", "Gen", "-f", str(good), "-o", "json")
    assert checked.json()["error_count"] == 0

    plugins = headrace(settings, "plugins", "list", "-o", "json").json()
    assert {"class": "com.example.LakeConnector", "type": "sink", "version": "2.0.0"} in plugins
    assert len(headrace(settings, "get", "plugins", "--all", "-o", "json").json()) > len(plugins)
    keys = headrace(
        settings, "plugins", "config", "Lake", "--version", "1.0.0", "-o", "json"
    ).json()
    assert "label" in {k["name"] for k in keys}

    assert ok(settings, "delete", "connector", "gen", "--wait") == [
        "connector/gen deleted",
        "connector/gen: deleted",
    ]
    gone = headrace(settings, "describe", "connector", "gen")
    assert gone.code == 1 and gone.err.startswith("error: NOT_FOUND: ")

    created = ok(
        settings,
        "create",
        "connector",
        "held",
        "--set",
        "connector.class=Gen",
        "--initial-state",
        "paused",
    )
    assert created == ["connector/held created"]
    assert target_state(settings, "held") == "PAUSED"
