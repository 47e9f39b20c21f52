"""Throughput of the demo pipeline against the ceiling: raw aiokafka on the same broker.

Pushes N records (default 200,000) through source -> Kafka -> sink -> Spark -> Parquet, and
produces and consumes the same records with bare aiokafka clients on the same broker in the same
run. Prints records/s for each and the pipeline's ratio to the raw figures: the machines this
runs on are shared and noisy, so only the ratios mean anything.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
import uuid
from pathlib import Path

import pyarrow.dataset as ds
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from headrace.cli.client import ConfigClient
from headrace.cli.kafka import EmbeddedKafka, free_port
from headrace.cli.stack import Stack
from headrace.core.settings import Settings


def value(i: int) -> bytes:
    return json.dumps({"id": i, "name": f"record-{i}", "amount": i * 0.25}).encode()


async def raw_produce(bootstrap: str, topic: str, n: int) -> float:
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap,
        linger_ms=5,
        acks="all",
        enable_idempotence=True,
        max_batch_size=256 * 1024,
    )
    await producer.start()
    try:
        start = time.perf_counter()
        batch = []
        for i in range(n):
            batch.append(await producer.send(topic, key=str(i).encode(), value=value(i)))
            if len(batch) >= 5000:
                await asyncio.gather(*batch)
                batch.clear()
        await asyncio.gather(*batch)
        return n / (time.perf_counter() - start)
    finally:
        await producer.stop()


async def raw_consume(bootstrap: str, topic: str, n: int) -> float:
    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        auto_offset_reset="earliest",
        group_id=f"bench-{uuid.uuid4().hex[:6]}",
        enable_auto_commit=False,
    )
    await consumer.start()
    try:
        start = time.perf_counter()
        seen = 0
        while seen < n:
            for records in (await consumer.getmany(timeout_ms=500, max_records=5000)).values():
                seen += len(records)
        await consumer.commit()
        return n / (time.perf_counter() - start)
    finally:
        await consumer.stop()


def pipeline(settings: Settings, n: int, out: Path) -> float:
    stack = Stack(settings)
    try:
        stack.up()
        with ConfigClient(settings.config_addr) as client:
            start = time.perf_counter()
            client.create(
                "bench-source",
                {
                    "connector.class": "DatagenSource",
                    "tasks.max": "2",
                    "topic": "bench-pipeline",
                    "records": str(n),
                    "batch.size": "2000",
                },
            )
            client.create(
                "bench-sink",
                {
                    "connector.class": "ParquetSink",
                    "tasks.max": "2",
                    "topics": "bench-pipeline",
                    "path": str(out),
                },
            )
            deadline = start + 900
            while time.perf_counter() < deadline:
                if (
                    out.exists()
                    and ds.dataset(out, format="parquet", ignore_prefixes=[".", "_"]).count_rows()
                    >= n
                ):
                    return n / (time.perf_counter() - start)
                time.sleep(0.25)
            raise SystemExit(f"the pipeline did not deliver {n} records in 900 s")
    finally:
        stack.down()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=200_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="headrace-bench-") as tmp:
        root = Path(tmp)
        broker = None
        bootstrap = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
        if not bootstrap:
            broker = EmbeddedKafka(root / "kafka", port=free_port(), heap="1g")
            broker.start()
            bootstrap = broker.bootstrap
        try:
            raw_topic = f"bench-raw-{uuid.uuid4().hex[:6]}"
            produce = asyncio.run(raw_produce(bootstrap, raw_topic, args.records))
            consume = asyncio.run(raw_consume(bootstrap, raw_topic, args.records))
            settings = Settings(
                bootstrap_servers=bootstrap,
                cluster=f"bench{uuid.uuid4().hex[:6]}",
                config_addr=f"127.0.0.1:{free_port()}",
                coordinator_addr=f"127.0.0.1:{free_port()}",
                executor_addr=f"127.0.0.1:{free_port()}",
                var_dir=root / "var",
            )
            through = pipeline(settings, args.records, root / "parquet")
        finally:
            if broker is not None:
                broker.stop()
    raw_both = 1 / (1 / produce + 1 / consume)
    print(f"records: {args.records}")
    print(f"raw aiokafka produce         {produce:12,.0f} records/s")
    print(f"raw aiokafka consume         {consume:12,.0f} records/s")
    print(f"raw produce then consume     {raw_both:12,.0f} records/s")
    print(f"headrace pipeline end to end {through:12,.0f} records/s")
    print(f"pipeline / raw produce+consume: {through / raw_both:.2f}")


if __name__ == "__main__":
    main()
