"""The executor's metrics (besides ``headrace.core.observability.metrics``'s), served on its
``--metrics-addr``.

Each labelled ``job`` and ``connector``:

| name | type | what |
| --- | --- | --- |
| ``headrace_executor_batches_total`` | counter | batches done (written, or queried) |
| ``headrace_executor_rows_written_total`` | counter | rows written (a query's: returned) |
| ``headrace_executor_rows_skipped_total`` | counter | rows an earlier try already wrote |
| ``headrace_executor_bytes_total`` | counter | Arrow IPC bytes of the batches done |
| ``headrace_executor_batch_seconds`` | histogram | from a batch's arrival to its answer |
| ``headrace_executor_batches_refused_total`` | counter | batches turned away as busy |
| ``headrace_executor_batches_failed_total`` | counter | batches answered with an error ``code`` |

and without labels:

| name | type | what |
| --- | --- | --- |
| ``headrace_executor_in_flight_batches`` | gauge | batches admitted and not yet answered |
| ``headrace_executor_in_flight_bytes`` | gauge | their Arrow IPC bytes |

``job`` is what the batch asked for: its write's format (``parquet``, ``json``, ``csv``,
``delta``, ``jdbc``; a write with a query keeps its format), ``sql-query`` for a Query, or
``unknown`` for a format the executor does not write (so that bad requests cannot make series
without end). ``connector`` is the connector the caller names (empty when it names none).
``code`` is the gRPC status sent: ``INVALID_ARGUMENT``, ``UNAVAILABLE`` or ``INTERNAL``. A batch
streamed in chunks counts once, with all its bytes. Refused batches (RESOURCE_EXHAUSTED, with a
retry hint) are counted apart from failed ones: they are the executor's back-pressure at work,
and come back.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from prometheus_client import Counter, Gauge, Histogram

from headrace.core.observability.metrics import BATCH_SECONDS
from headrace.executor.options import FORMATS

QUERY_JOB = "sql-query"
UNKNOWN_JOB = "unknown"
JOB = ("job", "connector")

BATCHES = Counter("headrace_executor_batches", "Batches the executor wrote or queried.", JOB)
ROWS_WRITTEN = Counter(
    "headrace_executor_rows_written",
    "Rows the executor wrote (for a query: the rows of its result).",
    JOB,
)
ROWS_SKIPPED = Counter(
    "headrace_executor_rows_skipped",
    "Rows of a batch an earlier try of it had already written, and so were not written again.",
    JOB,
)
BYTES = Counter(
    "headrace_executor_bytes", "Arrow IPC bytes of the batches the executor wrote or queried.", JOB
)
BATCH_LATENCY = Histogram(
    "headrace_executor_batch_seconds",
    "Seconds from a batch's arrival at the executor until its answer (written, or queried).",
    JOB,
    buckets=BATCH_SECONDS,
)
REFUSED = Counter(
    "headrace_executor_batches_refused",
    "Batches turned away because too much was in flight (RESOURCE_EXHAUSTED, retried later).",
    JOB,
)
FAILED = Counter(
    "headrace_executor_batches_failed",
    "Batches answered with an error, by its gRPC status code.",
    (*JOB, "code"),
)
IN_FLIGHT_BATCHES = Gauge(
    "headrace_executor_in_flight_batches", "Batches admitted and not answered yet."
)
IN_FLIGHT_BYTES = Gauge(
    "headrace_executor_in_flight_bytes", "Arrow IPC bytes of the batches admitted and in flight."
)


MAX_CONNECTOR_LABELS = 500
"""Connectors the metrics are labelled by, at most: the label is what callers name, and a
time series per name would grow without end. Those past it share the label ``other``."""
OTHER_CONNECTOR = "other"


class LabelBudget:
    """Label values handed out as they come, up to ``limit``; after that, ``other``."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._given: set[str] = set()
        self._lock = threading.Lock()

    def label(self, value: str) -> str:
        with self._lock:
            if value in self._given:
                return value
            if len(self._given) >= self._limit:
                return OTHER_CONNECTOR
            self._given.add(value)
            return value


_CONNECTORS = LabelBudget(MAX_CONNECTOR_LABELS)


def connector_label(connector: str) -> str:
    """The ``connector`` label of a batch: its connector among the first
    :data:`MAX_CONNECTOR_LABELS` named, else ``other``."""
    return _CONNECTORS.label(connector)


def job_of(fmt: str) -> str:
    """The ``job`` label of a write in format ``fmt``."""
    return fmt if fmt in FORMATS else UNKNOWN_JOB


def watch_in_flight(in_flight: Callable[[], tuple[int, int]]) -> None:
    """Reads the in-flight gauges from ``in_flight`` (batches, bytes) at each scrape."""
    IN_FLIGHT_BATCHES.set_function(lambda: in_flight()[0])
    IN_FLIGHT_BYTES.set_function(lambda: in_flight()[1])


def done(job: str, connector: str, size: int, written: int, skipped: int, seconds: float) -> None:
    """A batch of ``size`` bytes answered after ``seconds``: ``written`` rows, ``skipped``."""
    labels = (job, connector)
    BATCHES.labels(*labels).inc()
    ROWS_WRITTEN.labels(*labels).inc(written)
    ROWS_SKIPPED.labels(*labels).inc(skipped)
    BYTES.labels(*labels).inc(size)
    BATCH_LATENCY.labels(*labels).observe(seconds)


def refused(job: str, connector: str) -> None:
    """A batch turned away as busy."""
    REFUSED.labels(job, connector).inc()


def failed(job: str, connector: str, code: str) -> None:
    """A batch answered with the error ``code``."""
    FAILED.labels(job, connector, code).inc()
