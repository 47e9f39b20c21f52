"""Prometheus metrics (prometheus-client): what every service shares of them, and the task
metrics the plugin processes keep.

Each service process serves ``/metrics`` over HTTP on ``--metrics-addr`` (default
``HEADRACE_METRICS_ADDR``; host:port, port 0 picks a free one; empty or unset serves none) and
logs ``metrics_serving`` with the address it bound. The address is per process, so it is not a
:class:`~headrace.core.settings.Settings` field: a setting is handed on to child processes, and
two processes cannot bind one port.

Every name starts ``headrace_``. The ones defined here, first those of every service:

| name | type | labels | what |
| --- | --- | --- | --- |
| ``headrace_startup_seconds`` | gauge | service | from the service's start to its first readiness |
| ``headrace_replay_seconds`` | gauge | log | how long the last replay of a topic took |

then the task metrics, each labelled ``connector`` and ``task``:

| name | type | what |
| --- | --- | --- |
| ``headrace_source_records_polled_total`` | counter | records ``poll`` returned |
| ``headrace_source_records_produced_total`` | counter | records written to Kafka |
| ``headrace_source_batch_records`` | histogram | records per poll (that returned any) |
| ``headrace_source_batch_seconds`` | histogram | from a poll's return to its records written |
| ``headrace_sink_records_consumed_total`` | counter | records fetched for the task |
| ``headrace_sink_records_put_total`` | counter | records handed to ``put`` or ``put_batch`` |
| ``headrace_sink_batch_records`` | histogram | records per fetch |
| ``headrace_sink_batch_seconds`` | histogram | from a fetch's return to ``put`` returned |
| ``headrace_sink_consumer_lag`` | gauge | records behind its partitions' ends |
| ``headrace_task_records_skipped_total`` | counter | bad records skipped (``errors.tolerance``) |

The task metrics are kept in plugin processes, and served by their worker: the worker names a
folder in ``PROMETHEUS_MULTIPROC_DIR`` before it starts them, so prometheus-client's
multiprocess mode writes each process's values to files there, which the worker's ``/metrics``
merges (``headrace.worker.metrics``). They are labelled only: an unlabelled metric defined at
import would put a series of its own in every plugin process's files. Task metrics change once
per batch, never per record.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Iterator
from dataclasses import dataclass
from wsgiref.simple_server import WSGIServer

from prometheus_client import REGISTRY, Counter, Gauge, Histogram, start_http_server
from prometheus_client.multiprocess import mark_process_dead
from prometheus_client.registry import Collector

from headrace.core.observability import log
from headrace.core.rpc import split_address

ADDRESS_ENV = "HEADRACE_METRICS_ADDR"
MULTIPROCESS_ENV = "PROMETHEUS_MULTIPROC_DIR"
"""Where prometheus-client's multiprocess mode writes; read once, when the library is imported."""

TASK = ("connector", "task")
BATCH_RECORDS = (1, 10, 100, 500, 1_000, 5_000, 10_000, 50_000, 100_000)
BATCH_SECONDS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)

STARTUP_SECONDS = Gauge(
    "headrace_startup_seconds",
    "Seconds from the service's start until it was first ready (its health SERVING).",
    ["service"],
)
REPLAY_SECONDS = Gauge(
    "headrace_replay_seconds",
    "Seconds the service's last replay of a topic took (configs, status, assignments): "
    "reading it from its start to its end before acting on it.",
    ["log"],
)

SOURCE_POLLED = Counter(
    "headrace_source_records_polled", "Records a source task's poll returned.", TASK
)
SOURCE_PRODUCED = Counter(
    "headrace_source_records_produced", "Records a source task wrote to Kafka.", TASK
)
SOURCE_BATCH_RECORDS = Histogram(
    "headrace_source_batch_records",
    "Records per poll that returned any.",
    TASK,
    buckets=BATCH_RECORDS,
)
SOURCE_BATCH_SECONDS = Histogram(
    "headrace_source_batch_seconds",
    "Seconds from a poll returning a batch until its records were written to Kafka (and "
    "committed, when their transaction ends there).",
    TASK,
    buckets=BATCH_SECONDS,
)
SINK_CONSUMED = Counter(
    "headrace_sink_records_consumed",
    "Records a sink task consumed from Kafka (a fetch a rebalance made stale is not counted).",
    TASK,
)
SINK_PUT = Counter(
    "headrace_sink_records_put", "Records handed to a sink task's put or put_batch.", TASK
)
SINK_BATCH_RECORDS = Histogram(
    "headrace_sink_batch_records",
    "Records per fetch handed to a sink task.",
    TASK,
    buckets=BATCH_RECORDS,
)
SINK_BATCH_SECONDS = Histogram(
    "headrace_sink_batch_seconds",
    "Seconds from a fetch returning until the sink task's put returned.",
    TASK,
    buckets=BATCH_SECONDS,
)
SINK_LAG = Gauge(
    "headrace_sink_consumer_lag",
    "Records a sink task is behind on its partitions, as of its last fetch: their last stable "
    "offsets less its consumer's positions, summed; 0 once it stopped in this process.",
    TASK,
    # Summed over the worker's live plugin processes: one task runs in one of them at a time,
    # and a process that is gone takes its values with it (mark_process_dead).
    multiprocess_mode="livesum",
)
TASK_SKIPPED = Counter(
    "headrace_task_records_skipped",
    "Records a task skipped under errors.tolerance=all.",
    TASK,
)


class SourceTaskMetrics:
    """One source task's series, looked up once."""

    def __init__(self, connector: str, task: int) -> None:
        labels = (connector, str(task))
        self._polled = SOURCE_POLLED.labels(*labels)
        self._produced = SOURCE_PRODUCED.labels(*labels)
        self._records = SOURCE_BATCH_RECORDS.labels(*labels)
        self._seconds = SOURCE_BATCH_SECONDS.labels(*labels)
        self._skipped = TASK_SKIPPED.labels(*labels)

    def batch(self, polled: int, produced: int, skipped: int, seconds: float) -> None:
        """A poll that returned ``polled`` records, written in ``seconds``."""
        self._polled.inc(polled)
        self._produced.inc(produced)
        self._records.observe(polled)
        self._seconds.observe(seconds)
        if skipped:
            self._skipped.inc(skipped)


class SinkTaskMetrics:
    """One sink task's series, looked up once."""

    def __init__(self, connector: str, task: int) -> None:
        labels = (connector, str(task))
        self._consumed = SINK_CONSUMED.labels(*labels)
        self._put = SINK_PUT.labels(*labels)
        self._records = SINK_BATCH_RECORDS.labels(*labels)
        self._seconds = SINK_BATCH_SECONDS.labels(*labels)
        self._skipped = TASK_SKIPPED.labels(*labels)
        self.lag = SINK_LAG.labels(*labels)

    def batch(self, consumed: int, put: int, skipped: int, seconds: float) -> None:
        """A fetch of ``consumed`` records, ``put`` of them handed over in ``seconds``."""
        self._consumed.inc(consumed)
        self._put.inc(put)
        self._records.observe(consumed)
        self._seconds.observe(seconds)
        if skipped:
            self._skipped.inc(skipped)


class Startup:
    """A service's start, and ``headrace_startup_seconds`` set when it is first ready (a
    coordinator replica may be ready, lose the lead, and be ready again: only its first counts)."""

    def __init__(self, service: str) -> None:
        self._gauge = STARTUP_SECONDS.labels(service)
        self._began = time.monotonic()
        self._done = False

    def ready(self) -> None:
        if not self._done:
            self._done = True
            self._gauge.set(time.monotonic() - self._began)


@contextlib.contextmanager
def replay(log_role: str) -> Iterator[None]:
    """Times the replay of a topic (``configs``, ``status``, ``assignments``) in the block, and
    sets ``headrace_replay_seconds`` once it has finished; a replay cut short sets nothing."""
    began = time.monotonic()
    yield
    REPLAY_SECONDS.labels(log_role).set(time.monotonic() - began)


def add_flag(parser: argparse.ArgumentParser) -> None:
    """``--metrics-addr``, defaulting to ``HEADRACE_METRICS_ADDR``."""
    parser.add_argument(
        "--metrics-addr",
        default=os.environ.get(ADDRESS_ENV, ""),
        help="host:port to serve Prometheus metrics on, at /metrics (port 0 picks a free one; "
        f"empty: none). Default: ${ADDRESS_ENV}",
    )


@dataclass(frozen=True)
class MetricsServer:
    """The HTTP server of ``/metrics``, on a thread of its own."""

    address: str  # as bound: the port is never 0
    httpd: WSGIServer
    thread: threading.Thread

    def close(self) -> None:
        """Stops serving; blocks for up to half a second (the server's poll interval)."""
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()


def serve(address: str, registry: Collector = REGISTRY) -> MetricsServer | None:
    """Serves ``registry`` at ``http://<address>/metrics`` and logs ``metrics_serving`` with the
    address bound; None when ``address`` is empty."""
    if not address:
        return None
    host, port = split_address(address)
    httpd, thread = start_http_server(port, host, registry)
    bound = f"[{host}]:{httpd.server_port}" if ":" in host else f"{host}:{httpd.server_port}"
    log.get().info("metrics_serving", address=bound)
    return MetricsServer(bound, httpd, thread)


@contextlib.asynccontextmanager
async def serving(address: str, registry: Collector = REGISTRY) -> AsyncIterator[None]:
    """:func:`serve` for the length of the block, for a service on asyncio."""
    server = serve(address, registry)
    try:
        yield
    finally:
        if server is not None:
            await asyncio.to_thread(server.close)


async def exposed(address: str, work: Awaitable[None]) -> None:
    """Awaits a service's ``work`` with the default registry served on ``address`` meanwhile."""
    async with serving(address):
        await work


def process_exiting() -> None:
    """Drops this process's live gauges from the multiprocess folder, if it writes to one: a
    plugin process on its way out (its counters stay, so totals never go back)."""
    folder = os.environ.get(MULTIPROCESS_ENV)
    if folder:
        mark_process_dead(os.getpid(), folder)
