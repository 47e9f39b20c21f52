"""Debezium's PostgreSQL connector, installed from Maven and run unchanged in a plugin process with
its JVM host, against the suite's PostgreSQL (logical decoding on) and broker: changes arrive as
change events, the stream resumes after the process is killed with nothing lost, and its stop
releases what it holds in the database."""

from __future__ import annotations

import asyncio
import json
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from headrace.isolation import jvm
from headrace.isolation.plugins import discover
from headrace.v1 import plugin_pb2 as pb
from tests.postgres import Postgres
from tests.support import (
    DEBEZIUM_POSTGRES,
    HOST_DEADLINE_S,
    consume,
    eventually,
    plugin_host,
    start_all,
)

pytestmark = pytest.mark.kafka

DEBEZIUM = "io.debezium.connector.postgresql.PostgresConnector"
COORDINATE = DEBEZIUM_POSTGRES


@pytest.fixture(scope="module")
def debezium(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Debezium's PostgreSQL connector, installed as a user installs it: its manifest."""
    entry = tmp_path_factory.mktemp("debezium")
    jvm.install(COORDINATE, entry)
    catalog = discover([entry], tmp_path_factory.mktemp("jvm-plugins"))
    [plugin] = [p for p in catalog.plugins if p.class_name == DEBEZIUM]
    assert plugin.version == "3.6.1.Final"
    yield plugin.manifest


def events(records: list[Any]) -> list[tuple[str, int]]:
    """(op, id) of each change event, in order; tombstones left out."""
    found = []
    for record in records:
        if record.value is None:
            continue
        value = json.loads(record.value)
        row = value["after"] if value["op"] != "d" else value["before"]
        found.append((value["op"], row["id"]))
    return found


def slot_active(postgres: Postgres, slot: str) -> bool | None:
    with postgres.connect() as conn:
        row = conn.execute(
            "SELECT active FROM pg_replication_slots WHERE slot_name = %s", (slot,)
        ).fetchone()
    return None if row is None else bool(row[0])


async def test_changes_stream_resume_after_a_kill_and_the_stop_releases_the_slot(
    kafka: str, cluster: str, tmp_path: Path, postgres: Postgres, debezium: Path
) -> None:
    table, slot = f"items_{cluster}", f"slot_{cluster}"
    with postgres.connect() as conn:
        conn.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, name text)")
        conn.execute(f"ALTER TABLE {table} REPLICA IDENTITY FULL")
    topic = f"{cluster}.public.{table}"
    config = {
        "name": "cdc",
        "connector.class": DEBEZIUM,
        "tasks.max": "1",
        "database.hostname": postgres.host,
        "database.port": str(postgres.port),
        "database.user": postgres.user,
        "database.password": "unused",
        "database.dbname": postgres.database,
        "topic.prefix": cluster,
        "table.include.list": f"public.{table}",
        "plugin.name": "pgoutput",
        "slot.name": slot,
        "publication.name": f"pub_{cluster}",
        "publication.autocreate.mode": "filtered",
        "slot.drop.on.stop": "true",
    }

    async def changes(statements: list[str]) -> None:
        with postgres.connect() as conn:
            for statement in statements:
                conn.execute(statement)

    async with plugin_host(debezium, kafka, cluster, tmp_path) as host:
        await start_all(host, "cdc", config)
        await eventually("the slot in use", lambda: slot_active(postgres, slot), within=120)
        await changes(
            [
                f"INSERT INTO {table} VALUES (1, 'a'), (2, 'b'), (3, 'c')",
                f"UPDATE {table} SET name = 'B' WHERE id = 2",
                f"DELETE FROM {table} WHERE id = 3",
            ]
        )
        first = await consume(kafka, topic, 6, within=120)  # the delete's tombstone too
        assert events(first) == [("c", 1), ("c", 2), ("c", 3), ("u", 2), ("d", 3)]
        host.process.send_signal(signal.SIGKILL)  # its JVM ends as its pipe closes
        await asyncio.wait_for(host.process.wait(), HOST_DEADLINE_S)

    await eventually("the slot let go", lambda: slot_active(postgres, slot) is False)
    await changes([f"INSERT INTO {table} VALUES (4, 'd'), (5, 'e')"])  # while nothing runs
    async with plugin_host(debezium, kafka, cluster, tmp_path) as host:
        await start_all(host, "cdc", config)
        after = await consume(kafka, topic, 8, within=120)
        seen = events(after)
        # Nothing lost; what was not yet committed when it was killed may come twice.
        assert set(seen) == {("c", 1), ("c", 2), ("c", 3), ("u", 2), ("d", 3), ("c", 4), ("c", 5)}
        assert seen[-2:] == [("c", 4), ("c", 5)]
        await host.stub.StopTask(pb.StopRequest(connector="cdc", task=0, deleted=True))
        await host.stub.StopConnector(pb.StopRequest(connector="cdc", task=-1, deleted=True))
        # Its stop reached Debezium, which dropped its replication slot.
        await eventually("the slot dropped", lambda: slot_active(postgres, slot) is None)
