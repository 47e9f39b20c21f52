"""``python -m headrace.executor``: start the Spark executor and serve until SIGTERM or SIGINT.

Logs JSON lines to stderr; ``executor_ready`` (with the bound port) once it accepts calls. Spark
starts at the first call that needs it (``headrace.executor.ondemand``), or with the process
under ``--spark-start eager`` (``HEADRACE_SPARK_START``); ``spark_started`` says when. It
writes only under the folders in ``HEADRACE_FILE_ROOTS`` (``HEADRACE_VAR/files`` when unset).
Prometheus metrics on ``--metrics-addr`` (``headrace.core.observability.metrics``,
``headrace.executor.metrics``).
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
import time
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

from headrace.core.observability import log, metrics
from headrace.core.observability.health import ThreadedHealth, full_name
from headrace.core.rpc import split_address
from headrace.core.runner import alive
from headrace.core.security import secrets
from headrace.core.security.guard import security_or_exit
from headrace.core.settings import Settings, settings_or_exit
from headrace.executor.admission import Limits
from headrace.executor.ondemand import OnDemand
from headrace.executor.server import build_server
from headrace.executor.session import is_local
from headrace.sdk.paths import Paths
from headrace.v1 import executor_pb2

if TYPE_CHECKING:
    from headrace.executor.service import ExecutorService

# Long enough for a batch in flight to finish writing; a retry would be harmless anyway.
STOP_GRACE_S = 30.0
ON_DEMAND, EAGER = "on-demand", "eager"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, with defaults from :class:`Settings` (the environment)."""
    settings = settings_or_exit("python -m headrace.executor")
    host, port = split_address(settings.executor_addr)
    limits = Limits()
    parser = argparse.ArgumentParser(prog="python -m headrace.executor", description=__doc__)
    parser.add_argument("--host", default=host, help="address to listen on")
    parser.add_argument("--port", type=int, default=port, help="port (0 picks a free one)")
    parser.add_argument(
        "--master", default=settings.spark_master, help="Spark master, or sc://host:port"
    )
    parser.add_argument(
        "--max-in-flight", type=int, default=limits.max_batches, help="batches written at once"
    )
    parser.add_argument(
        "--max-bytes-in-flight", type=int, default=limits.max_bytes, help="their bytes at most"
    )
    parser.add_argument(
        "--stream-idle-s",
        type=float,
        default=limits.idle_s,
        help="seconds a streamed batch may go without its next piece before it is given up",
    )
    parser.add_argument(
        "--retry-after-ms", type=int, default=250, help="the retry hint sent when busy"
    )
    parser.add_argument(
        "--spark-start",
        choices=(ON_DEMAND, EAGER),
        default=os.environ.get("HEADRACE_SPARK_START", ON_DEMAND),
        help="start Spark at the first call that needs it (on-demand), or with the process",
    )
    parser.add_argument("--log-level", default="INFO")
    parser.add_argument(
        "--parent-pid", type=int, help="stop when this process is gone (even after a SIGKILL)"
    )
    metrics.add_flag(parser)
    args = parser.parse_args(argv)
    args.security = security_or_exit(parser, settings)
    return args


def main(argv: list[str] | None = None) -> int:
    """Runs the executor until a signal asks it to stop; the exit status."""
    args = parse_args(argv)
    secrets.keep_to_self()
    log.configure("executor", level=args.log_level)
    # PySpark logs every query error it raises, at ERROR; the executor answers a caller's bad
    # query with INVALID_ARGUMENT and Spark's reason, and logs the refusal itself.
    for noisy in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        logging.getLogger(noisy).setLevel(logging.CRITICAL)
    logger = log.get("headrace.executor")
    limits = Limits(
        max_batches=args.max_in_flight,
        max_bytes=args.max_bytes_in_flight,
        idle_s=args.stream_idle_s,
    )
    if is_local(args.master):
        # Spark looks up the host's address before reading its conf, and warns when the name
        # resolves to loopback; local mode never leaves loopback anyway.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    settings = Settings()
    roots = Paths(settings.file_roots)
    # Spark's catalog folder, which it would make in the working directory (a checkout, say).
    warehouse = settings.var_dir.resolve() / "spark-warehouse"

    def start() -> ExecutorService:
        return started_service(args, limits, roots, warehouse)

    servicer: ExecutorService | OnDemand
    if args.spark_start == EAGER:
        try:
            servicer = start()
        except Exception:
            # Typically no Java, a bad master URL, or an unreachable Spark Connect server.
            logger.exception("spark_start_failed", master=args.master)
            return 1
    else:
        servicer = OnDemand(start)
    try:
        server, port = build_server(servicer, args.host, args.port, limits, args.security)
        health = ThreadedHealth([full_name(executor_pb2, "Executor")])
        health.register(server)
    except RuntimeError:
        logger.exception("executor_bind_failed", host=args.host, port=args.port)
        stop_spark(servicer)
        return 1
    stopping = threading.Event()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        logger.info("executor_signal", signal=signal.Signals(signum).name)
        stopping.set()

    # Installed after the SparkSession, whose SparkContext puts in a SIGINT handler of its own.
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    exporter = metrics.serve(args.metrics_addr)
    server.start()
    health.ready()  # calls are taken (on demand, the first that needs Spark starts it)
    logger.info(
        "executor_ready",
        host=args.host,
        port=port,
        master=args.master,
        spark_start=args.spark_start,
        roots=[str(r) for r in roots.roots],
    )
    while not stopping.wait(1.0):
        if args.parent_pid and not alive(args.parent_pid):
            logger.info("executor_parent_gone", parent_pid=args.parent_pid)
            break
    health.shutting_down()
    server.stop(STOP_GRACE_S).wait()
    stop_spark(servicer)
    if exporter is not None:
        exporter.close()
    logger.info("executor_stopped")
    return 0


def started_service(
    args: argparse.Namespace, limits: Limits, roots: Paths, warehouse: Path | None = None
) -> ExecutorService:
    """Starts Spark and the service over it; blocks until Spark is usable."""
    # Imported here, with PySpark and pyarrow behind them: an idle executor started on demand
    # holds about half the memory it would with them loaded.
    from headrace.executor import sql
    from headrace.executor.service import ExecutorService, set_jvm_level
    from headrace.executor.session import create_session

    logger = log.get("headrace.executor")
    logger.info("spark_starting", master=args.master)
    began = time.monotonic()
    spark = create_session(args.master, warehouse=warehouse)
    # A session's first plan takes seconds (on Spark Connect, ten or more): made now, so
    # that the first config validated (CheckSql) is answered within its short bound.
    sql.check(spark, "SELECT 1")
    for name, (level, _) in log.cluster_levels.applied.items():  # set before Spark ran
        set_jvm_level(spark, name, level)
    logger.info("spark_started", master=args.master, seconds=round(time.monotonic() - began, 2))
    return ExecutorService(spark, limits, roots, retry_after_ms=args.retry_after_ms)


def stop_spark(servicer: ExecutorService | OnDemand) -> None:
    """Lets go of the service's threads and stops its Spark, if it started one."""
    service = servicer.started if isinstance(servicer, OnDemand) else servicer
    if service is not None:
        service.close()
        service.spark.stop()


if __name__ == "__main__":
    sys.exit(main())
