"""``headrace migrate`` against a real Kafka Connect cluster (distributed, one worker, Kafka's
own FileStream connectors from Maven's jars, its REST API behind basic auth) and the suite's
headrace stack: a running pipeline moves over with its offsets while lines keep coming, and
back, each line arriving once; and the same, driven by automation over gRPC and REST."""

from __future__ import annotations

import asyncio
import http.server
import json
import os
import ssl
import subprocess
import sys
import threading
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from bench.connect import STRING_CONVERTER, ConnectDistributed, RestTls
from headrace.clients.connect import basic_auth
from headrace.core.model.properties import parse_properties
from headrace.core.storage.topics import ensure_topic
from headrace.local.connect import MODEST_HEAP
from headrace.local.stack import Stack
from headrace.v1 import migration_pb2, migration_pb2_grpc
from tests.pki import keystore, make_pki, truststore
from tests.support import CONNECT_FILE_VERSIONS, Rest, wait_for

STRING = {"key.converter": STRING_CONVERTER, "value.converter": STRING_CONVERTER}
CREDENTIALS = ("operator", uuid.uuid4().hex)


@pytest.fixture(scope="module")
def connect(kafka: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConnectDistributed]:
    folder = tmp_path_factory.mktemp("connect")
    cluster = ConnectDistributed(
        kafka, folder, workers=1, credentials=CREDENTIALS, heap=MODEST_HEAP
    )
    (folder / "password").write_text(CREDENTIALS[1] + "\n")
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


def url(cluster: ConnectDistributed) -> str:
    return f"http://127.0.0.1:{cluster.members[0].port}"


def connect_rest(cluster: ConnectDistributed) -> Rest:
    return Rest(url(cluster), basic_auth(*CREDENTIALS))


def reaching(cluster: ConnectDistributed) -> list[str]:
    """The options that reach Connect behind its basic auth, its password read from a file."""
    password = cluster.folder / "password"
    return ["--connect-user", CREDENTIALS[0], "--connect-password", f"@{password}"]


def migrate(
    stack: Stack, cluster: ConnectDistributed | None, *args: str
) -> subprocess.CompletedProcess[str]:
    """``headrace migrate`` as an operator runs it, against the stack's REST API and
    ``cluster`` with its credentials (with ``args`` alone, without)."""
    reach = reaching(cluster) if cluster is not None else []
    return subprocess.run(
        [sys.executable, "-m", "headrace.cli.main", "migrate", *reach, *args],
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


def runs_only_on(running: Rest, gone: Rest, *names: str) -> None:
    for name in names:
        assert states(gone, name) is None
        assert states(running, name) == ("RUNNING", ["RUNNING"])


def flowing(what: str, appender: Appender, out_file: Path) -> None:
    """Waits for 200 lines more than were written when called."""
    now = appender.written
    wait_for(what, lambda: len(lines(out_file)) >= now + 200)


def each_line_once(appender: Appender, out_file: Path) -> None:
    """Once everything written has arrived: in order, none lost, none twice."""
    sent = [f"line {i}" for i in range(appender.written)]
    wait_for("every line", lambda: len(lines(out_file)) >= len(sent), timeout=120)
    assert lines(out_file) == sent


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


def pipeline_in_connect(
    connect: ConnectDistributed, kafka: str, folder: Path, prefix: str = ""
) -> tuple[str, str]:
    """A file source and a file sink through a topic of their own, created in Connect: their
    names. Their configs name no converters, as is common: Connect's workers give them
    theirs (StringConverter). Their classes by alias, or ``prefix`` and their simple names."""
    tag = uuid.uuid4().hex[:8]
    topic, source, sink = f"migrated-{tag}", f"lines-in-{tag}", f"lines-out-{tag}"
    asyncio.run(ensure_topic(kafka, topic, 1))
    (folder / "in.txt").touch()
    config = {"tasks.max": "1"}
    classes = ("FileStreamSource", "FileStreamSink")
    if prefix:
        classes = (f"{prefix}FileStreamSourceConnector", f"{prefix}FileStreamSinkConnector")
    connect.create(source, {"connector.class": classes[0],
                            "file": str(folder / "in.txt"), "topic": topic, **config})  # fmt: skip
    connect.create(sink, {"connector.class": classes[1],
                          "file": str(folder / "out.txt"), "topics": topic, **config})  # fmt: skip
    return source, sink


def test_a_running_pipeline_moves_from_connect_and_back_twice_with_each_line_once(
    stack: Stack, connect: ConnectDistributed, kafka: str, tmp_path: Path
) -> None:
    source, sink = pipeline_in_connect(connect, kafka, tmp_path)
    in_file, out_file = tmp_path / "in.txt", tmp_path / "out.txt"
    theirs, ours = connect_rest(connect), Rest(f"http://{stack.settings.rest_addr}")
    names = ("--connector", source, "--connector", sink)

    with Appender(in_file) as appender:
        wait_for("lines through Kafka Connect", lambda: len(lines(out_file)) >= 200)
        # Which converters Connect's workers gave them cannot be known from its REST API: the
        # plan asks for the workers' properties rather than read their bytes another way.
        blind = migrate(stack, connect, "--from", url(connect), *names, "--plan", "-o", "json")
        assert blind.returncode == 0, blind.stderr
        for row in json.loads(blind.stdout):
            assert not row["movable"], row
            assert any("--worker-properties" in b for b in row["blockers"]), row
        given = worker_option(connect)
        planned = migrate(
            stack, connect, "--from", url(connect), *names, *given, "--plan", "-o", "json"
        )
        assert planned.returncode == 0, planned.stderr
        rows = json.loads(planned.stdout)
        assert [row["movable"] for row in rows] == [True, True], rows
        # Kafka's own FileStream connectors are installed here: headrace runs the same Java
        # classes on its JVM plugin host, at the latest installed version, as Connect did.
        assert {row["version"] for row in rows} == {CONNECT_FILE_VERSIONS[-1]}

        for turn in (1, 2):  # there and back, twice: a cutover works every time
            over = migrate(stack, connect, "--from", url(connect), *names, *given, "--cutover")
            assert over.returncode == 0, over.stdout + over.stderr
            runs_only_on(ours, theirs, source, sink)  # deleted from Connect once running here
            flowing(f"lines through headrace ({turn})", appender, out_file)

            # Moving to Connect, headrace writes out the converters it used into each config.
            back = migrate(stack, connect, "--to", url(connect), *names, "--cutover")
            assert back.returncode == 0, back.stdout + back.stderr
            runs_only_on(theirs, ours, source, sink)
            flowing(f"lines through Connect again ({turn})", appender, out_file)

    each_line_once(appender, out_file)  # across the four handovers
    for name in (source, sink):
        connect.delete(name)


def test_client_settings_connect_s_worker_gives_move_as_overrides_or_are_refused_naming_them(
    stack: Stack, connect: ConnectDistributed, kafka: str, tmp_path: Path
) -> None:
    """A Connect worker whose properties set its producers' acks: the moved source would get
    that as its own override (``producer.override.acks``), which headrace's workers refuse under
    their default policy, and the plan says so, naming the key; the sink, whose consumer the
    worker leaves alone, moves."""
    source, sink = pipeline_in_connect(connect, kafka, tmp_path)
    props = tmp_path / "connect-distributed.properties"
    props.write_text(worker_properties(connect).read_text() + "\nproducer.acks=1\n")
    names = ("--connector", source, "--connector", sink)
    planned = migrate(
        stack, connect, "--from", url(connect), *names, "--worker-properties", str(props),
        "--plan", "-o", "json",
    )  # fmt: skip
    assert planned.returncode == 0, planned.stderr
    rows = {row["name"]: row for row in json.loads(planned.stdout)}
    assert not rows[source]["movable"]
    assert any(
        "producer.override.acks" in b and "connector.client.config.override.policy" in b
        for b in rows[source]["blockers"]
    ), rows[source]["blockers"]
    assert rows[sink]["movable"], rows[sink]["blockers"]
    for name in (source, sink):
        connect.delete(name)


def worker_properties(connect: ConnectDistributed) -> Path:
    """The properties file Connect's first worker runs with."""
    return connect.members[0].folder / "worker.properties"


def worker_option(connect: ConnectDistributed) -> tuple[str, str]:
    return ("--worker-properties", str(worker_properties(connect)))


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
    theirs, ours = connect_rest(connect), Rest(f"http://{stack.settings.rest_addr}")
    try:
        wait_for("it running in Connect", lambda: states(theirs, name) == ("RUNNING", ["RUNNING"]))
        asked = ("--connector", name, "--plan", "-o", "json")
        planned = migrate(stack, connect, "--from", url(connect), *asked)
        assert planned.returncode == 0, planned.stderr
        (row,) = json.loads(planned.stdout)
        assert row["movable"] is False
        assert any(b.startswith("consumer.override.max.poll.records: ") for b in row["blockers"])

        cutover = migrate(stack, connect, "--from", url(connect), "--connector", name, "--cutover")
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
    theirs, ours = connect_rest(connect), Rest(f"http://{stack.settings.rest_addr}")
    names = ("--connector", source, "--connector", sink, *worker_option(connect))
    with Appender(tmp_path / "in.txt") as appender:
        wait_for("lines through Kafka Connect", lambda: len(lines(out_file)) >= 200)
        with HeldProxy(f"http://{stack.settings.rest_addr}") as proxy:
            command = [sys.executable, "-m", "headrace.cli.main", "migrate"]
            cut_short = subprocess.Popen(
                [*command, *reaching(connect), "--from", url(connect), *names, "--cutover"],
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

        again = migrate(stack, connect, "--from", url(connect), *names, "--cutover")
        assert again.returncode == 0, again.stdout + again.stderr
        assert f"{source}: move its offsets and resume it" in again.stdout
        runs_only_on(ours, theirs, source, sink)
        flowing("lines through headrace", appender, out_file)

    each_line_once(appender, out_file)
    for name in (source, sink):
        ours("DELETE", f"/connectors/{name}")


def test_automation_plans_over_grpc_and_moves_a_running_pipeline_over_rest(
    stack: Stack, connect: ConnectDistributed, kafka: str, tmp_path: Path
) -> None:
    source, sink = pipeline_in_connect(connect, kafka, tmp_path)
    out_file = tmp_path / "out.txt"
    theirs, ours = connect_rest(connect), Rest(f"http://{stack.settings.rest_addr}")
    user, password = CREDENTIALS
    worker = parse_properties(worker_properties(connect).read_text())
    asked = {"from_url": url(connect), "connectors": [source, sink], "worker": worker}
    with Appender(tmp_path / "in.txt") as appender:
        wait_for("lines through Kafka Connect", lambda: len(lines(out_file)) >= 200)
        with grpc.insecure_channel(stack.settings.config_addr) as channel:
            stub = migration_pb2_grpc.MigrationServiceStub(channel)
            planned = stub.StartMigration(
                migration_pb2.StartMigrationRequest(
                    from_url=url(connect),
                    connectors=[source, sink],
                    connect=migration_pb2.ConnectAccess(username=user, password=password),
                    worker=worker,
                ),
                timeout=120,
            )
            with pytest.raises(grpc.RpcError) as unknown:
                stub.GetMigration(migration_pb2.MigrationRequest(id="nope"), timeout=30)
        assert planned.state == "SUCCEEDED", planned.error
        assert [(m.name, m.movable, m.state) for m in planned.moves] == [
            (source, True, "PLANNED"),
            (sink, True, "PLANNED"),
        ]
        assert unknown.value.code() == grpc.StatusCode.NOT_FOUND

        # Connect refuses a wrong password: the migration ends FAILED, saying so, and nothing
        # has changed on either side.
        wrong = {"username": user, "password": "not-the-password"}
        status, failing = ours("POST", "/migrations", {**asked, "cutover": True, "connect": wrong})
        assert status == 202, failing
        failed = until_ended(ours, failing["id"])
        assert failed["state"] == "FAILED" and "answered 401" in failed["error"], failed
        assert "not-the-password" not in json.dumps(failed)
        assert states(ours, source) is None and states(theirs, source) == ("RUNNING", ["RUNNING"])

        access = {"username": user, "password": password}
        status, started = ours("POST", "/migrations", {**asked, "cutover": True, "connect": access})
        assert status == 202 and started["state"] == "RUNNING", started
        assert ours.headers["Location"] == f"/migrations/{started['id']}"
        ended = until_ended(ours, started["id"])
        assert ended["state"] == "SUCCEEDED", ended
        assert [(m["name"], m["state"]) for m in ended["moves"]] == [
            (source, "MOVED"),
            (sink, "MOVED"),
        ]
        assert password not in json.dumps(ended) and ended["url"] == url(connect)
        runs_only_on(ours, theirs, source, sink)
        flowing("lines through headrace", appender, out_file)

    each_line_once(appender, out_file)
    status, listed = ours("GET", "/migrations")
    assert status == 200 and listed[0]["id"] == started["id"] and listed[1]["id"] == failing["id"]
    for name in (source, sink):
        ours("DELETE", f"/connectors/{name}")


def until_ended(rest: Rest, migration: str) -> dict[str, Any]:
    """The migration once it is no longer RUNNING."""

    def read() -> dict[str, Any]:
        status, body = rest("GET", f"/migrations/{migration}")
        assert status == 200, body
        return dict(body)

    wait_for("the migration to end", lambda: read()["state"] != "RUNNING", timeout=300)
    return read()


def test_a_connect_cluster_that_asks_for_a_client_certificate_is_reached_with_one(
    stack: Stack, kafka: str, tmp_path: Path
) -> None:
    pki = make_pki(tmp_path / "pki")
    server, client = pki.issue("connect"), pki.issue("migrator")
    password = uuid.uuid4().hex
    calls = ssl.create_default_context(cafile=pki.ca)
    calls.load_cert_chain(client.cert, client.key)
    tls = RestTls(
        keystore(server, tmp_path / "connect.p12", password),
        truststore(pki, tmp_path / "trust.p12", password),
        password,
        calls,
    )
    cluster = ConnectDistributed(kafka, tmp_path / "connect", workers=1, tls=tls, heap=MODEST_HEAP)
    cluster.start()
    try:
        name = f"over-tls-{uuid.uuid4().hex[:8]}"
        config = {"connector.class": "FileStreamSink", "file": str(tmp_path / "out.txt")}
        cluster.create(name, {**config, "topics": name, **STRING})
        https = f"https://127.0.0.1:{cluster.members[0].port}"
        asked = ("--from", https, "--connector", name, "--plan", "-o", "json")

        trusted = ("--connect-ca", str(pki.ca))
        refused = migrate(stack, None, *asked, *trusted)
        assert refused.returncode == 1
        assert "Kafka Connect: GET /connector-plugins" in refused.stderr, refused.stderr

        identified = ("--connect-cert", str(client.cert), "--connect-key", str(client.key))
        planned = migrate(stack, None, *asked, *trusted, *identified)
        assert planned.returncode == 0, planned.stderr
        (row,) = json.loads(planned.stdout)
        assert row["name"] == name and row["movable"] is True, row
    finally:
        cluster.stop()
