"""The Spark executor as its clients ask it: a sink task's writes and queries (through the
runtime's ``TaskExecutor``), and a connector's validation, which asks whether a query parses.
Plugins never import this module.

One call per batch, streamed in chunks (``WriteStream``): a header, then the batch's Arrow IPC
stream in pieces of :data:`CHUNK_BYTES`, so no message is large whatever the batch; the executor
admits the batch on the header's size before reading a piece. Calls the executor turns away as
busy (RESOURCE_EXHAUSTED) or that cannot reach it
(UNAVAILABLE) are retried until a deadline, honouring its ``retry-after-ms`` hint: writes are
idempotent, so a retry never writes a row twice.

A connector being validated gets a :class:`SqlCheck` as ``context.sql``: one short ``CheckSql``
call per query, synchronous as ``validate()`` is, and never retried.
"""

from __future__ import annotations

import asyncio
import os
import random
from collections.abc import Awaitable, Callable, Iterator, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any

import grpc

from headrace.core.arrowipc import ipc_stream, read_stream
from headrace.core.backoff import Backoff
from headrace.core.observability import log
from headrace.core.observability.health import full_name
from headrace.core.rpc import accepted, retry_after_s
from headrace.core.security import tls
from headrace.core.settings import Settings
from headrace.sdk.errors import RetriableError
from headrace.sdk.executor import KAFKA_OFFSET_COLUMN
from headrace.v1 import executor_pb2, executor_pb2_grpc

if TYPE_CHECKING:  # loaded where a table is written (headrace.sdk.columns)
    import pyarrow as pa

SERVICE = full_name(executor_pb2, "Executor")
"""The executor's API by its full name, as its health service answers for it."""
_RETRYABLE = (grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.UNAVAILABLE)
CHUNK_BYTES = 4 * 1024 * 1024
"""The Arrow bytes one WriteStream message carries at most."""
_FIRST_BACKOFF_S = 0.1
_MAX_BACKOFF_S = 5.0
_JITTER = 0.2
SQL_CHECK_TIMEOUT_S = 15.0
"""How long validating a config waits for the executor to parse its query, at most: long enough
for an executor that starts Spark on demand to start it, and never more than half of what the
plugin process's watchdog gives a call into plugin code (validation is one)."""


class ExecutorClient:
    """A connection to the executor at ``address`` (``host:port``); opened on first use."""

    def __init__(
        self,
        address: str,
        *,
        retry_deadline_s: float = 120.0,
        call_timeout_s: float = 300.0,
        settings: Settings,
        chunk_bytes: int = CHUNK_BYTES,
    ) -> None:
        self._address = address
        self._settings = settings  # TLS and the token
        self._chunk_bytes = chunk_bytes
        self._retry_deadline_s = retry_deadline_s
        self._call_timeout_s = call_timeout_s
        self._channel: grpc.aio.Channel | None = None
        self._stub: Any = None

    async def write_batch(
        self,
        *,
        connector: str,
        task: int,
        topic: str,
        topic_id: str,
        partition: int,
        table: pa.Table,
        path: str,
        format: str = "parquet",
        options: Mapping[str, str] | None = None,
    ) -> tuple[int, int]:
        """Writes one partition's rows to the dataset at ``path``; (rows_written, rows_skipped).

        The offset range comes from the table's int64 ``kafka_offset`` column. A relative
        ``path`` is resolved against this process's working directory. Raises ValueError for a
        table without that column, and ``grpc.aio.AioRpcError`` for refusals (INVALID_ARGUMENT)
        and for failures that outlast the retry deadline.
        """
        if KAFKA_OFFSET_COLUMN not in table.column_names:
            raise ValueError(f"the table has no {KAFKA_OFFSET_COLUMN!r} column")
        if table.num_rows == 0:
            return 0, 0
        import pyarrow.compute as pc  # a table is here: pyarrow is loaded

        # Serializing tens of MiB takes a while; keep the event loop and the task's Kafka I/O free.
        data = await asyncio.to_thread(ipc_stream, table)
        offsets = table.column(KAFKA_OFFSET_COLUMN)
        header = executor_pb2.WriteBatchRequest(
            connector=connector,
            task=task,
            topic=topic,
            topic_id=topic_id,
            partition=partition,
            first_offset=pc.min(offsets).as_py(),
            last_offset=pc.max(offsets).as_py(),
            format=format,
            path=absolute(path) if path else "",
            options=dict(options or {}),
            stream_bytes=len(data),
        )
        chunk_bytes = self._chunk_bytes

        async def stream(stub: Any) -> Any:
            call = stub.WriteStream(timeout=self._call_timeout_s)
            await accepted(call)  # a refusal arrives before a byte is sent (core.rpc)
            try:
                for chunk in chunks(header, data, chunk_bytes):
                    await call.write(chunk)
                await call.done_writing()
            except (asyncio.InvalidStateError, grpc.aio.AioRpcError):
                pass  # the call ended under the writes: its status (awaited next) says why
            return await call

        response = await self._retrying(stream)
        return response.rows_written, response.rows_skipped

    async def count_rows(self, path: str, format: str = "parquet") -> int:
        """How many rows the dataset at ``path`` holds (0 if it does not exist)."""
        request = executor_pb2.CountRowsRequest(format=format, path=absolute(path))
        response = await self._unary("CountRows", request)
        return int(response.rows)

    async def read_rows(
        self, path: str, format: str = "parquet", limit: int = 0
    ) -> tuple[pa.Table, bool]:
        """Up to ``limit`` rows (0: the executor's default) of the dataset at ``path``, and
        whether it holds more."""
        request = executor_pb2.ReadRowsRequest(format=format, path=absolute(path), limit=limit)
        response = await self._unary("ReadRows", request)
        return read_stream(response.arrow_ipc), bool(response.truncated)

    async def query(self, table: pa.Table, sql: str, connector: str = "") -> pa.Table:
        """Spark SQL over ``table`` (the view ``batch``), and its result; ``connector`` is who
        asks, for the executor's metrics."""
        data = await asyncio.to_thread(ipc_stream, table)
        request = executor_pb2.QueryRequest(arrow_ipc=data, sql=sql, connector=connector)
        response = await self._unary("Query", request)
        return read_stream(response.arrow_ipc)

    async def close(self) -> None:
        """Closes the connection; calls in progress are cancelled."""
        if self._channel is not None:
            await self._channel.close()
            self._channel = self._stub = None

    async def __aenter__(self) -> ExecutorClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def _rpc(self) -> Any:
        # Made lazily: a grpc.aio channel belongs to the event loop running when it is made.
        if self._stub is None:
            self._channel = tls.aio_channel(self._address, self._settings)
            self._stub = executor_pb2_grpc.ExecutorStub(self._channel)
        return self._stub

    async def _unary(self, method: str, request: Any) -> Any:
        timeout = self._call_timeout_s
        return await self._retrying(lambda stub: getattr(stub, method)(request, timeout=timeout))

    async def _retrying(self, attempt: Callable[[Any], Awaitable[Any]]) -> Any:
        """The answer of ``attempt(stub)``, tried again while the executor is busy or away."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._retry_deadline_s
        # Jitter, so that tasks turned away together do not come back together.
        waits = Backoff(_FIRST_BACKOFF_S, _MAX_BACKOFF_S, jitter=_JITTER)
        while True:
            try:
                return await attempt(self._rpc())
            except grpc.aio.AioRpcError as exc:
                if exc.code() not in _RETRYABLE:
                    raise
                hint = retry_after_s(exc.trailing_metadata())
                pause = waits.next_s()
                if hint is not None:  # the executor's own word on when to come back
                    pause = hint * (1 + random.random() * _JITTER)
                if loop.time() + pause > deadline:
                    raise
                await asyncio.sleep(pause)


class SqlCheck:
    """The SDK's ``SqlCheck`` of a connector's validation context: asks the executor at
    ``address`` whether a query parses (``CheckSql``).

    Synchronous, as ``validate()`` is, and bounded by ``timeout_s`` (long enough for an executor
    to start Spark on demand): an executor that is down or does not answer in time leaves the
    query unchecked, which is not a verdict: RetriableError, and validation answers that the
    config could not be checked (503), never that it is fine."""

    def __init__(self, settings: Settings, timeout_s: float = SQL_CHECK_TIMEOUT_S) -> None:
        self._settings = settings
        self._address = settings.executor_addr
        self._timeout_s = min(timeout_s, settings.plugin_call_timeout_s / 2)
        self._log = log.get("headrace.clients.executor")

    def check(self, sql: str) -> str | None:
        """Why ``sql`` is not Spark SQL (Spark's reason); None when it parses. RetriableError
        when the executor could not say in time."""
        request = executor_pb2.CheckSqlRequest(sql=sql)
        try:
            with tls.channel(self._address, self._settings) as channel:
                executor_pb2_grpc.ExecutorStub(channel).CheckSql(request, timeout=self._timeout_s)
        except grpc.RpcError as exc:
            code, details = exc.code(), exc.details() or ""
            if code == grpc.StatusCode.INVALID_ARGUMENT:
                return details.removeprefix("sql: ")
            self._log.warning(
                "sql_check_unavailable", executor=self._address, code=code.name, reason=details
            )
            raise RetriableError(
                f"sql: the Spark executor at {self._address} could not check the query in "
                f"{self._timeout_s:.0f} s ({code.name}): the config is not taken unchecked; "
                "ask again once the executor answers"
            ) from None
        return None


def absolute(path: str) -> str:
    """``path`` resolved against this process's working directory, as the executor needs it.

    Only a ``getcwd`` for relative paths: no filesystem access worth a thread.
    """
    return os.path.abspath(path)


def chunks(
    header: executor_pb2.WriteBatchRequest, data: bytes, size: int
) -> Iterator[executor_pb2.WriteChunk]:
    """A WriteStream's messages: the header, then ``data`` in pieces of at most ``size``."""
    yield executor_pb2.WriteChunk(header=header)
    view = memoryview(data)
    for start in range(0, len(data), size):
        yield executor_pb2.WriteChunk(arrow_ipc=bytes(view[start : start + size]))
