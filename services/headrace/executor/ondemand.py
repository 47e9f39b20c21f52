"""The Executor service whose SparkSession starts at the first call that needs one.

Spark's JVM holds half a gigabyte or more from its start, and a cluster whose connectors never
write through the executor (file, JDBC-free or Java pipelines) has no use for it. Started
``on-demand`` (the default, ``--spark-start``), the executor serves health and its calls at once
and starts Spark when the first call that needs it arrives: a write, a query, a read or a count,
or a sql check. That call and any arriving meanwhile wait for the one start; a sql check that
cannot wait so long is left unchecked by its caller, as for an executor that is down, and its
query is checked by its first batch. A start that fails is answered UNAVAILABLE with the reason,
and the next call tries again. The cluster's log levels (``SetLogLevels``) need no Spark: they
are applied to the executor's own loggers at once, and to Spark's when it starts.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import grpc

from headrace.core.observability import log
from headrace.v1 import coordinator_pb2, executor_pb2, executor_pb2_grpc

if TYPE_CHECKING:
    from headrace.executor.service import ExecutorService


class OnDemand(executor_pb2_grpc.ExecutorServicer):
    """Serves the Executor calls through the service ``start`` makes, made at the first call
    that needs it (``start`` blocks until Spark is usable)."""

    def __init__(self, start: Callable[[], ExecutorService]) -> None:
        self._start = start
        self._lock = threading.Lock()
        self._service: ExecutorService | None = None
        self._log = log.get("headrace.executor.ondemand")

    @property
    def started(self) -> ExecutorService | None:
        return self._service

    def _serving(self, context: grpc.ServicerContext, call: str) -> ExecutorService:
        """The started service; the first caller starts it, the others wait for that start."""
        with self._lock:
            if self._service is None:
                self._log.info("spark_wanted", call=call)
                try:
                    self._service = self._start()
                except Exception as exc:  # noqa: BLE001 - answered; the next call tries again
                    self._log.exception("spark_start_failed", call=call)
                    context.abort(grpc.StatusCode.UNAVAILABLE, f"Spark did not start: {exc}")
            assert self._service is not None
            return self._service

    def WriteBatch(
        self, request: executor_pb2.WriteBatchRequest, context: grpc.ServicerContext
    ) -> executor_pb2.WriteBatchResponse:
        return self._serving(context, "WriteBatch").WriteBatch(request, context)

    def WriteStream(
        self, chunks: Iterator[executor_pb2.WriteChunk], context: grpc.ServicerContext
    ) -> executor_pb2.WriteBatchResponse:
        return self._serving(context, "WriteStream").WriteStream(chunks, context)

    def CountRows(
        self, request: executor_pb2.CountRowsRequest, context: grpc.ServicerContext
    ) -> executor_pb2.CountRowsResponse:
        return self._serving(context, "CountRows").CountRows(request, context)

    def ReadRows(
        self, request: executor_pb2.ReadRowsRequest, context: grpc.ServicerContext
    ) -> executor_pb2.ReadRowsResponse:
        return self._serving(context, "ReadRows").ReadRows(request, context)

    def Query(
        self, request: executor_pb2.QueryRequest, context: grpc.ServicerContext
    ) -> executor_pb2.QueryResponse:
        return self._serving(context, "Query").Query(request, context)

    def CheckSql(
        self, request: executor_pb2.CheckSqlRequest, context: grpc.ServicerContext
    ) -> executor_pb2.CheckSqlResponse:
        return self._serving(context, "CheckSql").CheckSql(request, context)

    def SetLogLevels(
        self, request: coordinator_pb2.LogLevels, context: grpc.ServicerContext
    ) -> executor_pb2.SetLogLevelsResponse:
        started = self._service
        if started is not None:
            return started.SetLogLevels(request, context)
        levels = {name: (v.level, v.at_ms) for name, v in request.levels.items()}
        return executor_pb2.SetLogLevelsResponse(changed=log.cluster_levels.apply(levels))
