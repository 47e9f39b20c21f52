"""``headrace migrate`` against a real Kafka Connect cluster (distributed, one worker, Kafka's
own FileStream connectors from Maven's jars) and the suite's headrace stack: a running pipeline
moves over with its offsets while lines keep coming, and back, each line arriving once."""

from __future__ import annotations

import asyncio
import http.server
import json
import os
import subprocess
import sys
import threading
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench.connect import STRING_CONVERTER, ConnectDistributed
from headrace.core.storage.topics import ensure_topic
from headrace.local.stack import Stack
from tests.support import CONNECT_FILE_VERSIONS, Rest, wait_for

STRING = {"key.converter": STRING_CONVERTER, "value.converter": STRING_CONVERTER}


@pytest.fixture(scope="module")
def connect(kafka: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConnectDistributed]:
    cluster = ConnectDistributed(kafka, tmp_path_factory.mktemp("connect"), workers=1)
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


def url(cluster: ConnectDistributed) -> str:
    return f"http://127.0.0.1:{cluster.members[0].port}"


def migrate(stack: Stack, *args: str) -> subprocess.CompletedProcess[str]:
    """``headrace migrate`` as an operator runs it, against the stack's REST API."""
    return subprocess.run(
        [sys.executable, "-m", "headrace.cli.main", "migrate", *args],
        env={**os.environ, "HEADRACE_REST_ADDR": stack.settings.rest_addr},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def states(rest: Rest, name: str) -> tuple[str, list[str]] | None:
    status, body = rest("GET", f"/connectors/{name}/status")
    if status == 404:
        return None
    assert status == 200, body
    return body["connector"]["state"], [t["state"] for t in body["tasks"]]


class Appender:
    """Appends numbered lines to a file until stopped, as a program writing a log does."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.written = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Appender:
        self._thread.start()
        return self

    def _run(self) -> None:
        with self.path.open("a") as out:
            while not self._stop.wait(0.02):
                out.write("".join(f"line {self.written + i}\n" for i in range(20)))
                out.flush()
                self.written += 20

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


class HeldProxy:
    """headrace's REST API behind a proxy that holds every offsets write until the test is
    done with it: a cutover is caught between Connect's stop and headrace's offsets."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.held = threading.Event()  # an offsets write is being held
        self._release = threading.Event()
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                if self.command == "PATCH" and self.path.endswith("/offsets"):
                    proxy.held.set()
                    proxy._release.wait(120)
                    self.send_error(503)
                    return
                request = urllib.request.Request(
                    proxy.upstream + self.path,
                    data=body,
                    method=self.command,
                    headers={"Content-Type": "application/json"},
                )
                try:
                    with urllib.request.urlopen(request, timeout=60) as answer:
                        status, text = answer.status, answer.read()
                except urllib.error.HTTPError as error:
                    status, text = error.code, error.read()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(text)))
                self.end_headers()
                self.wfile.write(text)

            do_GET = do_PUT = do_POST = do_PATCH = do_DELETE = _forward

            def log_message(self, *args: Any) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.address = f"127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> HeldProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._release.set()
        self._server.shutdown()
        self._server.server_close()


def pipeline_in_connect(connect: ConnectDistributed, kafka: str, folder: Path) -> tuple[str, str]:
    """A file source and a file sink through a topic of their own, created in Connect: their
    names."""
    tag = uuid.uuid4().hex[:8]
    topic, source, sink = f"migrated-{tag}", f"lines-in-{tag}", f"lines-out-{tag}"
    asyncio.run(ensure_topic(kafka, topic, 1))
    (folder / "in.txt").touch()
    config = {"tasks.max": "1", **STRING}
    connect.create(source, {"connector.class": "FileStreamSource",
                            "file": str(folder / "in.txt"), "topic": topic, **config})  # fmt: skip
    connect.create(sink, {"connector.class": "FileStreamSink",
                          "file": str(folder / "out.txt"), "topics": topic, **config})  # fmt: skip
    return source, sink


def test_a_running_pipeline_moves_from_connect_and_back_with_each_line_once(
    stack: Stack, connect: ConnectDistributed, kafka: str, tmp_path: Path
) -> None:
    source, sink = pipeline_in_connect(connect, kafka, tmp_path)
    in_file, out_file = tmp_path / "in.txt", tmp_path / "out.txt"
    theirs, ours = Rest(url(connect)), Rest(f"http://{stack.settings.rest_addr}")
    names = ("--connector", source, "--connector", sink)

    with Appender(in_file) as appender:
        wait_for("lines through Kafka Connect", lambda: len(lines(out_file)) >= 200)
        planned = migrate(stack, "--from", url(connect), *names, "--plan", "-o", "json")
        assert planned.returncode == 0, planned.stderr
        rows = json.loads(planned.stdout)
        assert [row["movable"] for row in rows] == [True, True], rows
        # Kafka's own FileStream connectors are installed here: headrace runs the same Java
        # classes on its JVM plugin host, at the latest installed version, as Connect did.
        assert {row["version"] for row in rows} == {CONNECT_FILE_VERSIONS[-1]}

        over = migrate(stack, "--from", url(connect), *names, "--cutover")
        assert over.returncode == 0, over.stdout + over.stderr
        for name in (source, sink):
            assert states(theirs, name) is None  # deleted from Connect once running here
            assert states(ours, name) == ("RUNNING", ["RUNNING"])
        moved_at = appender.written
        wait_for("lines through headrace", lambda: len(lines(out_file)) >= moved_at + 200)

        back = migrate(stack, "--to", url(connect), *names, "--cutover")
        assert back.returncode == 0, back.stdout + back.stderr
        for name in (source, sink):
            assert states(ours, name) is None
            assert states(theirs, name) == ("RUNNING", ["RUNNING"])
        back_at = appender.written
        wait_for("lines through Connect again", lambda: len(lines(out_file)) >= back_at + 200)

    sent = [f"line {i}" for i in range(appender.written)]
    wait_for("every line", lambda: len(lines(out_file)) >= len(sent), timeout=120)
    assert lines(out_file) == sent  # in order, none lost, none twice, across both handovers
    for name in (source, sink):
        connect.delete(name)


def test_a_plan_for_a_connector_headrace_cannot_run_says_why_and_changes_nothing(
    stack: Stack, connect: ConnectDistributed, tmp_path: Path
) -> None:
    # Connect's workers let a connector set its clients' keys (their policy is All); headrace's
    # operator has not allowed it (its policy is None), and headrace refuses rather than ignores.
    name = f"overrides-{uuid.uuid4().hex[:8]}"
    config = {
        "connector.class": "FileStreamSink",
        "file": str(tmp_path / "out.txt"),
        "topics": name,
        "consumer.override.max.poll.records": "100",
    }
    connect.create(name, {**config, **STRING})
    theirs, ours = Rest(url(connect)), Rest(f"http://{stack.settings.rest_addr}")
    try:
        wait_for("it running in Connect", lambda: states(theirs, name) == ("RUNNING", ["RUNNING"]))
        asked = ("--connector", name, "--plan", "-o", "json")
        planned = migrate(stack, "--from", url(connect), *asked)
        assert planned.returncode == 0, planned.stderr
        (row,) = json.loads(planned.stdout)
        assert row["movable"] is False
        assert any(b.startswith("consumer.override.max.poll.records: ") for b in row["blockers"])

        cutover = migrate(stack, "--from", url(connect), "--connector", name, "--cutover")
        assert cutover.returncode == 1
        assert f"{name}: cannot move: consumer.override.max.poll.records: " in cutover.stderr
        assert states(theirs, name) == ("RUNNING", ["RUNNING"]) and states(ours, name) is None
    finally:
        connect.delete(name)


def test_a_cutover_cut_short_after_connect_stopped_goes_on_when_run_again(
    stack: Stack, connect: ConnectDistributed, kafka: str, tmp_path: Path
) -> None:
    source, sink = pipeline_in_connect(connect, kafka, tmp_path)
    out_file = tmp_path / "out.txt"
    theirs, ours = Rest(url(connect)), Rest(f"http://{stack.settings.rest_addr}")
    names = ("--connector", source, "--connector", sink)
    with Appender(tmp_path / "in.txt") as appender:
        wait_for("lines through Kafka Connect", lambda: len(lines(out_file)) >= 200)
        with HeldProxy(f"http://{stack.settings.rest_addr}") as proxy:
            command = [sys.executable, "-m", "headrace.cli.main", "migrate"]
            cut_short = subprocess.Popen(
                [*command, "--from", url(connect), *names, "--cutover"],
                env={**os.environ, "HEADRACE_REST_ADDR": proxy.address},
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            try:
                assert proxy.held.wait(120), "the cutover never reached the offsets"
            finally:
                cut_short.kill()  # killed mid-move: nothing of it is undone
                cut_short.wait()
        # Where it was cut short: stopped in Connect, created STOPPED in headrace, its offsets
        # not moved yet. Nothing runs it, and lines keep coming.
        assert states(theirs, source) == ("STOPPED", [])
        assert states(ours, source) == ("STOPPED", [])

        again = migrate(stack, "--from", url(connect), *names, "--cutover")
        assert again.returncode == 0, again.stdout + again.stderr
        assert f"{source}: move its offsets and resume it" in again.stdout
        for name in (source, sink):
            assert states(theirs, name) is None
            assert states(ours, name) == ("RUNNING", ["RUNNING"])
        moved_at = appender.written
        wait_for("lines through headrace", lambda: len(lines(out_file)) >= moved_at + 200)

    sent = [f"line {i}" for i in range(appender.written)]
    wait_for("every line", lambda: len(lines(out_file)) >= len(sent), timeout=120)
    assert lines(out_file) == sent
    for name in (source, sink):
        ours("DELETE", f"/connectors/{name}")
