"""Topic-driven automation: commands written to ``<cluster>-requests`` with a plain Kafka
producer are applied once per request id, through the gRPC API, and answered on
``<cluster>-responses`` in the encoding they came in, also across a restart of the service."""

from __future__ import annotations

import asyncio
import json
import signal
from typing import Any

import grpc
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from headrace.clients.config import ConfigClient
from headrace.core.settings import Settings
from headrace.core.storage.topics import ensure_topic
from headrace.local.stack import Stack
from headrace.v1 import automation_pb2, config_pb2
from tests.support import Deadline

pytestmark = pytest.mark.kafka

ANSWER_WITHIN_S = 60.0


class Automation:
    """A producer of commands and a reader of answers, as an operator's script would be."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.answers: dict[str, list[bytes]] = {}
        self._consumer: AIOKafkaConsumer | None = None
        self._producer: AIOKafkaProducer | None = None

    async def __aenter__(self) -> Automation:
        """Reads the answers written from now on: an answer read is one to a command sent."""
        servers = self.settings.bootstrap_servers
        topic = self.settings.topic("responses")
        await ensure_topic(servers, topic, 4)
        self._producer = AIOKafkaProducer(bootstrap_servers=servers)
        self._consumer = AIOKafkaConsumer(bootstrap_servers=servers)
        await self._producer.start()
        await self._consumer.start()
        partitions = [TopicPartition(topic, p) for p in range(4)]
        self._consumer.assign(partitions)
        await self._consumer.seek_to_end(*partitions)
        for tp in partitions:
            await self._consumer.position(tp)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._producer is not None and self._consumer is not None
        await self._producer.stop()
        await self._consumer.stop()

    async def send(self, key: str, value: bytes) -> None:
        await self.send_all([(key, value)])

    async def send_all(self, records: list[tuple[str, bytes]]) -> None:
        """Writes the records in one burst, in order."""
        assert self._producer is not None
        for key, value in records:
            await self._producer.send(
                self.settings.topic("requests"), value=value, key=key.encode()
            )
        await self._producer.flush()

    async def answer(self, request_id: str, count: int = 1) -> bytes:
        """The ``count``-th answer to ``request_id``."""
        assert self._consumer is not None
        deadline = Deadline(f"answer {count} to {request_id}", ANSWER_WITHIN_S)
        while len(self.answers.get(request_id, [])) < count:
            deadline.check(self.answers)
            for batch in (await self._consumer.getmany(timeout_ms=500)).values():
                for record in batch:
                    key = record.key.decode() if record.key else ""
                    self.answers.setdefault(key, []).append(record.value or b"")
        return self.answers[request_id][count - 1]

    async def call(self, request_id: str, method: str, request: dict[str, Any]) -> dict[str, Any]:
        await self.send(request_id, json_command(request_id, method, request))
        return json.loads(await self.answer(request_id))


def json_command(request_id: str, method: str, request: dict[str, Any]) -> bytes:
    return json.dumps({"id": request_id, "method": method, "request": request}).encode()


GEN = {"connector.class": "Gen", "tasks.max": "1"}


def test_commands_are_applied_once_and_answered_in_their_own_encoding(
    config_service: tuple[Stack, Settings],
) -> None:
    stack, settings = config_service

    async def scenario() -> None:
        async with Automation(settings) as automation:
            created = await automation.call(
                "c1", "CreateConnector", {"name": "auto", "config": GEN}
            )
            assert created["code"] == "OK" and created["response"]["name"] == "auto"

            # The same id again: the first answer, and nothing applied a second time.
            await automation.send("c1", json_command("c1", "CreateConnector", {"name": "auto"}))
            assert json.loads(await automation.answer("c1", 2)) == created

            again = await automation.call("c2", "CreateConnector", {"name": "auto", "config": GEN})
            assert again["code"] == "ALREADY_EXISTS" and "auto" in again["message"]

            pause = automation_pb2.Command(
                id="p1",
                method="PauseConnector",
                request=config_pb2.ConnectorRequest(name="auto").SerializeToString(),
            )
            await automation.send("p1", pause.SerializeToString())
            paused = automation_pb2.CommandResult.FromString(await automation.answer("p1"))
            assert (paused.id, paused.code) == ("p1", "OK")

            for key, poison in [
                ("x1", b"\xff\xfe not a command"),
                ("x2", b'{"id": "x2", "method": "DropEverything"}'),
                ("x3", b'{"id": "x3", "method": "CreateConnector", "request": {"nom": 1}}'),
                ("x4", b'{"id": "x4", "method": "PutTaskConfigs", "request": {}}'),
            ]:
                await automation.send(key, poison)
                refused = json.loads(await automation.answer(key))
                assert refused["code"] == "INVALID_ARGUMENT", key
            # The same request under another record key (another partition, maybe another
            # replica): found applied, answered as it succeeded, not applied a second time.
            elsewhere = json_command("c1", "CreateConnector", {"name": "auto", "config": GEN})
            await automation.send("elsewhere", elsewhere)
            answered = json.loads(await automation.answer("c1", 3))
            assert answered["code"] == "OK" and answered["response"]["name"] == "auto", answered
            listed = await automation.call("l1", "ListConnectors", {})
            assert listed == {
                "id": "l1",
                "code": "OK",
                "message": "",
                "response": {"names": ["auto"]},
            }

        with ConfigClient(settings.config_addr, settings) as client:
            assert client.get("auto").target_state == "PAUSED"
            client.delete("auto")

        stack.stop("config", sig=signal.SIGKILL)
        stack.start("config")

        async with Automation(settings) as automation:
            repeated = await automation.call(
                "c1", "CreateConnector", {"name": "auto", "config": GEN}
            )
            assert repeated == created  # answered from what was kept: not created again
        with (
            ConfigClient(settings.config_addr, settings) as client,
            pytest.raises(grpc.RpcError) as info,
        ):
            client.get("auto")
        assert info.value.code() == grpc.StatusCode.NOT_FOUND

    asyncio.run(scenario())


def test_a_burst_is_applied_at_once_and_in_order_per_connector(
    config_service: tuple[Stack, Settings],
) -> None:
    """Commands keyed by their connector keep their order, however many come together."""
    _, settings = config_service
    names = [f"burst-{i}" for i in range(40)]

    async def scenario() -> None:
        async with Automation(settings) as automation:
            burst = []
            for i, name in enumerate(names):
                create = json_command(f"c{i}", "CreateConnector", {"name": name, "config": GEN})
                burst += [
                    (name, create),
                    (name, json_command(f"p{i}", "PauseConnector", {"name": name})),
                ]
            await automation.send_all(burst)
            for i in range(len(names)):
                for request_id in (f"c{i}", f"p{i}"):
                    got = json.loads(await automation.answer(request_id))
                    assert got["code"] == "OK", got

    asyncio.run(scenario())
    with ConfigClient(settings.config_addr, settings) as client:
        assert set(names) <= set(client.names())
        assert {client.get(n).target_state for n in names} == {"PAUSED"}
