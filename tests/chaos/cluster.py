"""The stack under the nemesis: a broker, PostgreSQL, the executor, the config service, two
coordinators and three workers, every one a real process, and the proxies the services reach
the broker and the executor through.

The broker listens on a port of its own and tells clients to find it at its proxy's; the
executor listens on its own port while the services are told the proxy's. Each process can be
killed, stopped with SIGTERM, frozen and thawed by name, and started again; the plugin processes
are found as the workers' (and the config service's) children when a fault comes.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import psutil

from headrace.core.settings import BUILTIN_PLUGINS
from headrace.local.kafka import EmbeddedKafka, free_port
from headrace.local.stack import Stack
from tests.chaos.history import History, Repeating
from tests.chaos.proxy import Proxy
from tests.postgres import Postgres, start_postgres
from tests.support import local_settings

TEST_PLUGINS = Path(__file__).parents[1] / "plugins"
# A worker's session: short, so that a frozen worker is given up on within a fault's hold.
COORDINATOR_ARGS = ("--session-timeout", "6", "--grace-period", "2", "--lease-timeout", "1.5")
WORKERS = 3
STARTUP_S = 180.0
# Longer than any transaction can be open on this broker (the producers' timeout is 60 s): one
# open this long was left hanging by the broker, not by its producer.
HANGING_AFTER_MIN = 1
ENDED_MEANWHILE = "Could not find any open transactions"  # the tool's answer to such an abort


@dataclass(frozen=True)
class Hanging:
    """A transaction left open on a partition, as ``kafka-transactions.sh find-hanging`` lists
    it: the coordinator has ended it, but no marker reached the partition."""

    topic: str
    partition: int
    producer_id: int
    start_offset: int


def hanging(listed: str) -> list[Hanging]:
    """The transactions in find-hanging's table (a header line, then one row per partition)."""
    rows = [line.split() for line in listed.splitlines()[1:] if line.strip()]
    return [Hanging(row[0], int(row[1]), int(row[2]), int(row[5])) for row in rows]


@dataclass
class Cluster:
    folder: Path
    broker: EmbeddedKafka = field(init=False)
    postgres: Postgres = field(init=False)
    proxies: dict[str, Proxy] = field(init=False, default_factory=dict)
    spark: Stack = field(init=False)
    stack: Stack = field(init=False)
    frozen: set[int] = field(init=False, default_factory=set)
    _pg_data: Path = field(init=False)
    _lock: threading.Lock = field(init=False, default_factory=threading.Lock)

    @property
    def outputs(self) -> Path:
        return self.folder / "out"

    def start(self) -> None:
        self.outputs.mkdir(parents=True, exist_ok=True)
        broker_port, executor_port = free_port(), free_port()
        self.proxies["broker-link"] = Proxy("broker-link", free_port(), ("127.0.0.1", broker_port))
        self.proxies["executor-link"] = Proxy(
            "executor-link", free_port(), ("127.0.0.1", executor_port)
        )
        for proxy in self.proxies.values():
            proxy.start()
        self.broker = EmbeddedKafka(
            self.folder / "kafka",
            port=broker_port,
            advertised_port=self.proxies["broker-link"].listen_port,
        )
        self.broker.start()
        # Outside the run's folder: the server runs as a user of its own, which must reach it.
        self._pg_data = Path(tempfile.mkdtemp(prefix="headrace-postgres-"))
        self.postgres = start_postgres(self._pg_data)
        settings = local_settings(
            self.proxies["broker-link"].address,
            "chaos",
            self.folder / "stack",
            (BUILTIN_PLUGINS, TEST_PLUGINS),
            coordinators=2,
            plugin_call_timeout_s=30.0,
        )
        settings = replace(settings, spark_master="local[2]", file_roots=(self.outputs,))
        self.spark = Stack(
            replace(
                settings,
                executor_addr=f"127.0.0.1:{executor_port}",
                var_dir=self.folder / "executor",
            )
        )
        self.stack = Stack(
            replace(settings, executor_addr=self.proxies["executor-link"].address),
            extra_args={"coordinator": COORDINATOR_ARGS, "coordinator-2": COORDINATOR_ARGS},
            external=frozenset({"executor"}),
            workers=WORKERS,
        )
        self.spark.start("executor", timeout=STARTUP_S)
        self.stack.up()

    def stop(self) -> None:
        self.thaw_all()
        for step in (self.stack.down, lambda: self.spark.stop("executor")):
            with contextlib.suppress(Exception):
                step()
        with contextlib.suppress(Exception):
            self.broker.stop()
        with contextlib.suppress(Exception):
            self.postgres.stop()
        with contextlib.suppress(AttributeError):  # a start that failed before it was made
            shutil.rmtree(self._pg_data, ignore_errors=True)
        for proxy in self.proxies.values():
            with contextlib.suppress(Exception):
                proxy.stop()

    # The processes by name ------------------------------------------------------------------

    def _owner(self, name: str) -> Stack:
        return self.spark if name == "executor" else self.stack

    def pid(self, name: str) -> int | None:
        """The process running ``name``; None when there is none, or it has ended and waits
        to be reaped."""
        pid = self.broker.running_pid() if name == "broker" else self._owner(name).pid(name)
        with contextlib.suppress(psutil.Error):
            if pid is not None and psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return None
        return pid

    def services(self) -> list[str]:
        return [s.name for s in self.stack.specs() if s.name != "executor"] + ["executor"]

    def plugin_processes(self) -> list[int]:
        """The plugin processes alive now: the Python children of the workers and the config
        service (which validates in plugin processes of its own)."""
        found = []
        for name in self.services():
            pid = self.pid(name)
            if pid is None or name == "executor":
                continue
            with contextlib.suppress(psutil.Error):
                found += [
                    child.pid
                    for child in psutil.Process(pid).children()
                    if "headrace.runtime" in " ".join(child.cmdline())
                ]
        return found

    def send(self, pid: int, sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError):
            if sig == signal.SIGSTOP:
                with self._lock:
                    self.frozen.add(pid)
            os.kill(pid, sig)
            if sig in (signal.SIGCONT, signal.SIGKILL):
                with self._lock:
                    self.frozen.discard(pid)

    def thaw_all(self) -> None:
        with self._lock:
            frozen, self.frozen = set(self.frozen), set()
        for pid in frozen:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)

    def kill(self, name: str, sig: signal.Signals) -> int | None:
        """Signals a service (or the broker) to end; its pid, None if it was not running."""
        pid = self.pid(name)
        if pid is None:
            return None
        self.send(pid, signal.SIGCONT)  # a frozen process takes SIGTERM only once thawed
        self.send(pid, sig)
        return pid

    def abort_hanging(self, offsets_topic: str) -> list[Hanging]:
        """Aborts every hanging transaction on the broker, as an operator does with Kafka's own
        tool when a task says one holds its offsets back; the ones aborted.

        The offsets topic's partitions go last, as the task's error says: the task writes again
        once it can read its offsets, and a commit of its producer id commits whatever a
        transaction of that id still holds open on a partition (seed 307 wrote a record twice
        so, when the task restarted between two aborts)."""
        found = hanging(
            self.broker.transactions(
                "find-hanging",
                "--broker-id",
                "1",
                "--max-transaction-timeout",
                str(HANGING_AFTER_MIN),
            )
        )
        found.sort(key=lambda transaction: transaction.topic == offsets_topic)
        aborted = []
        for transaction in found:
            try:
                self.broker.transactions(
                    "abort",
                    "--topic",
                    transaction.topic,
                    "--partition",
                    str(transaction.partition),
                    "--start-offset",
                    str(transaction.start_offset),
                )
            except RuntimeError as error:
                if ENDED_MEANWHILE not in str(error):
                    raise
                continue  # ended since it was listed: nothing to abort there
            aborted.append(transaction)
        return aborted

    def restart(self, name: str) -> None:
        """Starts a service (or the broker) that a fault ended, once the old one is gone."""
        if name == "broker":
            self.broker.stop(timeout=60)
            self.broker.start(timeout=STARTUP_S)
            return
        owner = self._owner(name)
        owner.stop(name, timeout=60)  # reaps it, or ends what SIGTERM left behind
        owner.start(name, timeout=STARTUP_S)


class Deaths:
    """Watches every process the stack runs, and notes when each is seen gone: a unit's run in
    a plugin process that died ends there."""

    def __init__(self, cluster: Cluster, history: History, every_s: float = 0.1) -> None:
        self._cluster = cluster
        self._history = history
        self._known: dict[int, float] = {}  # pid -> its create time
        self.gone: dict[int, int] = {}  # pid -> when it was seen gone (ms)
        self._watch = Repeating("deaths", self._look, lambda: every_s)

    def start(self) -> None:
        self._watch.start()

    def stop(self) -> None:
        self._watch.stop()

    def _look(self) -> None:
        for name in self._cluster.services():
            pid = self._cluster.pid(name)
            if pid is None:
                continue
            with contextlib.suppress(psutil.Error):
                for process in [psutil.Process(pid), *psutil.Process(pid).children(True)]:
                    self._known.setdefault(process.pid, process.create_time())
        now_ms = time.time_ns() // 1_000_000
        for pid, created in list(self._known.items()):
            if pid in self.gone:
                continue
            try:
                process = psutil.Process(pid)
                alive = process.create_time() == created and process.status() != "zombie"
            except psutil.Error:
                alive = False
            if not alive:
                self.gone[pid] = now_ms
                self._history.write("gone", pid=pid)
