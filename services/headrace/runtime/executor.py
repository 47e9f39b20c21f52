"""The async client of the Spark executor, and the SDK's ``Executor`` a sink task gets from it.

The runtime makes one :class:`TaskExecutor` per sink task, bound to this process's
``HEADRACE_EXECUTOR_ADDR``, to the task's connector and task number and to the ids of the topics
it reads (``topicids.TopicIdentity``), hands it to the task as ``context.executor``, and closes it
when the task stops. Plugins never import this module.

One RPC per batch. Batches bigger than the executor's message limit are split on offset
boundaries (never between two rows of one offset, which would make the second part look already
written). Calls the executor turns away as busy (RESOURCE_EXHAUSTED) or that cannot reach it
(UNAVAILABLE) are retried until a deadline, honouring its ``retry-after-ms`` hint: writes are
idempotent, so a retry never writes a row twice.
"""

from __future__ import annotations

import asyncio
import os
import random
from collections.abc import Mapping
from types import TracebackType
from typing import Any

import grpc
import pyarrow as pa
import pyarrow.compute as pc

from headrace.core.arrowipc import ipc_stream, read_stream
from headrace.core.rpc import GRPC_OPTIONS, MAX_MESSAGE_BYTES, retry_after_s
from headrace.runtime.topicids import TopicIdentity
from headrace.sdk.executor import KAFKA_OFFSET_COLUMN
from headrace.v1 import executor_pb2, executor_pb2_grpc

_RETRYABLE = (grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.UNAVAILABLE)
# Room in a request for everything besides the Arrow bytes (names, path, offsets).
_MAX_ARROW_BYTES = MAX_MESSAGE_BYTES - 1024 * 1024
_FIRST_BACKOFF_S = 0.1
_MAX_BACKOFF_S = 5.0


class ExecutorClient:
    """A connection to the executor at ``address`` (``host:port``); opened on first use."""

    def __init__(
        self, address: str, *, retry_deadline_s: float = 120.0, call_timeout_s: float = 300.0
    ) -> None:
        self._address = address
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
        # Serializing tens of MiB takes a while; keep the event loop and the task's Kafka I/O free.
        parts = await asyncio.to_thread(encode_batches, table, _MAX_ARROW_BYTES)
        written = skipped = 0
        for first, last, data in parts:
            request = executor_pb2.WriteBatchRequest(
                connector=connector,
                task=task,
                topic=topic,
                topic_id=topic_id,
                partition=partition,
                first_offset=first,
                last_offset=last,
                format=format,
                path=absolute(path) if path else "",
                arrow_ipc=data,
                options=dict(options or {}),
            )
            response = await self._retrying("WriteBatch", request)
            written += response.rows_written
            skipped += response.rows_skipped
        return written, skipped

    async def count_rows(self, path: str, format: str = "parquet") -> int:
        """How many rows the dataset at ``path`` holds (0 if it does not exist)."""
        request = executor_pb2.CountRowsRequest(format=format, path=absolute(path))
        response = await self._retrying("CountRows", request)
        return int(response.rows)

    async def read_rows(
        self, path: str, format: str = "parquet", limit: int = 0
    ) -> tuple[pa.Table, bool]:
        """Up to ``limit`` rows (0: the executor's default) of the dataset at ``path``, and
        whether it holds more."""
        request = executor_pb2.ReadRowsRequest(format=format, path=absolute(path), limit=limit)
        response = await self._retrying("ReadRows", request)
        return read_stream(response.arrow_ipc), bool(response.truncated)

    async def query(self, table: pa.Table, sql: str) -> pa.Table:
        """Spark SQL over ``table`` (the view ``batch``), and its result."""
        data = await asyncio.to_thread(ipc_stream, table)
        response = await self._retrying("Query", executor_pb2.QueryRequest(arrow_ipc=data, sql=sql))
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
            self._channel = grpc.aio.insecure_channel(self._address, options=GRPC_OPTIONS)
            self._stub = executor_pb2_grpc.ExecutorStub(self._channel)
        return self._stub

    async def _retrying(self, method: str, request: Any) -> Any:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._retry_deadline_s
        backoff = _FIRST_BACKOFF_S
        while True:
            try:
                call = getattr(self._rpc(), method)
                return await call(request, timeout=self._call_timeout_s)
            except grpc.aio.AioRpcError as exc:
                if exc.code() not in _RETRYABLE:
                    raise
                hint = retry_after_s(exc.trailing_metadata())
                # Jitter, so that tasks turned away together do not come back together.
                pause = (hint if hint is not None else backoff) * (1 + random.random() / 5)
                if loop.time() + pause > deadline:
                    raise
                await asyncio.sleep(pause)
                backoff = min(backoff * 2, _MAX_BACKOFF_S)


class TaskExecutor:
    """The SDK's ``Executor`` for one sink task: the client, with the task's identity and the
    ids of its topics."""

    def __init__(
        self, client: ExecutorClient, connector: str, task: int, topics: TopicIdentity
    ) -> None:
        self._client = client
        self._connector = connector
        self._task = task
        self._topics = topics

    async def write_table(
        self,
        *,
        topic: str,
        partition: int,
        table: pa.Table,
        path: str,
        format: str = "parquet",
        options: Mapping[str, str] | None = None,
    ) -> tuple[int, int]:
        """:meth:`ExecutorClient.write_batch` as this task; (rows_written, rows_skipped).

        Raises ``TopicChanged`` when the topic was deleted since the task was given it."""
        if table.num_rows == 0:
            return 0, 0
        return await self._client.write_batch(
            connector=self._connector,
            task=self._task,
            topic=topic,
            topic_id=await self._topics.of(topic),
            partition=partition,
            table=table,
            path=path,
            format=format,
            options=options,
        )

    async def query(self, *, table: pa.Table, sql: str) -> pa.Table:
        """:meth:`ExecutorClient.query`."""
        return await self._client.query(table, sql)

    async def close(self) -> None:
        await self._client.close()


def absolute(path: str) -> str:
    """``path`` resolved against this process's working directory, as the executor needs it.

    Only a ``getcwd`` for relative paths: no filesystem access worth a thread.
    """
    return os.path.abspath(path)


def encode_batches(table: pa.Table, max_bytes: int) -> list[tuple[int, int, bytes]]:
    """(first offset, last offset, IPC stream) per request, each stream at most ``max_bytes``.

    One request when the table fits; otherwise the rows, in offset order, cut into halves at
    offset boundaries until every part fits. Raises ValueError when one offset's rows alone are
    too big.
    """
    data = ipc_stream(table)
    offsets = table.column(KAFKA_OFFSET_COLUMN)
    first, last = pc.min(offsets).as_py(), pc.max(offsets).as_py()
    if len(data) <= max_bytes:
        return [(first, last, data)]
    if first == last:
        raise ValueError(
            f"the rows of offset {first} take {len(data)} bytes as Arrow IPC, "
            f"more than the {max_bytes} one request may carry"
        )
    ordered = table.sort_by(KAFKA_OFFSET_COLUMN)
    cut = _offset_boundary(ordered.column(KAFKA_OFFSET_COLUMN), ordered.num_rows // 2)
    return encode_batches(ordered.slice(0, cut), max_bytes) + encode_batches(
        ordered.slice(cut), max_bytes
    )


def _offset_boundary(sorted_offsets: pa.ChunkedArray, near: int) -> int:
    """The row index nearest ``near`` where the offset changes (one offset's rows stay together)."""
    values = sorted_offsets.to_pylist()
    for distance in range(len(values)):
        for index in (near + distance, near - distance):
            if 0 < index < len(values) and values[index] != values[index - 1]:
                return index
    raise AssertionError("at least two distinct offsets have a boundary between them")
