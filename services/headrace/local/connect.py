"""Apache Kafka Connect on this machine, from the jars Maven resolved, to try ``headrace
migrate`` against (``make connect-up``, ``make connect-down``), and the command line its JVMs
are started with (the benchmarks' peer starts the same way).

``make connect-jars`` resolves Connect's runtime, its FileStream connectors and its JSON converter
at the embedded broker's version into ``deploy/kafka-connect/lib/<version>``. ``make connect-up``
starts one distributed worker from ``deploy/kafka-connect/connect-distributed.properties``
(Kafka's own example worker file, on the embedded broker, its REST API on 127.0.0.1:8093, since
headrace's takes Connect's default 8083), detached, and waits until it is ready; its log and pid
are under ``<var>/connect``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from headrace.core.model.properties import parse_properties
from headrace.core.settings import project_home
from headrace.local.kafka import KAFKA_VERSION
from headrace.local.pidfile import running_pid

WORKER_PROPERTIES = Path("deploy") / "kafka-connect" / "connect-distributed.properties"
"""The worker file ``make connect-up`` runs with, relative to the checkout."""


def connect_lib() -> Path:
    """Where ``make connect-jars`` put Connect's jars; exits saying what to run if they are not
    there."""
    lib = project_home() / "deploy" / "kafka-connect" / "lib" / KAFKA_VERSION
    if not any(lib.glob("connect-runtime-*.jar")):
        raise SystemExit(
            f"Kafka Connect {KAFKA_VERSION}'s jars are missing under {lib}: run `make connect-jars`"
            f" (with KAFKA_VERSION={KAFKA_VERSION} if it is not the default)"
        )
    return lib


STOCK_HEAP = ("-Xms256M", "-Xmx2G")
"""The heap ``connect-distributed.sh`` and ``connect-standalone.sh`` give a worker
(``KAFKA_HEAP_OPTS`` unset)."""
STOCK_JVM_OPTIONS = (
    "-server",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-XX:MaxInlineLevel=15",
    "-Djava.awt.headless=true",
)
"""What ``kafka-run-class.sh`` gives every Kafka JVM (``KAFKA_JVM_PERFORMANCE_OPTS`` unset)."""
MODEST_HEAP = ("-Xms256M", "-Xmx1G")
"""The heap of a worker to try things with, or to test against, on a small machine."""


def java_command(
    mode: str, properties: Path, heap: Sequence[str] = STOCK_HEAP, flags: Sequence[str] = ()
) -> list[str]:
    """The command line of a Connect worker JVM in ``mode`` (standalone or distributed) with
    the worker file ``properties``, as Kafka's scripts start it: Connect's own main class, its
    jars, the JVM options of ``kafka-run-class.sh``, the heap ``heap`` (the scripts' by
    default), the broker's logging, and any further JVM ``flags``."""
    logging = project_home() / "deploy" / "kafka"
    return [
        "java",
        *heap,
        *STOCK_JVM_OPTIONS,
        # Kafka 3 logs through log4j 1, Kafka 4 through log4j 2: each reads its own.
        f"-Dlog4j.configuration=file:{logging / 'log4j.properties'}",
        f"-Dlog4j2.configurationFile=file:{logging / 'log4j2.properties'}",
        *flags,
        "-cp",
        f"{connect_lib()}/*",
        f"org.apache.kafka.connect.cli.Connect{mode.capitalize()}",
        str(properties),
    ]


def rest_url(properties: Mapping[str, str]) -> str:
    """The REST API's URL from a worker file's ``listeners`` (its first one)."""
    listener = properties.get("listeners", "http://:8083").split(",")[0].strip()
    scheme, _, address = listener.partition("://")
    host, _, port = address.rpartition(":")
    return f"{scheme}://{host or '127.0.0.1'}:{port}"


def ready(url: str) -> bool:
    """True once the worker says it is ready (``GET /health``, KIP-1017: 200 once it has joined
    its group and read its topics); before Kafka 3.9, which lacks it, once it lists connectors."""
    for path in ("/health", "/connectors"):
        try:
            with urllib.request.urlopen(url + path, timeout=5) as answer:
                return bool(answer.status == 200)
        except urllib.error.HTTPError as e:
            if e.code != 404:
                return False
        except OSError:
            return False
    return False


@dataclass
class LocalConnect:
    """One distributed Connect worker started from ``properties`` (relative to the checkout),
    with its log and pid file in ``folder``; it runs on after the command that started it."""

    folder: Path
    properties: Path = WORKER_PROPERTIES
    heap: Sequence[str] = MODEST_HEAP

    @property
    def pid_file(self) -> Path:
        return self.folder / "connect.pid"

    @property
    def url(self) -> str:
        return rest_url(parse_properties((project_home() / self.properties).read_text()))

    def running_pid(self) -> int | None:
        """The pid of a worker started earlier from this folder, if it still runs."""
        return running_pid(self.pid_file)

    def start(self, timeout: float = 120.0) -> None:
        """Starts the worker, unless one from this folder runs, and waits until it is ready;
        a worker that exits first is reported with its log's tail."""
        self.folder.mkdir(parents=True, exist_ok=True)
        log = self.folder / "connect.log"
        proc = None
        if self.running_pid() is None:
            command = java_command("distributed", project_home() / self.properties, self.heap)
            with log.open("ab") as out:
                proc = subprocess.Popen(
                    command,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                )
            self.pid_file.write_text(str(proc.pid))
        deadline = time.monotonic() + timeout
        while not ready(self.url):
            if proc is not None and proc.poll() is not None:
                self.pid_file.unlink(missing_ok=True)
                raise RuntimeError(f"Kafka Connect exited with {proc.returncode}:\n{_tail(log)}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(
                    f"Kafka Connect was not ready at {self.url} in {timeout:.0f}s (is the broker"
                    f" its worker file names up? make kafka-up starts the embedded one); it was "
                    f"stopped. The end of {log}:\n{_tail(log)}"
                )
            time.sleep(0.25)

    def stop(self, timeout: float = 60.0) -> None:
        """Stops the worker (SIGTERM: it leaves its group), by force if it does not go in
        time."""
        pid = self.running_pid()
        if pid is None:
            return
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while _alive(pid):
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                break
            time.sleep(0.1)
        self.pid_file.unlink(missing_ok=True)


def _tail(log: Path, lines: int = 20) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])


def _alive(pid: int) -> bool:
    """True while ``pid`` runs and is not a zombie left for its parent to reap."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rpartition(")")[2].split()[0] != "Z"
    except FileNotFoundError:
        return False
