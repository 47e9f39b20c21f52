"""Fixtures shared by every tier: the real Kafka broker, Spark executor and PostgreSQL server the
suite starts itself (one of each per session), free ports, and a unique cluster prefix per test so
no two tests ever share a topic."""

from __future__ import annotations

import contextlib
import faulthandler
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import traceback
import uuid
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import TextIO

import psutil
import pytest
from hypothesis import settings as hypothesis_settings

from headrace.core.security.kafkasecurity import VARIABLES as SECURITY
from headrace.core.settings import BUILTIN_PLUGINS, Settings
from headrace.isolation import jvm
from headrace.local.kafka import KAFKA_VERSION, EmbeddedKafka, free_port
from headrace.local.stack import Stack
from tests import sparkprocs
from tests.kafkatls import SecureBroker, make_secure_listeners
from tests.postgres import Postgres, start_postgres
from tests.support import (
    CONNECT_FILE_VERSIONS,
    DEBEZIUM_JDBC,
    DEBEZIUM_POSTGRES,
    JAVA_TEST_CONNECTOR,
    local_settings,
)

# The suite shares 2 cores with a broker and Spark: time per example says nothing about logic.
hypothesis_settings.register_profile("headrace", deadline=None)
hypothesis_settings.load_profile("headrace")

# pytest-timeout fails a test that overruns by a signal, which cannot reach a thread stuck in C.
# For that, a watchdog thread writes every thread's stack here, stops every process the session
# started (the broker, Spark, PostgreSQL, the services and their plugin processes run in
# sessions of their own, and would outlive the run) and ends the run: a hang costs minutes,
# names where it hung (`make test` prints the file) and leaves nothing running. Should that
# thread never get the interpreter's lock, faulthandler's, which needs none, ends the run later.
HANG_REPORT = Path(__file__).parents[1] / "var" / "test-hang.txt"
HANG_AFTER_S = 900
LAST_RESORT_S = 60


def end_hung_run(
    report: TextIO, stop: threading.Event, after_s: float = HANG_AFTER_S, nodeid: str = ""
) -> None:
    """Unless ``stop`` is set within ``after_s``: every thread's stack into ``report``, every
    process this one started stopped, and the run ended (exit status 1). The report ends with
    what a reader of its last lines needs: the test, and where the main thread stands."""
    if stop.wait(after_s):
        return
    faulthandler.dump_traceback(file=report, all_threads=True)
    report.write(f"\n{nodeid} hung here (the main thread, innermost call last):\n")
    report.write(main_thread_stack())
    report.flush()
    stopped = stop_descendants(psutil.Process())
    report.write(f"stopped the session's {len(stopped)} processes: {'; '.join(stopped)}\n")
    report.write(f"{nodeid} ran past {after_s:.0f}s\n")
    report.flush()
    os._exit(1)


def main_thread_stack(frames: int = 20) -> str:
    """The main thread's innermost ``frames`` calls, innermost last."""
    frame = sys._current_frames().get(threading.main_thread().ident or 0)
    if frame is None:
        return "  (no Python frame: the main thread is outside the interpreter)\n"
    return "".join(traceback.format_stack(frame)[-frames:])


def stop_descendants(root: psutil.Process, rounds: int = 3) -> list[str]:
    """SIGKILLs every process ``root`` started, and theirs, whatever session they run in, first
    (reading a process's command line can block on it; its name cannot), and again for any
    started meanwhile; what each was."""
    stopped: list[str] = []
    for _ in range(rounds):
        descendants = [
            process
            for process in root.children(recursive=True)
            if _status(process) not in (None, psutil.STATUS_ZOMBIE)
        ]
        if not descendants:
            break
        for process in descendants:
            with contextlib.suppress(psutil.Error):
                process.kill()
        for process in descendants:
            try:
                stopped.append(f"{process.pid} {process.name()}")
            except psutil.Error:
                stopped.append(str(process.pid))
        psutil.wait_procs(descendants, timeout=10)
    return stopped


def _status(process: psutil.Process) -> str | None:
    try:
        return str(process.status())
    except psutil.Error:
        return None


def hang_after_s(item: pytest.Item) -> float:
    """How long ``item`` may run before the watchdog ends the run: past its own timeout, if it
    is given a longer one than the suite's hang limit."""
    marker = item.get_closest_marker("timeout")
    own = float(marker.args[0]) if marker is not None and marker.args else 0.0
    return max(HANG_AFTER_S, own + LAST_RESORT_S)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None]:
    HANG_REPORT.parent.mkdir(parents=True, exist_ok=True)
    after_s = hang_after_s(item)
    with HANG_REPORT.open("w") as report:
        report.write(f"{item.nodeid} ran past {after_s}s: every thread's stack\n")
        report.flush()
        stop = threading.Event()
        watchdog = threading.Thread(
            target=end_hung_run,
            args=(report, stop, after_s, item.nodeid),
            name="hang-watchdog",
            daemon=True,
        )
        watchdog.start()
        faulthandler.dump_traceback_later(after_s + LAST_RESORT_S, exit=True, file=report)
        try:
            yield
        finally:
            faulthandler.cancel_dump_traceback_later()
            stop.set()
            watchdog.join()
    HANG_REPORT.unlink(missing_ok=True)  # another session in this checkout may have taken it


@pytest.fixture(scope="session")
def session_broker(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[EmbeddedKafka, SecureBroker]]:
    """The one single-node KRaft broker of this test session: a plaintext listener, which every
    test uses unless it tries clients' security, and the secure listeners it tries it on."""
    secure = make_secure_listeners(tmp_path_factory.mktemp("kafka-tls"), free_port(), free_port())
    broker = EmbeddedKafka(
        tmp_path_factory.mktemp("kafka"), port=free_port(), secure=secure.listeners
    )
    broker.start()
    try:
        yield broker, secure
    finally:
        broker.stop()


@pytest.fixture(scope="session")
def kafka(session_broker: tuple[EmbeddedKafka, SecureBroker]) -> str:
    """Bootstrap servers of the session broker's plaintext listener."""
    return session_broker[0].bootstrap


@pytest.fixture(scope="session")
def secure_kafka(session_broker: tuple[EmbeddedKafka, SecureBroker]) -> SecureBroker:
    """The session broker's SASL_SSL (SCRAM-SHA-512) and mTLS listeners, and their logins."""
    return session_broker[1]


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """The session's one Spark: the executor service (``local[2]``) as a real process, run by a
    :class:`Stack` of its own. The integration tests call it, the end-to-end stack adopts it
    instead of starting another, and a test that kills it starts it again before it ends. Every
    test writes under its own tmp_path, inside this run's base folder: the executor's root."""
    settings = Settings(
        executor_addr=f"127.0.0.1:{free_port()}",
        var_dir=tmp_path_factory.mktemp("spark"),
        spark_master="local[2]",
        file_roots=(tmp_path_factory.getbasetemp(),),
    )
    limits = (
        *("--max-in-flight", str(sparkprocs.MAX_IN_FLIGHT)),
        *("--stream-idle-s", str(sparkprocs.STREAM_IDLE_S)),
    )
    executor = Stack(settings, extra_args={"executor": limits})
    executor.start("executor", timeout=sparkprocs.STARTUP_DEADLINE_S)
    try:
        sparkprocs.start_spark_on_demand(executor)
        yield executor
    finally:
        executor.stop("executor", timeout=sparkprocs.STOP_DEADLINE_S)
    # Its last run stopped as SIGTERM asks, not by the SIGKILL that follows a missed deadline.
    last_run = executor.log_file("executor").read_bytes()[executor.log_offsets["executor"] :]
    assert b'"executor_stopped"' in last_run, last_run.decode(errors="replace")[-4000:]


@pytest.fixture(scope="session")
def postgres() -> Iterator[Postgres]:
    """A PostgreSQL server started for this test session, on a loopback port. Its data is not
    under pytest's folder: the server runs as a user of its own, and pytest makes its folder
    private again whenever a session starts, which would cut a running server off its data."""
    data = Path(tempfile.mkdtemp(prefix="headrace-postgres-"))
    try:
        server = start_postgres(data)
        try:
            yield server
        finally:
            server.stop()
    finally:
        shutil.rmtree(data, ignore_errors=True)


@pytest.fixture(scope="session")
def java_plugin_entry(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A plugin path entry of Java connectors, laid out as a user lays them: Kafka's connect-file
    at two versions, its MirrorMaker 2, Debezium's PostgreSQL connector and its JDBC sink installed
    from Maven
    (``headrace plugins install``),
    and the Java recording source (``tests/java/recording``, built here against the
    deletion-stop jar) copied in as a jar, as into Connect's plugin.path."""
    entry = tmp_path_factory.mktemp("java-plugins")
    for version in CONNECT_FILE_VERSIONS:
        jvm.install(f"org.apache.kafka:connect-file:{version}", entry)
    jvm.install(f"org.apache.kafka:connect-mirror:{KAFKA_VERSION}", entry)
    jvm.install(DEBEZIUM_POSTGRES, entry)
    jvm.install(DEBEZIUM_JDBC, entry)
    shutil.copy(built_jar(JAVA_TEST_CONNECTOR, "recording-source-1.0.0.jar"), entry)
    return entry


@pytest.fixture(scope="session")
def java_prying_jar() -> Path:
    """The hostile Java connector's jar (``tests/java/prying``), built here."""
    return built_jar(JAVA_TEST_CONNECTOR.parent / "prying", "prying-source-1.0.0.jar")


def built_jar(project: Path, jar: str) -> Path:
    """A test connector's jar, built with Maven from its project folder."""
    built = subprocess.run(
        ["mvn", "-q", "-B", "-f", str(project / "pom.xml"), "package"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    return project / "target" / jar


@pytest.fixture
def cluster() -> str:
    """A topic-name prefix of this test's own."""
    return f"t{uuid.uuid4().hex[:10]}"


@pytest.fixture
def var_dir(tmp_path: Path) -> Path:
    path = tmp_path / "var"
    path.mkdir()
    return path


@pytest.fixture(autouse=True)
def _no_ambient_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests say where everything is; a developer's shell must not leak into them."""
    for name in list(os.environ):
        if name.startswith("HEADRACE_") or name in ("KAFKA_BOOTSTRAP_SERVERS", *SECURITY):
            monkeypatch.delenv(name)


__all__ = ["free_port"]


TEST_PLUGINS = Path(__file__).parent / "plugins"


@pytest.fixture
def settings_for(kafka: str, cluster: str, var_dir: Path) -> Callable[..., Settings]:
    """Builds Settings for this test: its own topics, free ports, its own folder."""

    def build(*plugin_path: Path) -> Settings:
        return local_settings(
            kafka, cluster, var_dir, plugin_path or (BUILTIN_PLUGINS, TEST_PLUGINS)
        )

    return build


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """What tests measured and report (a ``reported`` user property), after the results."""
    reports = [
        (report.nodeid, value)
        for kind in ("passed", "failed")
        for report in terminalreporter.stats.get(kind, [])
        if report.when == "call"
        for name, value in report.user_properties
        if name == "reported"
    ]
    if reports:
        terminalreporter.section("reported by tests")
        for nodeid, value in reports:
            terminalreporter.write_line(f"{nodeid}: {value}")
