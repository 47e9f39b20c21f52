"""The executor on Spark beyond its own process: a standalone cluster (a master and a worker
process) and a Spark Connect server, each started from PySpark's distribution. Users with a
cluster change one setting, SPARK_MASTER; the jobs must write the same rows either way."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import grpc
import pyarrow as pa
import pytest

from headrace.clients.executor import ExecutorClient, SqlCheck
from headrace.core.settings import Settings
from tests.postgres import Postgres
from tests.sparkprocs import connect_server, executor, standalone_cluster

pytestmark = pytest.mark.spark

TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"


@pytest.fixture(scope="module", params=["standalone", "connect"])
def remote(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, str, Path]]:
    """(kind, executor address, executor log) of an executor whose Spark runs elsewhere."""
    folder = tmp_path_factory.mktemp(request.param)
    with ExitStack() as started:
        spark = standalone_cluster if request.param == "standalone" else connect_server
        master = started.enter_context(spark(folder))
        roots = tmp_path_factory.getbasetemp()
        address, log, _ = started.enter_context(executor(folder, roots, master))
        yield request.param, address, log


def batch(offsets: range) -> pa.Table:
    return pa.table(
        {
            "kafka_offset": pa.array(offsets, pa.int64()),
            "id": pa.array([o * 10 for o in offsets], pa.int64()),
            "name": [f"n{o}" for o in offsets],
        }
    )


@pytest.mark.parametrize("fmt", ["parquet", "delta", "jdbc"])
async def test_every_job_writes_once_on_spark_elsewhere(
    remote: tuple[str, str, Path], tmp_path: Path, postgres: Postgres, fmt: str
) -> None:
    kind, address, _ = remote
    table = f"remote_{uuid.uuid4().hex[:8]}"
    path = "" if fmt == "jdbc" else str(tmp_path / fmt)
    options = {"url": postgres.jdbc_url, "table": table} if fmt == "jdbc" else {}
    rows = batch(range(0, 50))
    async with ExecutorClient(address, settings=Settings()) as client:
        written = [
            await client.write_batch(
                connector="sink",
                task=0,
                topic="t",
                topic_id=TOPIC_ID,
                partition=0,
                table=rows,
                path=path,
                format=fmt,
                options=options,
            )
            for _ in range(2)
        ]
        if fmt == "jdbc":
            with postgres.connect() as conn:
                back = conn.execute(f"SELECT kafka_offset, id, name FROM {table}").fetchall()
            found = sorted(back)
        else:
            got, _ = await client.read_rows(path, fmt)
            found = sorted(tuple(r.values()) for r in got.select(rows.column_names).to_pylist())
    assert written == [(50, 0), (0, 50)], kind
    assert found == sorted(tuple(r.values()) for r in rows.to_pylist())


async def test_a_query_runs_on_spark_elsewhere(remote: tuple[str, str, Path]) -> None:
    _, address, log = remote
    async with ExecutorClient(address, settings=Settings()) as client:
        result = await client.query(batch(range(0, 6)), "SELECT sum(id) AS total FROM batch")
    assert result.to_pylist() == [{"total": 150}]
    ready = [
        json.loads(line) for line in log.read_text().splitlines() if '"executor_ready"' in line
    ]
    assert ready and ready[0]["master"].startswith(("spark://", "sc://"))


def test_a_query_is_parsed_without_running_it_on_spark_elsewhere(
    remote: tuple[str, str, Path],
) -> None:
    kind, address, _ = remote
    check = SqlCheck(Settings(executor_addr=address))
    assert check.check("SELECT no_such_column FROM batch") is None, kind
    reason = check.check("SELEC id FROM batch")
    assert reason is not None and "[PARSE_SYNTAX_ERROR]" in reason and "'SELEC'" in reason, kind


@pytest.mark.parametrize(
    ("sql", "says"),
    [
        ("SELECT value FROM text.`/etc/hostname`", "reads text./etc/hostname"),
        ("SELECT reflect('java.lang.System', 'getenv', 'HOME') FROM batch", "calls reflect"),
        ("CREATE TABLE made AS SELECT * FROM batch", "is not a query over the view batch"),
        ("WITH t AS (SELECT id FROM batch) SELECT java_method('a', 'b') FROM t", "java_method"),
    ],
)
async def test_a_query_past_the_batch_is_refused_on_spark_elsewhere(
    remote: tuple[str, str, Path], sql: str, says: str
) -> None:
    """On Spark Connect the plans are read from EXPLAIN's drawing of them: the same refusals."""
    kind, address, _ = remote
    checked = SqlCheck(Settings(executor_addr=address)).check(sql)
    assert checked is not None and says in checked, (kind, checked)
    async with ExecutorClient(address, settings=Settings()) as client:
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await client.query(batch(range(0, 3)), sql)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT, kind
    assert says in (refused.value.details() or ""), (kind, refused.value.details())
    taken = await _query(address, "WITH t AS (SELECT id FROM batch) SELECT sum(id) AS s FROM t")
    assert taken == [{"s": 30}], kind


async def _query(address: str, sql: str) -> list[dict[str, object]]:
    async with ExecutorClient(address, settings=Settings()) as client:
        return (await client.query(batch(range(0, 3)), sql)).to_pylist()
