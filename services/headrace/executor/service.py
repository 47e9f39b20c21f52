"""The executor's gRPC edge: protobuf in, domain types to the writer, protobuf and status codes out.

A synchronous ``grpc.server`` on a thread pool, because every Spark call blocks. Status codes:

- INVALID_ARGUMENT: the request is wrong (the message names the field); nothing was written.
- RESOURCE_EXHAUSTED: too much in flight; trailing metadata ``retry-after-ms`` says when to retry.
- INTERNAL: Spark or the filesystem failed; the batch may be retried as is (writes are idempotent).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, TypeVar

import grpc
from pyspark.sql import SparkSession

from headrace.core.arrowipc import ipc_stream
from headrace.core.observability import log
from headrace.core.rpc import GO_AHEAD, MAX_MESSAGE_BYTES, RETRY_AFTER_KEY
from headrace.executor import metrics, reading
from headrace.executor.admission import Busy, Limits
from headrace.executor.batches import (
    InvalidRequest,
    check_format,
    check_path,
    decode_arrow,
)
from headrace.executor.sql import SqlRunner
from headrace.executor.writepath import WritePath, WriteRequest
from headrace.sdk.paths import Paths
from headrace.v1 import coordinator_pb2, executor_pb2, executor_pb2_grpc

# Java stack traces run to pages; a status message only needs their head.
_MAX_DETAIL_CHARS = 2000
_JAVA_OOM = "java.lang.OutOfMemoryError"
_Answer = TypeVar("_Answer")


class ExecutorService(executor_pb2_grpc.ExecutorServicer):
    """Serves the Executor service's calls against one SparkSession."""

    def __init__(
        self, spark: SparkSession, limits: Limits, roots: Paths, retry_after_ms: int = 250
    ) -> None:
        self._spark = spark
        self._roots = roots  # the only folders a request may name
        self._sql = SqlRunner(spark)
        self._path = WritePath(spark, limits, roots, self._sql.prepare)
        self._limits = limits
        # The threads that read streams' pieces (see Pieces): as many as calls may be served.
        self._pulls = ThreadPoolExecutor(
            max_workers=limits.threads, thread_name_prefix="executor-pull"
        )
        self._admission = self._path.admission  # one bound for writes and queries alike
        metrics.watch_in_flight(lambda: self._admission.in_flight)
        self._retry_after_ms = retry_after_ms
        # Bound here, not at import, so it picks up the logging set up by the entry point.
        self._log = log.get("headrace.executor.service")

    @property
    def spark(self) -> SparkSession:
        return self._spark

    def close(self) -> None:
        """Lets go of the threads that read streams, once the server has stopped."""
        self._pulls.shutdown(wait=False, cancel_futures=True)

    def WriteBatch(
        self, request: executor_pb2.WriteBatchRequest, context: grpc.ServicerContext
    ) -> executor_pb2.WriteBatchResponse:
        """Validates and writes one batch, skipping rows an earlier try already committed."""
        return self._write(request, context, len(request.arrow_ipc), lambda: request.arrow_ipc)

    def WriteStream(
        self, chunks: Iterator[executor_pb2.WriteChunk], context: grpc.ServicerContext
    ) -> executor_pb2.WriteBatchResponse:
        """:meth:`WriteBatch` for a batch sent as a header, then its Arrow IPC stream in pieces.
        The batch is admitted on its header's ``stream_bytes``, before its pieces are read; one
        turned away as busy has its pieces read and dropped before the answer, so that the
        client, still writing them, gets that answer whole (see ``headrace.core.rpc``)."""
        context.send_initial_metadata(GO_AHEAD)  # the go-ahead: the caller passed the role check
        pieces = Pieces(chunks, self._limits.idle_s, self._pulls)
        try:
            first = pieces.next()
        except Stalled as exc:
            context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, str(exc))
            raise AssertionError("unreachable: context.abort raises") from None
        if first is None or first.WhichOneof("part") != "header":
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "header: the first chunk must be it")
            raise AssertionError("unreachable: context.abort raises")
        header = first.header
        if header.arrow_ipc:
            context.abort(
                grpc.StatusCode.INVALID_ARGUMENT,
                "header: carries no rows; send them in the chunks after it",
            )
        declared = header.stream_bytes
        if not 0 < declared <= self._limits.largest_batch:
            context.abort(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"stream_bytes: {declared} is not from 1 to {self._limits.largest_batch}, the "
                "most this executor admits of one batch",
            )
        return self._write(
            header,
            context,
            declared,
            lambda: _collect(pieces, declared),
            drain=lambda: pieces.drop(declared),
        )

    def _write(
        self,
        request: executor_pb2.WriteBatchRequest,
        context: grpc.ServicerContext,
        size: int,
        read: Callable[[], bytes],
        drain: Callable[[], None] = lambda: None,
    ) -> executor_pb2.WriteBatchResponse:
        """Writes the batch ``read`` gives; ``drain`` reads what is left of a refused one."""
        where = _where(request)
        job, connector = metrics.job_of(request.format), metrics.connector_label(request.connector)
        started = time.monotonic()
        try:
            result = self._path.write(_from_proto(request), size, read)
            seconds = time.monotonic() - started
            metrics.done(job, connector, size, result.rows_written, result.rows_skipped, seconds)
            self._log.info(
                "batch_written",
                rows_written=result.rows_written,
                rows_skipped=result.rows_skipped,
                ms=round(seconds * 1000),
                **where,
            )
            return executor_pb2.WriteBatchResponse(
                rows_written=result.rows_written, rows_skipped=result.rows_skipped
            )
        except Busy as exc:
            self._log.info("batch_throttled", reason=str(exc), **where)
            drain()
            self._abort_busy(context, str(exc), job, connector)
        except Stalled as exc:
            self._log.warning("batch_stream_stalled", reason=str(exc), **where)
            self._abort(context, grpc.StatusCode.DEADLINE_EXCEEDED, str(exc), job, connector)
        except InvalidRequest as exc:
            self._log.warning("batch_rejected", field=exc.field, reason=exc.reason, **where)
            self._abort(context, grpc.StatusCode.INVALID_ARGUMENT, str(exc), job, connector)
        except ConnectionError as exc:
            # The target (a database) is down or unreachable: the caller retries later.
            self._log.warning("batch_target_unavailable", reason=str(exc), **where)
            self._abort(context, grpc.StatusCode.UNAVAILABLE, str(exc), job, connector)
        except MemoryError:
            self._log.exception("batch_out_of_memory", **where)
            why = "the executor ran out of memory holding this batch"
            self._abort_busy(context, why, job, connector)
        except Exception as exc:  # noqa: BLE001 - the RPC edge: logged, and sent back as INTERNAL
            if _JAVA_OOM in str(exc):
                # The driver heap is full: say so loudly, and let the caller back off and retry.
                self._log.exception("batch_out_of_memory", **where)
                why = "the Spark driver ran out of heap writing this batch"
                self._abort_busy(context, why, job, connector)
            self._log.exception("batch_failed", **where)
            detail = _detail("write failed", exc)
            self._abort(context, grpc.StatusCode.INTERNAL, detail, job, connector)
        raise AssertionError("unreachable: context.abort raises")

    def CountRows(
        self, request: executor_pb2.CountRowsRequest, context: grpc.ServicerContext
    ) -> executor_pb2.CountRowsResponse:
        """Counts the committed rows under a dataset root."""

        def count() -> executor_pb2.CountRowsResponse:
            fmt, path = check_format(request.format), check_path(request.path, self._roots)
            return executor_pb2.CountRowsResponse(rows=reading.count(self._spark, fmt, path))

        return self._answered(context, count, "count_failed", path=request.path)

    def ReadRows(
        self, request: executor_pb2.ReadRowsRequest, context: grpc.ServicerContext
    ) -> executor_pb2.ReadRowsResponse:
        """Up to ``limit`` rows of a dataset or table, as an Arrow IPC stream."""

        def read() -> executor_pb2.ReadRowsResponse:
            fmt, path = check_format(request.format), check_path(request.path, self._roots)
            if request.limit < 0:
                raise InvalidRequest("limit", f"{request.limit} is negative")
            limit = request.limit or reading.DEFAULT_LIMIT
            table, truncated = reading.rows(self._spark, fmt, path, limit)
            data = ipc_stream(table)
            if len(data) > MAX_MESSAGE_BYTES - 1024:
                raise InvalidRequest(
                    "limit", f"{limit} rows take {len(data)} bytes, more than one answer holds"
                )
            return executor_pb2.ReadRowsResponse(arrow_ipc=data, truncated=truncated)

        return self._answered(context, read, "read_failed", path=request.path)

    def Query(
        self, request: executor_pb2.QueryRequest, context: grpc.ServicerContext
    ) -> executor_pb2.QueryResponse:
        """Runs a query over one batch and sends its result back."""
        job, size = metrics.QUERY_JOB, len(request.arrow_ipc)
        connector = metrics.connector_label(request.connector)
        started = time.monotonic()
        try:
            with self._admission.admit(size):
                result = self._sql.run(decode_arrow(request.arrow_ipc), request.sql, "sql")
            data = ipc_stream(result)
            if len(data) > MAX_MESSAGE_BYTES - 1024:
                raise InvalidRequest("sql", f"its result takes {len(data)} bytes, too many to send")
            metrics.done(job, connector, size, result.num_rows, 0, time.monotonic() - started)
            return executor_pb2.QueryResponse(arrow_ipc=data)
        except Busy as exc:
            self._abort_busy(context, str(exc), job, connector)
        except InvalidRequest as exc:
            self._abort(context, grpc.StatusCode.INVALID_ARGUMENT, str(exc), job, connector)
        except Exception as exc:  # noqa: BLE001 - the RPC edge: logged, and sent back as INTERNAL
            self._log.exception("query_failed", connector=connector)
            detail = _detail("query failed", exc)
            self._abort(context, grpc.StatusCode.INTERNAL, detail, job, connector)
        raise AssertionError("unreachable: context.abort raises")

    def CheckSql(
        self, request: executor_pb2.CheckSqlRequest, context: grpc.ServicerContext
    ) -> executor_pb2.CheckSqlResponse:
        """Parses a query without running it: OK, or INVALID_ARGUMENT with Spark's reason.
        Not admitted as a batch: it carries none, and a parse takes milliseconds."""

        def parse() -> executor_pb2.CheckSqlResponse:
            self._sql.check(request.sql)
            return executor_pb2.CheckSqlResponse()

        return self._answered(context, parse, "sql_check_failed")

    def SetLogLevels(
        self, request: coordinator_pb2.LogLevels, context: grpc.ServicerContext
    ) -> executor_pb2.SetLogLevelsResponse:
        """KIP-976: the cluster's levels set after this executor started, each once, in its
        Python loggers and in Spark's (log4j, by logger namespace, as Connect names them)."""

        def apply() -> executor_pb2.SetLogLevelsResponse:
            levels = {name: (v.level, v.at_ms) for name, v in request.levels.items()}
            changed = log.cluster_levels.apply(levels)
            if self._spark is not None:
                for name in changed:
                    set_jvm_level(self._spark, name, log.cluster_levels.applied[name][0])
            return executor_pb2.SetLogLevelsResponse(changed=changed)

        return self._answered(context, apply, "log_levels_failed")

    def _answered(
        self, context: grpc.ServicerContext, call: Callable[[], _Answer], failed: str, **where: str
    ) -> _Answer:
        """``call()``'s answer to a call that writes nothing, or the status saying why not:
        INVALID_ARGUMENT for a request it refused; INTERNAL, logged as the event ``failed``
        with ``where``, for anything else."""
        try:
            return call()
        except InvalidRequest as exc:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        except Exception as exc:  # noqa: BLE001 - the RPC edge: logged, and sent back as INTERNAL
            self._log.exception(failed, **where)
            context.abort(grpc.StatusCode.INTERNAL, _detail(failed.replace("_", " "), exc))
        raise AssertionError("unreachable: context.abort raises")

    def _abort(
        self,
        context: grpc.ServicerContext,
        code: grpc.StatusCode,
        detail: str,
        job: str,
        connector: str,
    ) -> None:
        """Answers a batch with the error ``code``, counted as failed."""
        metrics.failed(job, connector, code.name)
        context.abort(code, detail)

    def _abort_busy(
        self, context: grpc.ServicerContext, why: str, job: str, connector: str
    ) -> None:
        metrics.refused(job, connector)
        context.set_trailing_metadata(((RETRY_AFTER_KEY, str(self._retry_after_ms)),))
        context.abort(
            grpc.StatusCode.RESOURCE_EXHAUSTED,
            f"executor busy ({why}); retry after {self._retry_after_ms} ms",
        )


def set_jvm_level(spark: SparkSession, name: str, level: str) -> None:
    """Sets a logger namespace (or ``root``) of Spark's JVM to a level."""
    jvm: Any = spark._jvm  # py4j's view of the JVM
    log4j = jvm.org.apache.logging.log4j
    value = log4j.Level.toLevel(log.log4j_name(level), None)  # not DEBUG for a name it lacks
    if value is None:
        return
    if name == "root":
        log4j.core.config.Configurator.setRootLevel(value)
    else:
        log4j.core.config.Configurator.setLevel(name, value)


class Stalled(Exception):
    """A stream's next piece did not come in time; the message says how long was waited."""


class Pieces:
    """A WriteStream's chunks, each awaited at most ``idle_s``: a blocked read runs on a thread
    of ``pulls``, so the call's own thread can give the stream up (and with it its admission)
    instead of waiting for a client that stalled; ending the call ends that read too."""

    def __init__(
        self, chunks: Iterator[executor_pb2.WriteChunk], idle_s: float, pulls: ThreadPoolExecutor
    ) -> None:
        self._chunks = chunks
        self._idle_s = idle_s
        self._pulls = pulls

    def next(self) -> executor_pb2.WriteChunk | None:
        """The next chunk; None at the end of the stream; Stalled when none came in time."""
        pulled = self._pulls.submit(next, self._chunks, None)
        try:
            return pulled.result(timeout=self._idle_s)
        except FutureTimeout:
            raise Stalled(f"no part of the stream came for {self._idle_s:g}s; given up") from None

    def __iter__(self) -> Iterator[executor_pb2.WriteChunk]:
        while (chunk := self.next()) is not None:
            yield chunk

    def drop(self, declared: int) -> None:
        """Reads and drops the rest of a stream that said it carries ``declared`` bytes, until
        it ends, sends more than that, or stalls."""
        received = 0
        try:
            for chunk in self:
                received += len(chunk.arrow_ipc)
                if received > declared:
                    return
        except Stalled:
            return


def _collect(chunks: Iterable[executor_pb2.WriteChunk], declared: int) -> bytes:
    """The Arrow IPC stream a WriteStream's chunks carry, exactly as long as its header said."""
    pieces, received = [], 0
    for chunk in chunks:
        if chunk.WhichOneof("part") != "arrow_ipc":
            raise InvalidRequest("header", "only the first chunk may be one")
        received += len(chunk.arrow_ipc)
        if received > declared:
            raise InvalidRequest("stream_bytes", f"{declared} declared, more sent")
        pieces.append(chunk.arrow_ipc)
    if received != declared:
        raise InvalidRequest("stream_bytes", f"{declared} declared, {received} sent")
    return b"".join(pieces)


def _from_proto(request: executor_pb2.WriteBatchRequest) -> WriteRequest:
    return WriteRequest(
        connector=request.connector,
        task=request.task,
        topic=request.topic,
        topic_id=request.topic_id,
        partition=request.partition,
        first_offset=request.first_offset,
        last_offset=request.last_offset,
        format=request.format,
        path=request.path,
        options=dict(request.options),
    )


def _where(request: executor_pb2.WriteBatchRequest) -> dict[str, object]:
    """The log fields saying which batch a line is about."""
    return {
        "connector": request.connector,
        "task": request.task,
        "topic": request.topic,
        "partition": request.partition,
        "first_offset": request.first_offset,
        "last_offset": request.last_offset,
    }


def _detail(what: str, exc: BaseException) -> str:
    return f"{what}: {type(exc).__name__}: {exc}"[:_MAX_DETAIL_CHARS]
