"""Reading back what the pipelines wrote, each output by its own means and none through
headrace: topics with a consumer reading committed data, Delta with delta-rs, PostgreSQL with
SQL, Parquet with pyarrow, and files and the recording plugin's logs directly."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from aiokafka import TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from deltalake import DeltaTable

from tests.postgres import Postgres
from tests.support import committed, describe_topic, json_lines


def topic(kafka: str, name: str) -> list[tuple[int, int, Any]]:
    """(partition, offset, value) of every committed record of a topic."""
    return [(r.partition, r.offset, r.value) for r in asyncio.run(committed(kafka, name))]


def group_commits(kafka: str, group: str, name: str) -> dict[int, int]:
    """The offset a consumer group has committed for each partition of a topic (-1: none)."""
    return asyncio.run(_group_commits(kafka, group, name))


async def _group_commits(kafka: str, group: str, name: str) -> dict[int, int]:
    described = await describe_topic(kafka, name)
    partitions = [TopicPartition(name, p["partition"]) for p in described["partitions"]]
    admin = AIOKafkaAdminClient(bootstrap_servers=kafka)
    await admin.start()
    try:
        offsets = await admin.list_consumer_group_offsets(group, partitions=partitions)
    finally:
        await admin.close()
    return {tp.partition: offsets[tp].offset if tp in offsets else -1 for tp in partitions}


def generated(kafka: str, name: str) -> list[tuple[int, int, int]]:
    """(partition, offset, id) of a datagen topic's committed records."""
    return [(p, o, json.loads(v)["id"]) for p, o, v in topic(kafka, name)]


def delta_ids(path: Path) -> list[int]:
    """The table's ids; none before its first commit (its log may exist, empty, before it)."""
    if not any((path / "_delta_log").glob("*.json")):
        return []
    return [
        int(i) for i in DeltaTable(str(path)).to_pyarrow_table(columns=["id"])["id"].to_pylist()
    ]


def jdbc_ids(postgres: Postgres, table: str) -> list[int]:
    with postgres.connect() as conn:
        exists = conn.execute("SELECT to_regclass(%s)", (table,)).fetchone()
        if exists is None or exists[0] is None:
            return []
        return [int(i) for (i,) in conn.execute(f"SELECT id FROM {table}").fetchall()]


def parquet_ids(root: Path) -> list[int]:
    """Ids in the committed batch folders (``<topic>/<partition>/<batch>/``); a folder whose
    name starts with ``_`` or ``.`` is a write not committed."""
    ids: list[int] = []
    for batch in sorted(root.glob("*/*/*")):
        if batch.name.startswith(("_", ".")) or not batch.is_dir():
            continue
        for file in sorted(batch.glob("*.parquet")):
            ids += pq.read_table(file, columns=["id"])["id"].to_pylist()
    return ids


def lines(path: Path) -> list[str]:
    if not path.exists():
        return []
    text = path.read_text()
    return text.splitlines()


Lines = list[dict[str, Any]]


def recorded(folder: Path) -> tuple[Lines, Lines, Lines]:
    """A recording sink's record lines, lifecycle lines and ``task_configs`` answers."""
    return (
        json_lines(folder / "records.jsonl"),
        json_lines(folder / "lifecycle.jsonl"),
        json_lines(folder / "task_configs.jsonl"),
    )
