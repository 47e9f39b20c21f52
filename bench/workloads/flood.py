"""Back-pressure: the executor's memory while ten sink tasks push as fast as they can, beside the
same records written by one task.

A topic of ten partitions is filled before any clock starts. Then a Parquet sink with
``tasks.max=10`` reads it all, each task flushing large batches (``flush.max.records`` 50,000),
so that every task has a batch for the executor at almost every moment: far more than it admits
at once (``--max-in-flight``, 4 by default). The executor turns the rest away with
RESOURCE_EXHAUSTED and a retry hint, and the tasks' clients come back. The figures are the
executor's peak RSS (its Python process and its JVM) under that flood, and the same sink with
``tasks.max=1`` on the same topic: their ratio is what the flood costs in memory, which
admission is there to keep small. Every record must land once in each run.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping

from bench import raw
from bench.env import BenchEnv
from bench.harness import Measure, watch
from bench.memory import PeakMemory
from bench.workloads.parquet import DEADLINE_S, ParquetRows, _expect, payload
from headrace.core.storage.topics import ensure_topic

PARTITIONS = 10
FLOOD = "executor peak RSS, 10 sink tasks flooding it"
ONE = "executor peak RSS, 1 sink task"
FLOOD_RATE = "10 sink tasks, records/s"
ONE_RATE = "1 sink task, records/s"


class Flood:
    name = "flood"
    description = "Kafka -> Parquet with 10 sink tasks flooding the executor, beside 1 task"
    measures: Mapping[str, Measure] = {
        FLOOD: Measure("MiB", higher_is_better=False),
        ONE: Measure("MiB", higher_is_better=False),
        FLOOD_RATE: Measure("records/s"),
        ONE_RATE: Measure("records/s"),
    }
    ratios: tuple[tuple[str, str], ...] = ((FLOOD, ONE), (FLOOD_RATE, ONE_RATE))
    max_repeats = 3

    def parameters(self, smoke: bool) -> dict[str, object]:
        return {"records": 5_000 if smoke else 1_000_000, "partitions": PARTITIONS}

    def run_once(self, env: BenchEnv, parameters: Mapping[str, object]) -> dict[str, float]:
        n = int(str(parameters["records"]))
        topic = env.fresh("flood")

        async def fill() -> None:
            await ensure_topic(env.bootstrap, topic, PARTITIONS)
            await raw.produce(env.bootstrap, topic, PARTITIONS, [payload(i) for i in range(n)])

        asyncio.run(fill())
        flood_rss, flood_rate = self._sink(env, topic, n, tasks=PARTITIONS)
        one_rss, one_rate = self._sink(env, topic, n, tasks=1)
        return {FLOOD: flood_rss, ONE: one_rss, FLOOD_RATE: flood_rate, ONE_RATE: one_rate}

    def _sink(self, env: BenchEnv, topic: str, n: int, tasks: int) -> tuple[float, float]:
        """(executor peak MiB, steady records/s) of a Parquet sink with ``tasks`` tasks."""
        out, name = env.folder(f"flood{tasks}"), env.fresh(f"flood{tasks}")
        rows = ParquetRows(out)
        config = {
            "connector.class": "ParquetSink",
            "tasks.max": str(tasks),
            "topics": topic,
            "path": str(out),
            "flush.max.records": "50000",
        }
        with env.client() as client, PeakMemory() as peaks:
            peaks.track(FLOOD, env.stack.pid("executor"))
            started = time.perf_counter()
            client.create(name, config)
            try:
                _, steady = asyncio.run(watch(name, rows.progress, n, started, DEADLINE_S))
            finally:
                client.delete(name)
        _expect(n, rows.count(), f"{tasks} sink tasks")
        return peaks.mib()[FLOOD], steady
