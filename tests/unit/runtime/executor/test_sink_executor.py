"""The executor a sink task gets from the runtime: bound to the host's address and the task."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import pyarrow as pa
import pytest

from headrace.clients.executor import ExecutorClient
from headrace.core.settings import Settings
from headrace.runtime import kafka
from headrace.runtime.placement import Placement
from headrace.runtime.sink import loop as sink
from headrace.runtime.sink.executor import TaskExecutor
from headrace.runtime.topicids import TopicIdentity
from headrace.sdk import KAFKA_OFFSET_COLUMN, SinkRecord, SinkTask

TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"


class Client(ExecutorClient):
    """Records the calls instead of making them."""

    def __init__(self) -> None:
        super().__init__("unused:1", settings=Settings())
        self.calls: list[dict[str, Any]] = []
        self.closed = False

    async def write_batch(self, **call: Any) -> tuple[int, int]:
        self.calls.append(call)
        return 3, 1

    async def close(self) -> None:
        self.closed = True


async def test_a_task_executor_writes_as_its_connector_and_task() -> None:
    client = Client()
    asked: list[Collection[str]] = []

    async def ids(topics: Collection[str]) -> dict[str, str]:
        asked.append(topics)
        return {"t": TOPIC_ID}

    executor = TaskExecutor(client, "sink", 4, TopicIdentity(ids))
    table = pa.table({KAFKA_OFFSET_COLUMN: pa.array([1], pa.int64())})
    assert await executor.write_table(topic="t", partition=2, table=table, path="/d") == (3, 1)
    assert asked == [["t"]]  # every write asks again: a topic re-created is refused
    assert client.calls == [
        {
            "connector": "sink",
            "task": 4,
            "topic": "t",
            "topic_id": TOPIC_ID,
            "partition": 2,
            "table": table,
            "path": "/d",
            "format": "parquet",
            "options": None,
        }
    ]
    await executor.close()
    assert client.closed


class Consumer:
    """Stands in for AIOKafkaConsumer: joins nothing, holds nothing."""

    def __init__(self, **settings: Any) -> None:
        self.settings = settings
        self._client = object()  # what the runner asks topic ids through

    async def start(self) -> None: ...
    async def stop(self) -> None: ...

    def subscribe(self, **subscription: Any) -> None: ...

    def assignment(self) -> set[Any]:
        return set()


class Task(SinkTask):
    async def start(self, config: Mapping[str, str]) -> None: ...
    async def put(self, records: list[SinkRecord]) -> None: ...


async def test_the_sink_runner_hands_its_task_an_executor_and_closes_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    made: list[tuple[str, Client]] = []

    def client_for(address: str, settings: Settings) -> Client:
        assert settings is runner.settings  # TLS and the token are the task's process's
        made.append((address, Client()))
        return made[-1][1]

    monkeypatch.setattr(kafka, "AIOKafkaConsumer", Consumer)
    monkeypatch.setattr(sink, "ExecutorClient", client_for)

    async def ids(client: Any, topics: Collection[str]) -> dict[str, str]:
        return {"t": TOPIC_ID}

    monkeypatch.setattr(sink, "topic_ids", ids)
    settings = Settings(bootstrap_servers="unused:1", executor_addr="10.0.0.7:50053")
    task = Task()
    runner = sink.SinkRunner(Placement("sink", 3, {"topics": "t"}, {}, settings), task)
    await runner.start()
    assert await task.context.executor.write_table(
        topic="t", partition=0, table=pa.table({KAFKA_OFFSET_COLUMN: [7]}), path="/d"
    ) == (3, 1)
    [(address, client)] = made
    assert address == "10.0.0.7:50053"
    call = client.calls[0]
    assert (call["connector"], call["task"], call["topic_id"]) == ("sink", 3, TOPIC_ID)
    await runner.close()
    assert client.closed
