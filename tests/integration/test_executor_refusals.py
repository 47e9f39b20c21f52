"""A streamed write the executor turns away reaches its client as the executor's own answer.

The client is still sending the batch's pieces when the executor refuses it; the answer must
arrive whole (RESOURCE_EXHAUSTED with its retry hint), never as the client library's INTERNAL.
The executor's servicer runs in this process without a SparkSession: every write here is refused
before anything would reach Spark.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import grpc
import pyarrow as pa
import pytest
from prometheus_client import REGISTRY

from headrace.clients.executor import ExecutorClient
from headrace.core.security.guard import ServerSecurity
from headrace.core.settings import Settings
from headrace.executor.admission import Limits
from headrace.executor.server import build_server
from headrace.executor.service import ExecutorService
from headrace.sdk.paths import Paths
from headrace.v1 import executor_pb2, executor_pb2_grpc
from tests.support import eventually

LIMITS = Limits(max_batches=1, idle_s=60)


@pytest.fixture
def executor(tmp_path: Path) -> Iterator[str]:
    service = ExecutorService(None, LIMITS, Paths((tmp_path,)))  # type: ignore[arg-type]  # no Spark: nothing is written
    server, port = build_server(service, "127.0.0.1", 0, LIMITS, ServerSecurity())
    server.start()
    try:
        yield f"127.0.0.1:{port}"
    finally:
        server.stop(0).wait()
        service.close()


def in_flight() -> float:
    return REGISTRY.get_sample_value("headrace_executor_in_flight_batches") or 0.0


async def test_a_refused_streamed_write_gets_the_executors_answer(
    executor: str, tmp_path: Path
) -> None:
    batch = pa.table({"kafka_offset": pa.array(range(500_000), pa.int64())})
    async with grpc.aio.insecure_channel(executor) as channel:
        # A slow writer holds the only slot: its header is admitted, its pieces never come.
        holder = executor_pb2_grpc.ExecutorStub(channel).WriteStream(timeout=60)
        header = executor_pb2.WriteBatchRequest(
            connector="slow", topic="t", topic_id="id", path=str(tmp_path), stream_bytes=1000
        )
        await holder.write(executor_pb2.WriteChunk(header=header))
        await eventually("the slow writer admitted", lambda: in_flight() == 1)
        # Every other write is turned away while the client streams its many pieces.
        client = ExecutorClient(
            executor, settings=Settings(), retry_deadline_s=0, chunk_bytes=64 * 1024
        )
        async with client:
            for _ in range(20):
                with pytest.raises(grpc.aio.AioRpcError) as refused:
                    await client.write_batch(
                        connector="c",
                        task=0,
                        topic="t",
                        topic_id="id",
                        partition=0,
                        table=batch,
                        path=str(tmp_path / "out"),
                    )
                assert refused.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
                assert "executor busy" in (refused.value.details() or "")
                hint = dict(refused.value.trailing_metadata() or ())
                assert hint["retry-after-ms"].isdigit()
        holder.cancel()
        # Ending the slow call gives its slot back.
        await eventually("the slot given back", lambda: in_flight() == 0)
    assert not (tmp_path / "out").exists()
