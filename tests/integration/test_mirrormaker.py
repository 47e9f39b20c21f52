"""MirrorMaker 2's MirrorSourceConnector (Kafka's connect-mirror, installed from Maven) in a plugin
process with its JVM host: it copies a topic of the suite's broker into its remote topic, keys,
values and headers as they were, and its offsets are stored in Connect's shape."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from aiokafka import AIOKafkaProducer

from headrace.core.storage.topics import ensure_topic
from headrace.isolation import jvm
from headrace.isolation.plugins import discover
from headrace.local.kafka import KAFKA_VERSION
from headrace.v1 import plugin_pb2 as pb
from tests.support import (
    consume,
    eventually,
    next_event,
    plugin_host,
    start_all,
    stored_offsets,
)

pytestmark = pytest.mark.kafka

MIRROR = "org.apache.kafka.connect.mirror.MirrorSourceConnector"
BYTES = "org.apache.kafka.connect.converters.ByteArrayConverter"


@pytest.fixture(scope="module")
def mirror(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """MirrorMaker 2's connectors at the broker's version, installed from Maven: the source's
    manifest."""
    entry = tmp_path_factory.mktemp("mirror")
    jvm.install(f"org.apache.kafka:connect-mirror:{KAFKA_VERSION}", entry)
    catalog = discover([entry], tmp_path_factory.mktemp("jvm-plugins"))
    [plugin] = [p for p in catalog.plugins if p.class_name == MIRROR]
    yield plugin.manifest


async def test_mirror_source_copies_a_topic_with_its_headers_and_stores_its_offsets(
    kafka: str, cluster: str, tmp_path: Path, mirror: Path
) -> None:
    topic, n = f"{cluster}-orders", 200
    await ensure_topic(kafka, topic, 2)
    producer = AIOKafkaProducer(bootstrap_servers=kafka)
    await producer.start()
    try:
        for i in range(n):
            await producer.send(
                topic,
                key=f"k{i}".encode(),
                value=f"order {i}".encode(),
                partition=i % 2,
                headers=[("trace", f"t{i}".encode()), ("empty", b"")],
            )
        await producer.flush()
    finally:
        await producer.stop()
    config = {
        "name": "mm2",
        "connector.class": MIRROR,
        "tasks.max": "1",
        "source.cluster.alias": "src",
        "target.cluster.alias": "dst",
        "source.cluster.bootstrap.servers": kafka,
        "target.cluster.bootstrap.servers": kafka,
        "topics": topic,
        "replication.factor": "1",
        "offset-syncs.topic.replication.factor": "1",
        "offset-syncs.topic.location": "target",
        "sync.topic.acls.enabled": "false",
        "key.converter": BYTES,
        "value.converter": BYTES,
        "header.converter": BYTES,
    }
    async with plugin_host(mirror, kafka, cluster, tmp_path) as host:
        watch = host.stub.Watch(pb.WatchRequest())
        if not await start_all(host, "mm2", config):
            # It found no partition yet: it asks for its task configs again once it does, as
            # it would of Connect's worker; the worker then starts the tasks.
            await next_event(watch, lambda e: e.reconfiguration_requested, within=120)
            assert await start_all(host, "mm2", config)
        copied = await consume(kafka, f"src.{topic}", n, within=120)
        watch.cancel()
    got = {
        (r.partition, r.key, r.value, tuple((k, bytes(v)) for k, v in r.headers)) for r in copied
    }
    assert got == {
        (
            i % 2,
            f"k{i}".encode(),
            f"order {i}".encode(),
            (("trace", f"t{i}".encode()), ("empty", b"")),
        )
        for i in range(n)
    }

    async def both_stored() -> dict[str, dict[str, object]] | None:
        # Only its topic's: MirrorMaker replicates any heartbeats topic of the source cluster
        # too, and the suite's broker has one once a test ran MirrorMaker's heartbeats.
        found = await stored_offsets(kafka, cluster, "mm2")
        mine = {k: v for k, v in found.items() if f'"topic":"{topic}"' in k}
        return mine if len(mine) == 2 else None

    offsets = await eventually("both partitions' offsets stored", both_stored)
    assert offsets == {
        f'{{"cluster":"src","partition":{p},"topic":"{topic}"}}': {"offset": n // 2 - 1}
        for p in (0, 1)
    }
