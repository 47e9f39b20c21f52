"""End to end through the Spark executor: sinks of every job type, and the executor killed while
they write. Rows are read back through the executor itself, as Spark reads them."""

from __future__ import annotations

import asyncio
import os
import signal
import uuid
from collections import Counter
from functools import partial
from pathlib import Path

import pytest

from headrace.clients.config import ConfigClient
from headrace.clients.executor import ExecutorClient
from headrace.core.storage.topics import ensure_topic
from headrace.local.stack import Stack
from tests import sparkprocs
from tests.postgres import Postgres
from tests.support import wait_for

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

RECORDS = 3000


def ids_written(stack: Stack, path: Path, fmt: str, postgres: Postgres) -> list[int]:
    """The ``id`` of every row at ``path`` (the table, for jdbc), duplicates included."""
    if fmt == "jdbc":
        with postgres.connect() as conn:
            exists = conn.execute("SELECT to_regclass(%s)", (path.name,)).fetchone()
            if exists is None or exists[0] is None:
                return []
            # A name this test made.
            return [int(i) for (i,) in conn.execute(f"SELECT id FROM {path.name}").fetchall()]

    async def read() -> list[int]:
        async with ExecutorClient(
            stack.settings.executor_addr, settings=stack.settings, retry_deadline_s=5
        ) as client:
            table, truncated = await client.read_rows(str(path), fmt, limit=10 * RECORDS)
        assert not truncated
        return [int(i) for i in table.column("id").to_pylist()] if table.num_rows else []

    return asyncio.run(read())


SINKS: dict[str, tuple[str, str]] = {
    "delta": ("headrace_delta.DeltaSinkConnector", "delta"),
    "jdbc": ("headrace_jdbc.JdbcSinkConnector", "jdbc"),
    "parquet": ("headrace_parquet.ParquetSinkConnector", "parquet"),
}
EXACTLY_ONCE = ("delta", "jdbc")


def test_every_record_survives_the_executor_killed_mid_stream(
    stack: Stack,
    spark: Stack,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    postgres: Postgres,
) -> None:
    """Killed while a Delta, a PostgreSQL and a Parquet sink all have batches in flight, the
    executor comes back and each sink's retries deliver every record: exactly once into Delta
    and PostgreSQL (checked by key), at least once into files (duplicates reported)."""
    topic = f"{tmp_path.name}-in"
    table = f"killed_{uuid.uuid4().hex[:8]}"
    outs = {"delta": tmp_path / "delta", "jdbc": Path(table), "parquet": tmp_path / "parquet"}
    asyncio.run(ensure_topic(stack.settings.bootstrap_servers, topic, 2))
    source = {
        "connector.class": "DatagenSource",
        "tasks.max": "2",
        "topic": topic,
        "records": str(RECORDS),
        "batch.size": "10",
        # 100 records a second for 30 s: the kill comes mid-stream, even if Spark is slow to
        # write the first batch of three sinks on a busy machine.
        "interval.ms": "200",
    }

    def sink(job: str) -> dict[str, str]:
        where = (
            {"connection.url": postgres.jdbc_url, "table.name.format": table}
            if job == "jdbc"
            else {"path": str(outs[job])}
        )
        return {
            "connector.class": SINKS[job][0],
            "tasks.max": "2",
            "topics": topic,
            "flush.max.records": "50",
            "offset.flush.interval.ms": "200",
            **where,
        }

    def written(job: str) -> list[int]:
        return ids_written(stack, outs[job], SINKS[job][1], postgres)

    def complete(job: str) -> bool:
        return len(set(written(job))) >= RECORDS

    with ConfigClient(stack.settings.config_addr, stack.settings) as client:
        for job in SINKS:
            client.create(f"{job}-out", sink(job))
        client.create("killed-gen", source)
        try:
            for job in SINKS:
                wait_for(f"rows landing in {job}", partial(written, job), 120)
            landed = {job: len(set(written(job))) for job in SINKS}
            pid = spark.pid("executor")
            assert pid is not None
            os.killpg(pid, signal.SIGKILL)  # the executor and its Spark JVM, mid-write or not
            spark.stop("executor")  # reaps it
            assert max(landed.values()) < RECORDS, "the stream ended before the executor died"
            spark.start("executor", timeout=sparkprocs.STARTUP_DEADLINE_S)
            for job in SINKS:
                wait_for(
                    f"all {RECORDS} records written into {job}",
                    partial(complete, job),
                    timeout=180,
                )
        finally:
            client.delete("killed-gen")
            for job in SINKS:
                client.delete(f"{job}-out")
    for job in SINKS:
        ids = written(job)
        counted = Counter(ids)
        assert set(counted) == set(range(RECORDS)), job  # none lost, none invented
        twice = len(ids) - len(counted)
        if job in EXACTLY_ONCE:
            assert twice == 0, f"{twice} rows written twice into {job}"
        request.node.user_properties.append(
            (
                "reported",
                f"the executor killed mid-stream under a {job} sink: {RECORDS} records, "
                f"none lost, {twice} written twice",
            )
        )
