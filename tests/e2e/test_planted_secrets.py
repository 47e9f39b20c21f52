"""End to end: a secret a connector reads through a config provider is found nowhere but where
it was planted, and a PASSWORD key's value nowhere but in the configs topic.

The planted secrets (``conftest.Planted``) are a key of a properties file, a file of a folder
and a variable of the services' environment, referenced as ``${file:...}``, ``${dir:...}`` and
``${env:...}``. The connector's task proves it got them resolved (the digests it writes); then
every record of every topic of the broker (keys, values, headers, all partitions, from the
start), every log file of the stack and every answer (REST, gRPC, the CLI) is searched for
them. A PASSWORD key written as a literal is stored as written in the configs topic, as Kafka
Connect stores it: that is its one place, and it is searched for everywhere else.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient

from headrace.cli.shapes import status_json
from headrace.clients.config import ConfigClient
from headrace.local.stack import Stack
from tests.e2e.conftest import PLANTED_ENV, Planted
from tests.support import Deadline, wait_for

pytestmark = pytest.mark.kafka

PLUGIN = "secretive_source.SecretiveSourceConnector"


def rest(stack: Stack, method: str, path: str, body: Any = None) -> tuple[int, bytes]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        f"http://{stack.settings.rest_addr}{path}",
        data=data,
        method=method,
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def cli(stack: Stack, *args: str) -> bytes:
    done = subprocess.run(
        [sys.executable, "-m", "headrace.cli.main", *args],
        env={**os.environ, "HEADRACE_CONFIG_ADDR": stack.settings.config_addr},
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout + done.stderr


async def every_topic(kafka: str) -> dict[str, bytes]:
    """Per topic of the broker (internal ones too), every key, value and header it holds."""
    admin = AIOKafkaAdminClient(bootstrap_servers=kafka)
    await admin.start()
    try:
        described = await admin.describe_topics(sorted(await admin.list_topics()))
    finally:
        await admin.close()
    partitions = [
        TopicPartition(t["topic"], p["partition"]) for t in described for p in t["partitions"]
    ]
    consumer = AIOKafkaConsumer(bootstrap_servers=kafka, enable_auto_commit=False)
    await consumer.start()
    found: defaultdict[str, bytearray] = defaultdict(bytearray)
    try:
        consumer.assign(partitions)
        await consumer.seek_to_beginning(*partitions)
        ends = await consumer.end_offsets(partitions)
        deadline = Deadline("every record of every topic", 120)
        while behind := [tp for tp, end in ends.items() if await consumer.position(tp) < end]:
            deadline.check(behind[:5])
            for tp, batch in (await consumer.getmany(timeout_ms=500)).items():
                for record in batch:
                    held = found[tp.topic]
                    held += (record.key or b"") + b"\n" + (record.value or b"") + b"\n"
                    for name, value in record.headers:
                        held += name.encode() + b"=" + (value or b"") + b"\n"
    finally:
        await consumer.stop()
    return {topic: bytes(held) for topic, held in found.items()}


def every_log(*stacks: Stack) -> dict[str, bytes]:
    """Every log file of the stacks' processes (the services' and the plugin processes')."""
    return {
        str(p): p.read_bytes() for stack in stacks for p in stack.settings.var_dir.rglob("*.log")
    }


def digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def states(client: ConfigClient, name: str) -> tuple[str, list[str]]:
    status = status_json(client.status(name))
    return status["connector"]["state"], [t["state"] for t in status["tasks"]]


def test_a_planted_secret_is_found_nowhere_and_a_password_only_in_the_configs_topic(
    stack: Stack, spark: Stack, planted: Planted, tmp_path: Path
) -> None:
    password = f"planted-password-{uuid.uuid4().hex}"
    provided = {
        "file.secret": f"${{file:{planted.folder}/db.properties:db.password}}",
        "dir.secret": f"${{dir:{planted.folder}:api-key}}",
        "env.secret": f"${{env:{PLANTED_ENV}}}",
    }
    config = {
        "connector.class": PLUGIN,
        "tasks.max": "1",
        **provided,
        "password": password,
        "digest.path": str(tmp_path),
    }
    answers: dict[str, bytes] = {}
    status, answers["create"] = rest(
        stack, "POST", "/connectors", {"name": "hush", "config": config}
    )
    assert status == 201, answers["create"]
    failing = {**config, "fail.quoting": "true"}
    status, answers["create-failing"] = rest(
        stack, "POST", "/connectors", {"name": "hush-loud", "config": failing}
    )
    assert status == 201, answers["create-failing"]

    # The task got every secret resolved: it says so by their digests.
    written = tmp_path / "task-0.json"
    wait_for("the task's digests", written.is_file)
    assert json.loads(written.read_text()) == {
        "file.secret": digest(planted.file_secret),
        "dir.secret": digest(planted.dir_secret),
        "env.secret": digest(planted.env_secret),
        "password": digest(password),
    }
    with ConfigClient(stack.settings.config_addr, stack.settings) as client:
        wait_for("hush running", lambda: states(client, "hush") == ("RUNNING", ["RUNNING"]))
        wait_for("hush-loud's task failed", lambda: states(client, "hush-loud")[1] == ["FAILED"])
        trace = status_json(client.status("hush-loud"))["tasks"][0]["trace"]
        # Its message quoted every secret; the trace shows none of them.
        assert "cannot log in with [hidden], [hidden], [hidden], [hidden]" in trace
        for name in ("hush", "hush-loud"):
            # Every field of each answer, as the client read it off the wire.
            answers[f"grpc-get-{name}"] = repr(client.get(name)).encode()
            answers[f"grpc-status-{name}"] = repr(client.status(name)).encode()
        answers["grpc-validate"] = repr(client.validate(PLUGIN, config)).encode()

    for path in (
        "/connectors/hush",
        "/connectors/hush/config",
        "/connectors/hush/status",
        "/connectors/hush/tasks",
        "/connectors/hush-loud/status",
        "/connectors/hush-loud/tasks/0/status",
        "/connectors?expand=info&expand=status",
        # The console's own: its board (the rows its live updates carry too) and a history.
        "/ui/api/board",
        "/ui/api/connectors/hush-loud/history",
    ):
        status, answers[path] = rest(stack, "GET", path)
        assert status == 200, answers[path]
    status, answers["validate"] = rest(
        stack, "PUT", f"/connector-plugins/{PLUGIN}/config/validate", config
    )
    assert status == 200, answers["validate"]
    answers["cli-describe"] = cli(stack, "describe", "connector", "hush")
    answers["cli-describe-json"] = cli(stack, "describe", "connector", "hush", "-o", "json")
    answers["cli-get"] = cli(stack, "get", "connectors", "-o", "json")
    answers["cli-tasks"] = cli(stack, "get", "tasks", "hush-loud", "-o", "json")

    board = json.loads(answers["/ui/api/board"])
    [loud] = [row for row in board["connectors"] if row["name"] == "hush-loud"]
    assert "[hidden]" in loud["error"]  # the row shows the task's error, its secrets hidden
    # What is stored and answered is the config as written: references shown, password hidden.
    shown = json.loads(answers["/connectors/hush/config"])
    assert {k: shown[k] for k in provided} == provided
    assert shown["password"] == "[hidden]"
    [task] = json.loads(answers["/connectors/hush/tasks"])
    assert {k: task["config"][k] for k in provided} == provided

    topics = asyncio.run(every_topic(stack.settings.bootstrap_servers))
    configs_topic = stack.settings.topic("configs")
    assert f"${{env:{PLANTED_ENV}}}".encode() in topics[configs_topic]  # stored unresolved
    assert password.encode() in topics[configs_topic]
    places = {
        **{f"topic {t}": held for t, held in topics.items()},
        **{f"log {p}": held for p, held in every_log(stack, spark).items()},
        **{f"answer {a}": held for a, held in answers.items()},
    }
    provider_secrets = (planted.file_secret, planted.dir_secret, planted.env_secret)
    for secret in provider_secrets:
        assert [p for p, held in places.items() if secret.encode() in held] == []
    found = [p for p, held in places.items() if password.encode() in held]
    assert found == [f"topic {configs_topic}"]

    for name in ("hush", "hush-loud"):
        status, _ = rest(stack, "DELETE", f"/connectors/{name}")
        assert status == 204


def test_a_reference_is_refused_at_the_door_or_fails_its_connector_naming_key_and_reference(
    stack: Stack, planted: Planted, tmp_path: Path
) -> None:
    base = {"connector.class": PLUGIN, "digest.path": str(tmp_path)}
    refused = {**base, "env.secret": "${env:HOME}", "tasks.max": "${env:E2E_PLANTED_SECRET_N}"}
    status, body = rest(stack, "POST", "/connectors", {"name": "peek", "config": refused})
    assert status == 400
    message = json.loads(body)["message"]
    assert "env.secret: ${env:HOME}: 'HOME' does not match" in message
    assert "tasks.max: takes no config provider reference" in message
    assert rest(stack, "GET", "/connectors/peek")[0] == 404  # nothing was written

    # Allowed by its text, but the key is not in the file: known only where it is resolved.
    missing = f"${{file:{planted.folder}/db.properties:db.nope}}"
    status, body = rest(
        stack, "POST", "/connectors", {"name": "peek", "config": {**base, "file.secret": missing}}
    )
    assert status == 201, body
    with ConfigClient(stack.settings.config_addr, stack.settings) as client:
        wait_for("peek failed", lambda: states(client, "peek")[0] == "FAILED")
        trace = status_json(client.status("peek"))["connector"]["trace"]
    assert f"file.secret: {missing}: the file has no key 'db.nope'" in trace
    assert planted.file_secret not in trace
    assert rest(stack, "DELETE", "/connectors/peek")[0] == 204


def test_a_config_put_back_as_answered_keeps_its_hidden_password(
    stack: Stack, tmp_path: Path
) -> None:
    password = f"kept-password-{uuid.uuid4().hex}"
    before, after = tmp_path / "before", tmp_path / "after"
    before.mkdir()
    after.mkdir()
    config = {"connector.class": PLUGIN, "password": password, "digest.path": str(before)}
    status, body = rest(stack, "POST", "/connectors", {"name": "kept", "config": config})
    assert status == 201, body
    wait_for("the first task's digests", (before / "task-0.json").is_file)

    status, body = rest(stack, "GET", "/connectors/kept/config")
    answered = json.loads(body)
    assert answered["password"] == "[hidden]"
    status, body = rest(
        stack, "PUT", "/connectors/kept/config", {**answered, "digest.path": str(after)}
    )
    assert status == 200, body
    wait_for("the updated task's digests", (after / "task-0.json").is_file)
    assert json.loads((after / "task-0.json").read_text())["password"] == digest(password)
    # Under a class that does not keep it secret, [hidden] cannot stand for the password: it
    # would be answered in plain text from then on.
    swapped = {**answered, "connector.class": "DatagenSource", "topic": "kept-out"}
    status, body = rest(stack, "PUT", "/connectors/kept/config", swapped)
    assert status == 400, body
    assert "password: [hidden] stands for the stored secret" in body.decode()
    status, body = rest(stack, "GET", "/connectors/kept/config")
    assert json.loads(body)["password"] == "[hidden]" and password not in body.decode()
    assert json.loads(body)["connector.class"] == PLUGIN
    assert rest(stack, "DELETE", "/connectors/kept")[0] == 204
