"""Two config service replicas, real processes on the real broker, side by side: what one wrote
is there on the other once the call returns, and racing creates of one name have one winner, the
first in the configs topic."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grpc
import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition

from headrace.clients.config import ConfigClient
from headrace.core.model import configlog
from headrace.core.model.configstate import ConnectorConfigured
from headrace.core.settings import Settings
from headrace.local.kafka import free_port
from headrace.local.stack import Stack

pytestmark = pytest.mark.kafka

NAMES = [f"race-{i}" for i in range(20)]


@pytest.fixture
def replicas(
    config_service: tuple[Stack, Settings], tmp_path: Path
) -> Iterator[tuple[Settings, Settings]]:
    """The suite's config service and a second replica of it: same cluster, its own ports."""
    _, first = config_service
    second = dataclasses.replace(
        first,
        config_addr=f"127.0.0.1:{free_port()}",
        rest_addr=f"127.0.0.1:{free_port()}",
        var_dir=tmp_path / "replica",
    )
    stack = Stack(second)
    stack.start("config")
    try:
        yield first, second
    finally:
        stack.down()


def create(settings: Settings, name: str, label: str, start: threading.Barrier) -> str:
    """Creates the connector on one replica, at the moment the other replica is asked too; the
    status code it answered."""
    with ConfigClient(settings.config_addr, settings) as client:
        client.names()  # connected before the start
        start.wait()
        try:
            client.create(name, {"connector.class": "Gen", "label": label})
        except grpc.RpcError as exc:
            return exc.code().name
        return "OK"


async def first_creations(settings: Settings) -> dict[str, str]:
    """Per connector, the label of the first config the configs topic holds for it."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=settings.bootstrap_servers, isolation_level="read_committed"
    )
    await consumer.start()
    try:
        tp = TopicPartition(settings.topic("configs"), 0)
        consumer.assign([tp])
        await consumer.seek_to_beginning(tp)
        end = (await consumer.end_offsets([tp]))[tp]
        first: dict[str, str] = {}
        while await consumer.position(tp) < end:
            for record in (await consumer.getmany(tp, timeout_ms=1000)).get(tp, []):
                event = configlog.decode(record.key.decode(), record.value)
                if isinstance(event, ConnectorConfigured):
                    first.setdefault(event.name, event.config["label"])
        return first
    finally:
        await consumer.stop()


def test_racing_creates_have_one_winner_decided_by_the_topic(
    replicas: tuple[Settings, Settings],
) -> None:
    a, b = replicas
    answers = {}
    with ThreadPoolExecutor(max_workers=2) as pool:
        for name in NAMES:
            start = threading.Barrier(2)
            race = (
                pool.submit(create, a, name, "a", start),
                pool.submit(create, b, name, "b", start),
            )
            answers[name] = (race[0].result(), race[1].result())

    for name, pair in answers.items():
        assert sorted(pair) == ["ALREADY_EXISTS", "OK"], name
    topic_first = asyncio.run(first_creations(a))
    for name, (from_a, _) in answers.items():
        winner = "a" if from_a == "OK" else "b"
        assert topic_first[name] == winner, name  # the loser's create never reached the topic
        for replica in (a, b):
            with ConfigClient(replica.config_addr, replica) as client:
                assert client.get(name).config["label"] == winner


def test_what_one_replica_wrote_the_other_answers_at_once(
    replicas: tuple[Settings, Settings],
) -> None:
    a, b = replicas
    with ConfigClient(a.config_addr, a) as on_a, ConfigClient(b.config_addr, b) as on_b:
        for i in range(10):
            writer, reader = (on_a, on_b) if i % 2 == 0 else (on_b, on_a)
            name = f"seen-{i}"
            writer.create(name, {"connector.class": "Gen", "label": "1"})
            assert reader.get(name).config["label"] == "1"
            writer.patch(name, {"label": "2"})
            assert reader.get(name).config["label"] == "2"
            writer.pause(name)
            assert reader.get(name).target_state == "PAUSED"
            writer.delete(name)
            with pytest.raises(grpc.RpcError) as info:
                reader.get(name)
            assert info.value.code() == grpc.StatusCode.NOT_FOUND
        assert on_a.names() == on_b.names()
