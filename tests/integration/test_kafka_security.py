"""Every kind of Kafka client headrace makes, over the session broker's secure listeners: SASL_SSL
with a SCRAM-SHA-512 login, and mTLS. Topics are created, the topic log appends and replays, a
source task produces and a sink task consumes, the topic-id metadata call is answered, and the
config service's automation agent (faust) answers a command. A wrong password is refused at
once, named, rather than retried until a timeout. A connector's client override still applies
on top of the security settings."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from headrace.core.observability import log
from headrace.core.security.kafkalogin import KafkaLoginError
from headrace.core.security.kafkasecurity import KafkaSecurity
from headrace.core.settings import Settings
from headrace.core.storage.topiclog import LogRecord, TopicLog
from headrace.core.storage.topics import ensure_topic
from headrace.local.stack import Stack
from headrace.runtime.placement import Placement
from headrace.runtime.sink.loop import SinkRunner
from headrace.runtime.source.loop import SourceRunner
from headrace.runtime.topicids import topic_ids
from headrace.sdk import SinkRecord, SinkTask
from tests.integration.conftest import manifest_plugins
from tests.integration.test_source_loop import ListSource, record
from tests.kafkatls import SecureBroker
from tests.support import Deadline, captured_log, eventually

pytestmark = pytest.mark.kafka

STRING = {"key.converter": "string", "value.converter": "string"}
LISTENERS = ("scram", "mtls")


def listener(secure: SecureBroker, name: str) -> tuple[str, KafkaSecurity]:
    return secure.scram() if name == "scram" else secure.mtls()


class RecordSink(SinkTask):
    def __init__(self) -> None:
        self.values: list[Any] = []
        self.largest_put = 0

    async def start(self, config: Mapping[str, str]) -> None:
        pass

    async def put(self, records: list[SinkRecord]) -> None:
        self.values += [r.value for r in records]
        self.largest_put = max(self.largest_put, len(records))


async def run(runner: SourceRunner | SinkRunner, done: Callable[[], bool]) -> None:
    """Runs a task's loop until ``done``; fails with the loop's error if it ends first."""
    await runner.start()
    loop = asyncio.create_task(runner.run())
    try:
        await eventually("the task's records are handled", lambda: done() or loop.done())
    finally:
        runner.request_stop()
        await asyncio.wait({loop}, timeout=30)
        if isinstance(runner, SinkRunner):
            await runner.finish()
        await runner.task.stop()
        await runner.close()
    assert loop.exception() is None


async def the_id_of(topic: str, settings: Settings) -> str:
    consumer = AIOKafkaConsumer(**settings.kafka_client())
    await consumer.start()
    try:
        return (await topic_ids(consumer._client, [topic]))[topic]
    finally:
        await consumer.stop()


@pytest.mark.parametrize("name", LISTENERS)
async def test_every_client_kind_works_over_the_secure_listener(
    name: str, kafka: str, secure_kafka: SecureBroker, cluster: str
) -> None:
    bootstrap, security = listener(secure_kafka, name)
    settings = Settings(bootstrap_servers=bootstrap, cluster=cluster, kafka_security=security)

    # Topic creation and the admin calls behind it.
    log_topic = f"{cluster}-log"
    assert await ensure_topic(bootstrap, log_topic, 2, security=security) == 2

    # The topic log: append (an idempotent producer), then a second log replays it.
    def reader(into: list[LogRecord]) -> TopicLog:
        return TopicLog(bootstrap, log_topic, into.append, security=security)

    written: list[LogRecord] = []
    replayed: list[LogRecord] = []
    first = reader(written)
    await first.start()
    try:
        await first.write_and_read_back([("a", b"1"), ("b", None)])
    finally:
        await first.close()
    second = reader(replayed)
    await second.start(writer=False, follow=False)
    await second.close()
    assert [(r.key, r.value) for r in replayed] == [("a", b"1"), ("b", None)]

    # A source task produces (in transactions, its offsets stored) and a sink task consumes.
    topic = f"{cluster}-data"
    await ensure_topic(bootstrap, topic, 1, security=security)
    source = ListSource([record(topic, i) for i in range(3)])
    placement = Placement("src", 0, {"name": "src", **STRING}, {}, settings)
    await run(SourceRunner(placement, source), lambda: source.commits > 0)
    sink = RecordSink()
    # A client override the connector may set still applies on top of the security settings.
    config = {"name": "snk", "topics": topic, "consumer.override.max.poll.records": "1", **STRING}
    await run(
        SinkRunner(Placement("snk", 0, config, {}, settings), sink), lambda: len(sink.values) >= 3
    )
    assert sink.values == ["v0", "v1", "v2"] and sink.largest_put == 1

    # The topic-id metadata call (Metadata v10 on aiokafka's client): the topic is the same one
    # whichever listener it is asked on.
    plain = Settings(bootstrap_servers=kafka, cluster=cluster)
    assert await the_id_of(topic, settings) == await the_id_of(topic, plain)


async def test_a_wrong_password_is_refused_at_once_and_named(
    secure_kafka: SecureBroker, cluster: str
) -> None:
    bootstrap, security = secure_kafka.scram(password="not-the-password")
    with pytest.raises(KafkaLoginError) as refused:
        await asyncio.wait_for(ensure_topic(bootstrap, f"{cluster}-t", 1, security=security), 30)
    message = str(refused.value)
    assert f"KAFKA_SASL_USERNAME={secure_kafka.scram_user}" in message
    assert "KAFKA_SASL_MECHANISM=SCRAM-SHA-512" in message
    assert "Authentication failed" in message
    assert "not-the-password" not in message


async def test_a_client_without_a_certificate_is_refused_by_the_mtls_listener(
    secure_kafka: SecureBroker, cluster: str
) -> None:
    bootstrap, security = secure_kafka.mtls()
    anonymous = dataclasses.replace(security, ssl_certfile=None, ssl_keyfile=None)
    with pytest.raises(KafkaLoginError, match=r"the TLS handshake with \S+ failed") as refused:
        await asyncio.wait_for(ensure_topic(bootstrap, f"{cluster}-t", 1, security=anonymous), 30)
    assert "CERTIFICATE" in str(refused.value) and "KAFKA_SSL_CERTFILE" in str(refused.value)


def test_the_config_service_answers_automation_over_sasl_ssl(
    secure_kafka: SecureBroker,
    settings_for: Callable[..., Settings],
    tmp_path: Path,
) -> None:
    bootstrap, security = secure_kafka.scram()
    settings = dataclasses.replace(
        settings_for(manifest_plugins(tmp_path / "plugins")),
        bootstrap_servers=bootstrap,
        kafka_security=security,
    )
    stack = Stack(settings)
    stack.start("config")  # its topic log, admin calls and faust agent, all over SASL_SSL
    try:
        asyncio.run(command_answered(settings))
    finally:
        stack.down()


async def command_answered(settings: Settings) -> None:
    """Sends ListConnectors on the requests topic; waits for its answer on the responses."""
    responses = settings.topic("responses")
    await ensure_topic(settings.bootstrap_servers, responses, 4, security=settings.kafka_security)
    consumer = AIOKafkaConsumer(**settings.kafka_client())
    producer = AIOKafkaProducer(**settings.kafka_client())
    await consumer.start()
    await producer.start()
    try:
        partitions = [TopicPartition(responses, p) for p in range(4)]
        consumer.assign(partitions)
        await consumer.seek_to_beginning(*partitions)
        command = {"id": "l1", "method": "ListConnectors", "request": {}}
        await producer.send_and_wait(
            settings.topic("requests"), json.dumps(command).encode(), key=b"l1"
        )
        deadline = Deadline("the answer to l1", 60)
        while True:
            deadline.check()
            for batch in (await consumer.getmany(timeout_ms=500)).values():
                for record in batch:
                    if record.key == b"l1":
                        answer = json.loads(record.value or b"{}")
                        assert answer["code"] == "OK", answer
                        return
    finally:
        await producer.stop()
        await consumer.stop()


async def test_a_cluster_wide_debug_of_the_kafka_client_writes_no_record(
    kafka: str, cluster: str
) -> None:
    """Found by the second perimeter review: ``PUT /admin/loggers/aiokafka?scope=cluster`` with
    DEBUG had every process write each produce request it sent, records and all."""
    with captured_log() as out:
        log.set_level("aiokafka", "DEBUG")
        try:
            producer = AIOKafkaProducer(bootstrap_servers=kafka)
            await producer.start()
            try:
                await producer.send_and_wait(
                    f"{cluster}-debug", b"record-value-5be1", key=b"k-77d0"
                )
            finally:
                await producer.stop()
        finally:
            log.set_level("aiokafka", "WARN")
    said = out.getvalue()
    assert "record-value-5be1" not in said and "k-77d0" not in said
    assert "<ProduceRequest_v" in said  # it was written, as a request's kind
