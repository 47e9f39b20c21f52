"""The SDK's ``Executor`` a sink task gets: the runtime makes one per sink task, bound to this
process's ``HEADRACE_EXECUTOR_ADDR``, to the task's connector and task number and to the ids of
the topics it reads (``topicids.TopicIdentity``), hands it to the task as ``context.executor``,
and closes it when the task stops. Plugins never import this module."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from headrace.clients.executor import ExecutorClient
from headrace.runtime.topicids import TopicIdentity

if TYPE_CHECKING:  # loaded where a table is written (headrace.sdk.columns)
    import pyarrow as pa


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
        return await self._client.query(table, sql, self._connector)

    async def close(self) -> None:
        await self._client.close()
