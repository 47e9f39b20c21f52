"""Spark as real processes for the suite: the executor service, and the Spark it can run on
beyond its own process (a standalone cluster's master and worker, a Spark Connect server), all
from PySpark's own distribution. Every process started here is stopped when its block ends."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import grpc
import psutil
import pyspark

from headrace.executor.session import DELTA_CONF, jar_folder, jars
from headrace.local.kafka import free_port
from headrace.local.stack import Stack
from headrace.v1 import executor_pb2, executor_pb2_grpc
from tests.support import wait_for

SPARK_HOME = Path(pyspark.__file__).parent
STARTUP_DEADLINE_S = 180.0
STOP_DEADLINE_S = 60.0
MAX_IN_FLIGHT = 2
"""Batches the suite's shared executor writes at once: low, so a test can flood it."""
STREAM_IDLE_S = 5.0
"""How long the suite's executor waits for a stream's next piece: short, so a test of a
stalled stream does not wait long, yet far above any gap an honest client leaves."""


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HEADRACE_", "SPARK_"))}
    # Loopback only: nothing here is for the network.
    return {**env, "SPARK_HOME": str(SPARK_HOME), "SPARK_LOCAL_IP": "127.0.0.1", **extra}


def _stop(proc: subprocess.Popen[bytes], log: Path) -> None:
    """Stops a process started in a group of its own, the children it forked with it."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=STOP_DEADLINE_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise AssertionError(f"{proc.args!r} ignored SIGTERM:\n{log.read_text()}") from None


@contextmanager
def _process(
    command: list[str], log: Path, env: dict[str, str]
) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("wb") as out:
        proc = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
    try:
        yield proc
    finally:
        _stop(proc, log)


def _alive(proc: subprocess.Popen[bytes], log: Path) -> None:
    if proc.poll() is not None:
        raise AssertionError(f"{proc.args!r} exited with {proc.returncode}:\n{log.read_text()}")


def wait_answering(proc: subprocess.Popen[bytes], address: str, log: Path) -> None:
    """Waits until a gRPC server in ``proc`` accepts connections at ``address``."""
    with grpc.insecure_channel(address) as channel:
        # One future for the whole wait: a future given up on keeps polling in a thread of its
        # own, and raised in a later test once the channel had closed.
        answered = grpc.channel_ready_future(channel)

        def ready() -> bool:
            _alive(proc, log)
            try:
                answered.result(timeout=1.0)
            except grpc.FutureTimeoutError:
                return False
            return True

        try:
            wait_for(f"{address} to answer (log: {log})", ready, STARTUP_DEADLINE_S)
        finally:
            answered.cancel()  # its polling thread must not outlive the channel


@contextmanager
def executor(
    folder: Path, roots: Path, master: str = "local[2]", args: tuple[str, ...] = ()
) -> Iterator[tuple[str, Path, subprocess.Popen[bytes]]]:
    """An executor process on ``master``: its address, its log and the process."""
    port = free_port()
    address, log = f"127.0.0.1:{port}", folder / "executor.log"
    command = [sys.executable, "-m", "headrace.executor", "--port", str(port), "--master", master]
    command += ["--spark-start", "eager"]  # a master it cannot reach fails the start, at once
    env = _env(HEADRACE_FILE_ROOTS=str(roots))
    with _process([*command, *args], log, env) as proc:
        wait_answering(proc, address, log)
        yield address, log, proc
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=STOP_DEADLINE_S)
        assert proc.returncode == 0, log.read_text()


def jvms_under(pid: int) -> list[int]:
    """The Java processes among ``pid``'s descendants."""
    return [
        child.pid
        for child in psutil.Process(pid).children(recursive=True)
        if child.name() == "java"
    ]


def start_spark_on_demand(stack: Stack) -> None:
    """Checks that the executor serves with no Spark until a call needs it, then has the first
    call start it: a sql check, which waits for Spark as long as the start takes."""
    pid = stack.pid("executor")
    assert pid is not None, "the executor is not running"
    assert jvms_under(pid) == [], "the executor started Spark before any call needed it"
    with grpc.insecure_channel(stack.settings.executor_addr) as channel:
        try:
            executor_pb2_grpc.ExecutorStub(channel).CheckSql(
                executor_pb2.CheckSqlRequest(sql="SELECT 1"), timeout=STARTUP_DEADLINE_S
            )
        except grpc.RpcError as error:
            # Spark's own reason (its JVM's stderr) is in the executor's log, not in the answer.
            run = stack.log_file("executor").read_bytes()[stack.log_offsets.get("executor", 0) :]
            tail = run.decode(errors="replace")[-6000:]
            raise AssertionError(
                f"Spark did not start: {error}\nthe executor's log:\n{tail}"
            ) from None
    assert jvms_under(pid), "a sql check did not start Spark"


def _master_state(web_port: int) -> dict[str, object] | None:
    """The master's state from its web UI; None until it answers with it. Its UI listens before
    every page is attached: for a moment ``/json/`` answers with the HTML of its main page."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{web_port}/json/", timeout=2) as answer:
            state: dict[str, object] = json.load(answer)
            return state
    except (OSError, json.JSONDecodeError):
        return None


@contextmanager
def standalone_cluster(folder: Path) -> Iterator[str]:
    """A Spark standalone master and one worker (one core, 1 GiB) on loopback: the master URL."""
    port, web = free_port(), free_port()
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    master = [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1"]
    master += ["--port", str(port), "--webui-port", str(web)]
    url = f"spark://127.0.0.1:{port}"
    worker = [spark_class, "org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1"]
    worker += ["--cores", "1", "--memory", "1g", "--webui-port", str(free_port())]
    worker += ["--work-dir", str(folder / "work")]
    daemons = _env(SPARK_DAEMON_MEMORY="256m")  # the master's and worker's own heaps: small
    with (
        _process(master, folder / "master.log", daemons) as master_proc,
        _process(worker, folder / "worker.log", daemons) as worker_proc,
    ):

        def registered() -> bool:
            _alive(master_proc, folder / "master.log")
            _alive(worker_proc, folder / "worker.log")
            state = _master_state(web)
            return bool(state and state.get("aliveworkers"))

        wait_for("a worker registered with the master", registered, STARTUP_DEADLINE_S)
        yield url


@contextmanager
def connect_server(folder: Path) -> Iterator[str]:
    """A Spark Connect server (local mode, with Delta and the JDBC driver): its sc:// URL."""
    port = free_port()
    command = [str(SPARK_HOME / "bin" / "spark-submit"), "--master", "local[1]"]
    command += ["--class", "org.apache.spark.sql.connect.service.SparkConnectServer"]
    command += ["--driver-memory", "512m"]
    command += ["--jars", ",".join(str(j) for j in jars(jar_folder()))]
    for key, value in {
        **DELTA_CONF,
        "spark.connect.grpc.binding.address": "127.0.0.1",
        "spark.connect.grpc.binding.port": str(port),
        "spark.ui.enabled": "false",
    }.items():
        command += ["--conf", f"{key}={value}"]
    log = folder / "connect.log"
    with _process(command, log, _env()) as proc:
        wait_answering(proc, f"127.0.0.1:{port}", log)
        yield f"sc://127.0.0.1:{port}"
