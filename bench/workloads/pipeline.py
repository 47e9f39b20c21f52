"""The demo pipeline: datagen source -> Kafka -> Parquet sink -> Spark executor -> Parquet.

Peers, on the same broker in the same run: bare aiokafka producing the same JSON records through
its batch path, and consuming them back in large chunks. End to end runs from the create call's
answer to the last row in Parquet; steady state from the first row in Parquet to the last, so
plugin start-up and Spark's first job do not count against the rate.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping
from pathlib import Path

import pyarrow.dataset as ds

from bench import raw
from bench.env import BenchEnv
from bench.harness import Measure, watch
from headrace.core.topics import ensure_topic

DEADLINE_S = 900.0


def payload(i: int) -> tuple[bytes | None, bytes]:
    """The record datagen makes for id ``i``, as bytes."""
    value = {"id": i, "name": f"record-{i}", "amount": i * 0.25}
    return str(i).encode(), json.dumps(value).encode()


def rows_in(path: Path) -> int:
    if not path.exists():
        return 0
    return ds.dataset(path, format="parquet", ignore_prefixes=[".", "_"]).count_rows()


class DemoPipeline:
    name = "pipeline"
    description = "datagen -> Kafka -> Parquet through the Spark executor"
    measures: Mapping[str, Measure] = {
        "headrace end to end": Measure("records/s"),
        "headrace steady state": Measure("records/s"),
        "raw aiokafka produce": Measure("records/s"),
        "raw aiokafka consume": Measure("records/s"),
        "raw aiokafka produce+consume": Measure("records/s"),
    }
    max_repeats = 3
    ratios: tuple[tuple[str, str], ...] = (
        ("headrace end to end", "raw aiokafka produce+consume"),
        ("headrace steady state", "raw aiokafka produce+consume"),
    )

    def parameters(self, smoke: bool) -> dict[str, object]:
        return {"records": 2_000 if smoke else 200_000, "tasks": 2, "partitions": 1}

    def run_once(self, env: BenchEnv, parameters: Mapping[str, object]) -> dict[str, float]:
        n, tasks, partitions = (int(str(parameters[k])) for k in ("records", "tasks", "partitions"))
        produce, consume = asyncio.run(self._raw(env, n, partitions))
        end_to_end, steady = self._headrace(env, n, tasks, partitions)
        return {
            "headrace end to end": end_to_end,
            "headrace steady state": steady,
            "raw aiokafka produce": produce,
            "raw aiokafka consume": consume,
            # Producing, then consuming the same records: the time of both, as a rate.
            "raw aiokafka produce+consume": 1 / (1 / produce + 1 / consume),
        }

    async def _raw(self, env: BenchEnv, n: int, partitions: int) -> tuple[float, float]:
        topic = env.fresh("raw")
        await ensure_topic(env.bootstrap, topic, partitions)
        records = [payload(i) for i in range(n)]
        produced = await raw.produce(env.bootstrap, topic, partitions, records)
        consumed = await raw.consume(env.bootstrap, topic, env.fresh("group"), n)
        return produced, consumed

    def _headrace(self, env: BenchEnv, n: int, tasks: int, partitions: int) -> tuple[float, float]:
        topic, out = env.fresh("records"), env.folder("parquet")

        async def rows() -> int:
            return rows_in(out)

        source, sink = env.fresh("source"), env.fresh("sink")
        asyncio.run(ensure_topic(env.bootstrap, topic, partitions))
        with env.client() as client:
            client.create(
                source,
                {
                    "connector.class": "DatagenSource",
                    "tasks.max": str(tasks),
                    "topic": topic,
                    "records": str(n),
                    "batch.size": "2000",
                },
            )
            started = time.perf_counter()
            client.create(
                sink,
                {
                    "connector.class": "ParquetSink",
                    "tasks.max": str(tasks),
                    "topics": topic,
                    "path": str(out),
                },
            )
            try:
                return asyncio.run(watch("the pipeline", rows, n, started, DEADLINE_S))
            finally:
                client.delete(source)
                client.delete(sink)
