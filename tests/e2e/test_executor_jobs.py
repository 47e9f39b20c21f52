"""End to end through the Spark executor: sinks of every job type, and the executor killed while
they write. Rows are read back through the executor itself, as Spark reads them."""

from __future__ import annotations

import asyncio
import os
import signal
import uuid
from collections import Counter
from pathlib import Path

import pytest

from headrace.cli.client import ConfigClient
from headrace.cli.stack import Stack
from headrace.core.topics import ensure_topic
from headrace.runtime.executor import ExecutorClient
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
        async with ExecutorClient(stack.settings.executor_addr, retry_deadline_s=5) as client:
            table, truncated = await client.read_rows(str(path), fmt, limit=10 * RECORDS)
        assert not truncated
        return [int(i) for i in table.column("id").to_pylist()] if table.num_rows else []

    return asyncio.run(read())


SINKS: dict[str, tuple[str, dict[str, str], str]] = {
    "delta": ("headrace_delta.DeltaSinkConnector", {}, "delta"),
    "jdbc": ("headrace_jdbc.JdbcSinkConnector", {}, "jdbc"),
    "parquet": ("headrace_parquet.ParquetSinkConnector", {}, "parquet"),
}


@pytest.mark.parametrize("job", ["delta", "jdbc", "parquet"])
def test_every_record_survives_the_executor_killed_mid_stream(
    stack: Stack,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    postgres: Postgres,
    job: str,
) -> None:
    """Killed while batches are in flight, the executor comes back and the sink's retries
    deliver every record: exactly once into Delta and PostgreSQL (checked by key), at least
    once into files (duplicates reported)."""
    connector_class, extra, fmt = SINKS[job]
    out, topic = tmp_path / job, f"{tmp_path.name}-in"
    if job == "jdbc":
        out = Path(f"killed_{uuid.uuid4().hex[:8]}")  # the table
        extra = {"connection.url": postgres.jdbc_url, "table.name.format": out.name}
    kafka = stack.settings.bootstrap_servers
    asyncio.run(ensure_topic(kafka, topic, 2))
    source = {
        "connector.class": "DatagenSource",
        "tasks.max": "2",
        "topic": topic,
        "records": str(RECORDS),
        "batch.size": "10",
        # 200 records a second for 15 s: the kill comes mid-stream, even if Spark is slow to
        # write the first batch on a busy machine.
        "interval.ms": "100",
    }
    sink = {
        "connector.class": connector_class,
        "tasks.max": "2",
        "topics": topic,
        **({} if job == "jdbc" else {"path": str(out)}),
        "flush.max.records": "50",
        "offset.flush.interval.ms": "200",
        **extra,
    }
    with ConfigClient(stack.settings.config_addr) as client:
        client.create(f"{job}-out", sink)
        client.create(f"{job}-gen", source)
        try:
            wait_for("rows landing", lambda: ids_written(stack, out, fmt, postgres), 120)
            landed = len(set(ids_written(stack, out, fmt, postgres)))
            pid = stack.pid("executor")
            assert pid is not None
            os.killpg(pid, signal.SIGKILL)  # the executor and its Spark JVM, mid-write or not
            stack.stop("executor")  # reaps it
            assert landed < RECORDS, "the stream ended before the executor was killed"
            stack.start("executor")
            wait_for(
                f"all {RECORDS} records written",
                lambda: len(set(ids_written(stack, out, fmt, postgres))) >= RECORDS,
                timeout=180,
            )
        finally:
            client.delete(f"{job}-gen")
            client.delete(f"{job}-out")
    ids = ids_written(stack, out, fmt, postgres)
    counted = Counter(ids)
    assert set(counted) == set(range(RECORDS))  # none lost, none invented
    twice = len(ids) - len(counted)
    if job in ("delta", "jdbc"):
        assert twice == 0, f"{twice} rows written twice into {job}"
    request.node.user_properties.append(
        (
            "reported",
            f"the executor killed mid-stream under a {job} sink: {RECORDS} records, "
            f"none lost, {twice} written twice",
        )
    )
