"""Standalone mode as a user runs it: ``headrace standalone worker.properties connector...``, one
real OS process on the suite's broker, with Kafka's own quickstart files."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import pyarrow.dataset as ds
import pytest
from aiokafka.admin import AIOKafkaAdminClient

from headrace.core.runner import alive
from headrace.core.storage.topics import ensure_topic
from headrace.local.kafka import free_port
from tests.support import QUICKSTART_SINK, QUICKSTART_SOURCE, Rest, committed, stops, wait_for

pytestmark = [pytest.mark.kafka]

HEADRACE = Path(sys.executable).parent / "headrace"
TEST_PLUGINS = Path(__file__).parents[1] / "plugins"


@dataclass
class Standalone:
    """One ``headrace standalone`` process, run in ``folder`` with ``args``."""

    folder: Path
    kafka: str
    rest_port: int
    env: dict[str, str]
    address: str
    args: tuple[str, ...] = ()
    process: subprocess.Popen[bytes] | None = None
    started: list[int] = field(default_factory=list)  # every process's pid

    @property
    def rest(self) -> Rest:
        return Rest(f"http://127.0.0.1:{self.rest_port}")

    def worker_file(self, flush_ms: int = 10_000, more: str = "") -> None:
        """Kafka's config/connect-standalone.properties, on the suite's broker and a free port,
        the offsets in this folder, and ``more`` lines."""
        (self.folder / "connect-standalone.properties").write_text(
            f"bootstrap.servers={self.kafka}\n"
            "key.converter=org.apache.kafka.connect.json.JsonConverter\n"
            "value.converter=org.apache.kafka.connect.json.JsonConverter\n"
            "key.converter.schemas.enable=true\n"
            "value.converter.schemas.enable=true\n"
            f"offset.storage.file.filename={self.folder / 'connect.offsets'}\n"
            f"offset.flush.interval.ms={flush_ms}\n"
            f"listeners=http://127.0.0.1:{self.rest_port}\n" + more
        )

    def start(self) -> Standalone:
        with (self.folder / "standalone.log").open("ab") as output:
            self.process = subprocess.Popen(
                [str(HEADRACE), "standalone", *self.args],
                cwd=self.folder,
                env=self.env,
                stdout=output,
                stderr=subprocess.STDOUT,
            )
        self.started.append(self.process.pid)
        wait_for("the REST API answering", self._answers, timeout=60)
        return self

    def _answers(self) -> bool:
        assert self.process is not None
        if self.process.poll() is not None:
            raise AssertionError(f"standalone exited {self.process.returncode}: {self.output()}")
        try:
            return self.rest("GET", "/connectors")[0] == 200
        except OSError:
            return False

    def run_to_exit(self, *files: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """``headrace standalone`` with this folder's worker file and ``files``, run until it
        exits: for a start that is refused."""
        return subprocess.run(
            [str(HEADRACE), "standalone", "connect-standalone.properties", *files],
            cwd=self.folder,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def output(self) -> str:
        return (self.folder / "standalone.log").read_text(errors="replace")[-4000:]

    def children(self) -> dict[int, str]:
        """The command lines of the processes it started, by pid."""
        assert self.process is not None
        found = subprocess.run(
            ["ps", "--ppid", str(self.process.pid), "-o", "pid=,args="],
            capture_output=True,
            text=True,
            check=False,
        )
        pairs = (line.strip().split(" ", 1) for line in found.stdout.splitlines() if line.strip())
        return {int(pid): args for pid, args in pairs}

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                assert self.process.wait(timeout=60) == 0, self.output()
            finally:
                self.process.kill()
                self.process.wait()
        self.process = None


@pytest.fixture
def standalone(kafka: str, tmp_path: Path) -> Iterator[Standalone]:
    """A standalone worker to start in ``tmp_path``: its files are the test's to write."""
    rest_port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("HEADRACE_")}
    address = f"127.0.0.1:{free_port()}"
    env |= {
        "HEADRACE_VAR": str(tmp_path / "var"),
        "HEADRACE_CONFIG_ADDR": address,
        "HEADRACE_CLUSTER": f"standalone{rest_port}",
    }
    node = Standalone(tmp_path, kafka, rest_port, env, address)
    node.worker_file()
    try:
        yield node
    finally:
        try:
            node.stop()
        finally:
            wait_for("its plugin processes gone", lambda: not plugin_hosts(node), timeout=60)


def plugin_hosts(standalone: Standalone) -> list[str]:
    """Plugin processes still running for any process ``standalone`` started, orphans too:
    each names the worker it serves with ``--parent-pid``."""
    found = subprocess.run(["ps", "-eo", "args="], capture_output=True, text=True, check=False)
    return [
        line
        for line in found.stdout.splitlines()
        if "headrace.runtime.host" in line
        and any(f"--parent-pid {pid}" in line for pid in standalone.started)
    ]


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


async def topics(kafka: str) -> list[str]:
    admin = AIOKafkaAdminClient(bootstrap_servers=kafka)
    await admin.start()
    try:
        return list(await admin.list_topics())
    finally:
        await admin.close()


def test_the_quickstart_moves_every_line_in_order_with_one_control_process(
    standalone: Standalone, kafka: str
) -> None:
    folder = standalone.folder
    (folder / "connect-file-source.properties").write_text(QUICKSTART_SOURCE)
    (folder / "connect-file-sink.properties").write_text(QUICKSTART_SINK)
    sent = [f"line {i}" for i in range(2000)]
    (folder / "test.txt").write_text("\n".join(sent) + "\n")
    standalone.args = (
        "connect-standalone.properties",
        "connect-file-source.properties",
        "connect-file-sink.properties",
    )
    standalone.start()

    wait_for("every line in the sink file", lambda: len(lines(folder / "test.sink.txt")) >= 2000)
    assert lines(folder / "test.sink.txt") == sent
    with (folder / "test.txt").open("a") as out:  # a line written later is read too
        out.write("one more\n")
    wait_for("the later line", lambda: lines(folder / "test.sink.txt") == [*sent, "one more"])

    # One control process: what it starts are plugin processes, no service of distributed mode.
    children = standalone.children().values()
    assert children and all("headrace.runtime.host" in c for c in children), children
    # One plugin process per plugin version: configs are validated in those that run them.
    assert len(children) == 2, children
    cluster = standalone.env["HEADRACE_CLUSTER"]
    internal = [t for t in asyncio.run(topics(kafka)) if t.startswith(f"{cluster}-")]
    assert internal == [], "standalone mode wrote internal topics"

    status, body = standalone.rest("GET", "/connectors?expand=status")
    assert status == 200
    assert {n: c["status"]["tasks"][0]["state"] for n, c in body.items()} == {
        "local-file-source": "RUNNING",
        "local-file-sink": "RUNNING",
    }
    standalone.stop()
    # Stopped cleanly, its source's last offset is in the file: the end of what it read.
    stored = json.loads((folder / "connect.offsets").read_text())
    (offset,) = [json.loads(r["value"]["text"]) for r in stored["records"]]
    assert offset == {"position": (folder / "test.txt").stat().st_size}


def test_a_killed_worker_started_again_loses_no_line(standalone: Standalone) -> None:
    folder = standalone.folder
    (folder / "source.properties").write_text(
        "name=src\nconnector.class=FileStreamSource\nfile=in.txt\ntopic=standalone-kill\n"
    )
    (folder / "sink.json").write_text(
        json.dumps(
            {
                "name": "sink",
                "config": {
                    "connector.class": "FileStreamSink",
                    "file": "out.txt",
                    "topics": "standalone-kill",
                },
            }
        )
    )
    standalone.worker_file(flush_ms=500)
    sent = [f"record {i}" for i in range(60_000)]
    (folder / "in.txt").write_text("\n".join(sent) + "\n")
    standalone.args = ("connect-standalone.properties", "source.properties", "sink.json")
    standalone.start()
    wait_for("a first part in the sink", lambda: len(lines(folder / "out.txt")) >= 5_000)
    assert standalone.process is not None
    standalone.process.send_signal(signal.SIGKILL)
    standalone.process.wait(timeout=30)
    # Its plugin processes end on their own once their worker's lease runs out.
    wait_for("the orphaned plugin processes gone", lambda: not plugin_hosts(standalone), timeout=60)

    # What the killed worker had stored: the source goes on from there, not from the start.
    stored = json.loads((folder / "connect.offsets").read_text())
    (position,) = [json.loads(r["value"]["text"])["position"] for r in stored["records"]]
    assert position > 0

    standalone.start()
    wait_for(
        "every record in the sink", lambda: set(lines(folder / "out.txt")) >= set(sent), timeout=120
    )
    arrived = Counter(lines(folder / "out.txt"))
    assert set(arrived) == set(sent), "a record arrived that was never sent"
    duplicates = sum(n - 1 for n in arrived.values())
    assert duplicates < len(sent), "read again from the start, not from its stored offset"
    print(f"standalone SIGKILL: {len(sent)} records, 0 lost, {duplicates} duplicates")


def test_with_exactly_once_sources_a_killed_worker_started_again_writes_each_line_once(
    standalone: Standalone, kafka: str
) -> None:
    folder = standalone.folder
    topic = f"standalone-exactly-once-{standalone.rest_port}"
    asyncio.run(ensure_topic(kafka, topic, 1))
    (folder / "source.properties").write_text(
        "name=src\nconnector.class=FileStreamSource\nfile=in.txt\n"
        f"topic={topic}\nvalue.converter=org.apache.kafka.connect.storage.StringConverter\n"
        # Small polls, each its own transaction: the kill comes mid-stream.
        "exactly.once.support=required\nbatch.size=50\n"
    )
    standalone.worker_file(flush_ms=60_000, more="exactly.once.source.support=enabled\n")
    sent = [f"record {i}" for i in range(60_000)]
    (folder / "in.txt").write_text("\n".join(sent) + "\n")
    standalone.args = ("connect-standalone.properties", "source.properties")
    standalone.start()

    def arrived() -> list[str]:
        return [r.value.decode() for r in asyncio.run(committed(kafka, topic)) if r.value]

    wait_for("a first part committed", lambda: len(arrived()) >= 5_000)
    assert standalone.process is not None
    standalone.process.send_signal(signal.SIGKILL)
    standalone.process.wait(timeout=30)
    wait_for("the orphaned plugin processes gone", lambda: not plugin_hosts(standalone), timeout=60)
    before = len(arrived())
    assert before < len(sent), "every line was in before the kill: nothing was tested"

    standalone.start()
    wait_for("every line committed", lambda: len(arrived()) >= len(sent), timeout=120)
    # However far it got, and whatever its file held when it was killed (a flush interval of a
    # minute stores offsets only as transactions commit): each line once, in order.
    assert arrived() == sent
    print(f"standalone exactly-once SIGKILL: {before} committed before, 0 lost, 0 duplicates")


def test_a_stop_asked_for_while_it_starts_is_a_clean_stop(standalone: Standalone) -> None:
    (standalone.folder / "source.properties").write_text(
        "name=src\nconnector.class=FileStreamSource\nfile=in.txt\ntopic=standalone-early\n"
    )
    standalone.args = ("connect-standalone.properties", "source.properties")
    standalone.start()  # its REST API answers; its connectors may still be being created
    standalone.stop()  # SIGTERM now: exit code 0, its plugin processes gone (the fixture)


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ('{"format": "headrace-log", "version": 1, "next_', "is not a whole log"),
        ("", "is empty"),
        ("\x00\x00garbage", "is not a whole log"),
    ],
    ids=["torn", "empty", "foreign"],
)
def test_a_torn_or_foreign_offsets_file_is_refused_and_left_as_it_was(
    standalone: Standalone, content: str, problem: str
) -> None:
    offsets = standalone.folder / "connect.offsets"
    offsets.write_text(content)
    done = standalone.run_to_exit()
    assert done.returncode == 2
    assert f"{offsets}: {problem}" in done.stderr
    assert offsets.read_text() == content


def test_a_connector_file_that_is_refused_stops_the_start_naming_it(
    standalone: Standalone,
) -> None:
    (standalone.folder / "odd.properties").write_text("name=odd\nconnector.class=NoSuchThing\n")
    done = standalone.run_to_exit("odd.properties")
    assert done.returncode == 2
    assert "headrace standalone: error: odd.properties: the config of 'odd'" in done.stderr
    assert "connector.class: no plugin named 'NoSuchThing'" in done.stderr


def test_the_rest_api_listens_on_this_machine_unless_an_address_is_named_with_auth(
    standalone: Standalone,
) -> None:
    """Found by the second perimeter review: with no ``listeners``, as Kafka's quickstart file
    has none, standalone mode served its REST API on every interface with no auth, so anyone on
    the network could create connectors on the user's machine."""
    folder = standalone.folder
    worker = (folder / "connect-standalone.properties").read_text()
    unnamed = worker.replace(f"listeners=http://127.0.0.1:{standalone.rest_port}", "")
    (folder / "connect-standalone.properties").write_text(
        unnamed + f"listeners=http://0.0.0.0:{standalone.rest_port}\n"
    )
    done = standalone.run_to_exit(timeout=60)
    assert done.returncode == 2
    assert "connect-standalone.properties: listeners:" in done.stderr
    assert "with auth off" in done.stderr and "HEADRACE_REST_OPEN=true" in done.stderr
    # Without an address (Connect's older keys name only the port here), this machine only.
    (folder / "connect-standalone.properties").write_text(
        unnamed + f"rest.port={standalone.rest_port}\n"
    )
    standalone.args = ("connect-standalone.properties",)
    standalone.start()
    assert standalone.process is not None
    listening = {
        c.laddr
        for c in psutil.Process(standalone.process.pid).net_connections("tcp")
        if c.status == psutil.CONN_LISTEN and c.laddr.port == standalone.rest_port
    }
    assert {address.ip for address in listening} == {"127.0.0.1"}


def test_the_rest_api_drives_a_standalone_worker_as_connect_answers(
    standalone: Standalone,
) -> None:
    folder = standalone.folder
    standalone.worker_file(more=f"plugin.path={TEST_PLUGINS}\n")
    standalone.args = ("connect-standalone.properties",)
    rest = standalone.start().rest
    (folder / "in.txt").write_text("a\nb\nc\n")
    source = {"connector.class": "FileStreamSource", "file": "in.txt", "topic": "standalone-rest"}
    created, body = rest("POST", "/connectors", {"name": "src", "config": source})
    assert created == 201, body
    assert rest("POST", "/connectors", {"name": "src", "config": source})[0] == 409
    # What distributed mode alone has is refused at create, naming the key.
    for key, value, said in [
        ("offsets.storage.topic", "mine", "'mine': a standalone worker keeps"),
        ("exactly.once.support", "required", "required, but sources run without transactions"),
    ]:
        status, body = rest("POST", "/connectors", {"name": "x", "config": {**source, key: value}})
        assert status == 400 and f"{key}: {said}" in body["message"], body
    recording = {
        "connector.class": "recording_sink.RecordingSinkConnector",
        "topics": "standalone-rest",
        "path": str(folder / "recorded"),
    }
    assert rest("PUT", "/connectors/rec/config", recording)[0] == 201
    wait_for("the recording sink running", lambda: states(rest, "rec") == ("RUNNING", ["RUNNING"]))
    wait_for("three records", lambda: len(lines(folder / "recorded" / "records.jsonl")) >= 3)

    assert rest("PUT", "/connectors/src/pause")[0] == 202
    wait_for("paused", lambda: states(rest, "src") == ("PAUSED", ["PAUSED"]))
    assert rest("PUT", "/connectors/src/resume")[0] == 202
    wait_for("running again", lambda: states(rest, "src") == ("RUNNING", ["RUNNING"]))
    assert rest("POST", "/connectors/src/restart?includeTasks=true")[0] == 202
    wait_for("running after the restart", lambda: states(rest, "src") == ("RUNNING", ["RUNNING"]))

    # KIP-875 on the offsets file: refused while it runs, as Connect refuses it.
    assert rest("GET", "/connectors/src/offsets") == (
        200,
        {"offsets": [{"partition": {"filename": "in.txt"}, "offset": {"position": 6}}]},
    )
    assert rest("DELETE", "/connectors/src/offsets")[0] == 400
    assert rest("PUT", "/connectors/src/stop")[0] == 204
    wait_for("stopped", lambda: states(rest, "src") == ("STOPPED", []))
    altered = {"offsets": [{"partition": {"filename": "in.txt"}, "offset": {"position": 2}}]}
    assert rest("PATCH", "/connectors/src/offsets", altered)[0] == 200
    assert rest("GET", "/connectors/src/offsets") == (200, altered)
    assert rest("PUT", "/connectors/src/resume")[0] == 202
    # From position 2: "b" and "c" again.
    wait_for("b and c again", lambda: len(lines(folder / "recorded" / "records.jsonl")) >= 5)

    assert rest("DELETE", "/connectors/rec")[0] == 204
    wait_for("the deletion delivered", lambda: any(d for _, _, d in stops(folder / "recorded")))
    assert [(u, t) for u, t, d in stops(folder / "recorded") if d] == [
        ("connector", None),
        ("task", 0),
    ]
    assert rest("GET", "/connectors/rec")[0] == 404
    assert rest("GET", "/connectors")[1] == ["src"]

    # The headrace command speaks to it over gRPC.
    got = subprocess.run(
        [str(HEADRACE), "--address", standalone.address, "get", "connectors", "-o", "json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert got.returncode == 0, got.stderr
    listed = json.loads(got.stdout)  # as GET /connectors?expand=info&expand=status
    assert list(listed) == ["src"]
    assert listed["src"]["status"]["connector"]["state"] == "RUNNING"


def states(rest: Rest, name: str) -> tuple[str, list[str]] | None:
    status, body = rest("GET", f"/connectors/{name}/status")
    if status != 200:
        return None
    return body["connector"]["state"], [t["state"] for t in body["tasks"]]


@pytest.mark.spark
def test_the_spark_executor_starts_only_for_a_connector_that_writes_through_it(
    standalone: Standalone,
) -> None:
    folder = standalone.folder
    standalone.env["HEADRACE_EXECUTOR_ADDR"] = f"127.0.0.1:{free_port()}"
    standalone.args = ("connect-standalone.properties",)
    rest = standalone.start().rest
    generated = {"connector.class": "DatagenSource", "topic": "standalone-pq", "records": "300"}
    assert rest("POST", "/connectors", {"name": "gen", "config": generated})[0] == 201
    wait_for("the source running", lambda: states(rest, "gen") == ("RUNNING", ["RUNNING"]))
    assert not executors(standalone)

    parquet = {"connector.class": "ParquetSink", "topics": "standalone-pq", "path": "pq"}
    assert rest("POST", "/connectors", {"name": "pq", "config": parquet})[0] == 201
    wait_for(
        "every row in Parquet",
        lambda: (
            (folder / "pq").exists()
            and ds.dataset(folder / "pq", format="parquet").count_rows() >= 300
        ),
        timeout=180,
    )
    assert ds.dataset(folder / "pq", format="parquet").count_rows() == 300
    (executor,) = executors(standalone)
    standalone.stop()
    wait_for("the executor stopped with it", lambda: not alive(executor), timeout=60)


def executors(standalone: Standalone) -> list[int]:
    return [pid for pid, args in standalone.children().items() if "headrace.executor" in args]
