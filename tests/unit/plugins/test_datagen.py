"""The datagen plugin: ids split among tasks, deterministic content, resume from an offset."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from headrace.sdk import ConfigException, ConnectorContext, SourceTaskContext
from tests.support import builtin_plugin_module

datagen = builtin_plugin_module("datagen", "1.0.0")


class Offsets:
    def __init__(self, stored: dict[str, Any] | None = None) -> None:
        self.stored = stored

    def offset(self, partition: Mapping[str, Any]) -> dict[str, Any] | None:
        return self.stored

    def offsets(self, partitions: Any) -> list[Any]:
        return [(p, self.stored) for p in partitions]


async def task_configs(config: dict[str, str], max_tasks: int) -> list[dict[str, str]]:
    connector = datagen.DatagenSourceConnector()
    connector.initialize(ConnectorContext("gen"))
    await connector.start(config)
    return connector.task_configs(max_tasks)


async def drain(config: dict[str, str], stored: dict[str, Any] | None = None) -> list[Any]:
    task = datagen.DatagenSourceTask()
    task.initialize(SourceTaskContext("gen", int(config["task.id"]), Offsets(stored)))
    await task.start(config)
    records = []
    while batch := await task.poll():
        records += batch.records()
    return records


@given(st.integers(1, 8), st.integers(0, 200), st.integers(1, 50))
def test_tasks_cover_every_id_exactly_once(tasks: int, limit: int, batch: int) -> None:
    ids = [i for k in range(tasks) for i in _all_ids(k, tasks, limit, batch)]
    assert sorted(ids) == list(range(limit))


def _all_ids(start: int, tasks: int, limit: int, batch: int) -> list[int]:
    out: list[int] = []
    while chunk := datagen.next_ids(start, tasks, limit, batch):
        out += chunk
        start = chunk[-1] + tasks
    return out


async def test_two_tasks_generate_deterministic_records_with_offsets() -> None:
    configs = await task_configs(
        {"name": "gen", "topic": "t", "records": "10", "batch.size": "1"}, 2
    )
    assert [c["task.id"] for c in configs] == ["0", "1"]
    first = await drain(configs[1])
    assert [r.key for r in first] == ["1", "3", "5", "7", "9"]
    assert first[0].value == {"id": 1, "name": "record-1", "amount": 0.25}
    assert first[0].source_partition == {"generator": "gen", "task": 1, "of": 2}
    assert [r.source_offset["next"] for r in first] == [3, 5, 7, 9, 11]
    assert {r.topic for r in first} == {"t"}
    # A batch's offset is the position after its last record.
    batched = await drain({**configs[1], "batch.size": "3"})
    assert [r.source_offset["next"] for r in batched] == [7, 7, 7, 11, 11]
    assert [r.value for r in batched] == [r.value for r in first]


async def test_a_task_resumes_from_its_stored_offset() -> None:
    config = (await task_configs({"name": "gen", "topic": "t", "records": "10"}, 2))[0]
    resumed = await drain(config, stored={"next": 6})
    assert [r.value["id"] for r in resumed] == [6, 8]


async def test_a_finished_task_waits_instead_of_spinning(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(datagen, "IDLE_POLL_S", 0.01)
    config = (await task_configs({"name": "gen", "topic": "t", "records": "0"}, 1))[0]
    task = datagen.DatagenSourceTask()
    task.initialize(SourceTaskContext("gen", 0, Offsets()))
    await task.start(config)
    assert await task.poll() == []


async def test_bad_configs_fail_the_start() -> None:
    with pytest.raises(ConfigException, match="topic"):
        await task_configs({"name": "gen"}, 1)
    with pytest.raises(ConfigException, match=r"batch\.size"):
        await task_configs({"name": "gen", "topic": "t", "batch.size": "0"}, 1)
    results = datagen.DatagenSourceConnector().validate({"records": "-1"})
    assert {r.name for r in results if r.errors} == {"topic", "records"}
