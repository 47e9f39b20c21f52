"""The example plugins of ``docs/writing-a-connector.md`` (``docs/example/``), run as the guide
says, in real plugin host processes against the real broker the suite starts.

What a user of the guide would check: the lines of the files arrive in Kafka, one record each,
with the content the guide shows; a restarted source task goes on where it stopped; a file that
appears is picked up through a task reconfiguration; the sink's count files hold every word once,
even after its consumer group's offsets were reset; a bad config is refused key by key; a record
without text goes to the dead letter queue, or fails the task by default. The connector configs
are the guide's own, from ``docs/example-connectors/``, with a topic of the test's own. No fixed
sleeps: every wait polls a condition under a deadline.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import grpc
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka import TopicPartition as KafkaTopicPartition

from headrace.core.storage.topics import ensure_topic
from headrace.v1 import plugin_pb2 as pb
from tests.support import (
    Host,
    committed,
    consume,
    eventually,
    next_event,
    plugin_host,
    start_all,
    start_task,
)

pytestmark = pytest.mark.kafka

DOCS = Path(__file__).parents[2] / "docs"
SOURCE = DOCS / "example" / "text-lines" / "1.0.0" / "manifest.json"
SINK = DOCS / "example" / "word-count" / "1.0.0" / "manifest.json"
CONNECTORS = DOCS / "example-connectors"


def example_config(file: str, **overrides: str) -> dict[str, str]:
    """A connector config of the guide, its name included, with ``overrides`` on top."""
    body = json.loads((CONNECTORS / file).read_text())
    return {"name": body["name"], **body["config"], **overrides}


def payloads(records: list[Any]) -> list[tuple[str, str, int, str]]:
    """(key, file, line, text) of each record, from the JSON converter's envelope, sorted."""
    found = []
    for r in records:
        payload = json.loads(r.value)["payload"]
        found.append((r.key.decode(), payload["file"], payload["line"], payload["text"]))
    return sorted(found)


def totals(folder: Path) -> tuple[int, Counter[str]]:
    """What the sink's count files say, over every partition: records and word counts."""
    records, words = 0, Counter[str]()
    for path in folder.glob("counts-*.json"):
        counts = json.loads(path.read_text())
        records += counts["records"]
        words.update(counts["words"])
    return records, words


def counted(folder: Path, records: int, words: Counter[str]) -> bool:
    return totals(folder) == (records, words)


async def restart_task(
    host: Host, name: str, task: int, config: dict[str, str], task_config: dict[str, str]
) -> None:
    """Stops one task as a rebalance would, and starts it again with ``task_config``."""
    await host.stub.StopTask(pb.StopRequest(connector=name, task=task, deleted=False))
    await host.stub.StartTask(start_task(name, task, config, pb.TaskConfig(config=task_config)))


async def reset_group(kafka: str, group: str, topic: str) -> None:
    """Commits offset 0 for the (empty) consumer group, as an operator resetting it would."""
    consumer = AIOKafkaConsumer(bootstrap_servers=kafka, group_id=group, enable_auto_commit=False)
    await consumer.start()
    try:
        tp = KafkaTopicPartition(topic, 0)
        consumer.assign([tp])
        await consumer.commit({tp: 0})
    finally:
        await consumer.stop()


async def produce(kafka: str, topic: str, value: bytes) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=kafka)
    await producer.start()
    try:
        await producer.send_and_wait(topic, value=value, key=b"elsewhere")
    finally:
        await producer.stop()


@pytest.fixture
def files(tmp_path: Path) -> Path:
    """The one folder the plugin hosts allow files in, with the guide's ``books`` in it."""
    folder = (tmp_path / "files").resolve()
    (folder / "books").mkdir(parents=True)
    return folder


async def test_lines_arrive_once_and_are_counted_once(
    kafka: str, cluster: str, tmp_path: Path, files: Path
) -> None:
    books, topic = files / "books", f"{cluster}-lines"
    (books / "a.txt").write_text("The cat sat\non the mat.\n")
    (books / "b.txt").write_text("The end\n")
    (books / "notes.md").write_text("not a text file\n")  # file.pattern leaves it out
    await ensure_topic(kafka, topic, 1)  # one partition: a reset group would re-read in order
    source_config = example_config(
        "text-lines.json", topic=topic, **{"directory.poll.interval.ms": "200"}
    )
    sink_config = example_config(
        "word-count.json", topics=topic, **{"errors.deadletterqueue.topic.name": f"{topic}-dlq"}
    )
    env = {"HEADRACE_FILE_ROOTS": str(files)}
    async with (
        plugin_host(SOURCE, kafka, cluster, tmp_path, env=env) as source,
        plugin_host(SINK, kafka, cluster, tmp_path, env=env) as sink,
    ):
        # Two files, two tasks: one file each.
        task_configs = await start_all(source, "lines", source_config)
        assert [json.loads(c["task.files"]) for c in task_configs] == [["a.txt"], ["b.txt"]]
        records = await consume(kafka, topic, 3)
        assert payloads(records) == [
            ("a.txt", "a.txt", 1, "The cat sat"),
            ("a.txt", "a.txt", 2, "on the mat."),
            ("b.txt", "b.txt", 1, "The end"),
        ]
        envelope = json.loads(records[0].value)
        assert envelope["schema"]["name"] == "headrace.example.Line"
        read_at = next(f for f in envelope["schema"]["fields"] if f["field"] == "read_at")
        assert read_at["name"] == "org.apache.kafka.connect.data.Timestamp"
        assert isinstance(envelope["payload"]["read_at"], int)

        sink_task_configs = await start_all(sink, "counts", sink_config)
        words = Counter(the=3, cat=1, sat=1, on=1, mat=1, end=1)
        await eventually("the first counts", lambda: counted(files / "counts", 3, words))
        assert json.loads((files / "counts" / "_owner.json").read_text()) == {"connector": "counts"}

        # A restarted source task goes on after the last line it emitted.
        await source.stub.StopTask(pb.StopRequest(connector="lines", task=0, deleted=False))
        with (books / "a.txt").open("a") as f:
            f.write("A new line\n")
        await source.stub.StartTask(
            start_task("lines", 0, source_config, pb.TaskConfig(config=task_configs[0]))
        )
        records = await consume(kafka, topic, 4)
        assert len(await committed(kafka, topic)) == 4  # lines 1 and 2 were not sent again
        assert ("a.txt", "a.txt", 3, "A new line") in payloads(records)
        words.update(a=1, new=1, line=1)
        await eventually("the new line counted", lambda: counted(files / "counts", 4, words))

        # The sink keeps its position in its files: with its group's offsets reset to 0, a
        # restarted task still counts nothing twice.
        await sink.stub.StopTask(pb.StopRequest(connector="counts", task=0, deleted=False))
        await reset_group(kafka, f"{cluster}-connect-counts", topic)
        await restart_task(sink, "counts", 0, sink_config, sink_task_configs[0])

        # A new file: the connector asks for new task configs, and its lines follow.
        watch = source.stub.Watch(pb.WatchRequest())
        await next_event(watch, lambda e: True)  # the running units first: the watch is on
        (books / "c.txt").write_text("Cats and dogs\n")
        await next_event(watch, lambda e: e.connector == "lines" and e.reconfiguration_requested)
        watch.cancel()
        started = await source.stub.StartConnector(
            pb.StartConnectorRequest(name="lines", config=source_config)
        )
        new_configs = [dict(t.config) for t in started.tasks]
        assert [json.loads(c["task.files"]) for c in new_configs] == [["a.txt", "c.txt"], ["b.txt"]]
        for task, task_config in enumerate(new_configs):
            await restart_task(source, "lines", task, source_config, task_config)
        records = await consume(kafka, topic, 5)
        assert len(await committed(kafka, topic)) == 5
        assert ("c.txt", "c.txt", 1, "Cats and dogs") in payloads(records)
        words.update(cats=1, dogs=1, **{"and": 1})
        await eventually("every line counted once", lambda: counted(files / "counts", 5, words))

        # Deleting the sink gives its folder up, and leaves the counts.
        await sink.stub.StopTask(pb.StopRequest(connector="counts", task=0, deleted=True))
        await sink.stub.StopConnector(pb.StopRequest(connector="counts", task=-1, deleted=True))
        assert not (files / "counts" / "_owner.json").exists()
        assert counted(files / "counts", 5, words)


async def test_a_bad_config_is_refused_key_by_key(
    kafka: str, cluster: str, tmp_path: Path, files: Path
) -> None:
    env = {"HEADRACE_FILE_ROOTS": str(files)}
    async with (
        plugin_host(SOURCE, kafka, cluster, tmp_path, env=env) as source,
        plugin_host(SINK, kafka, cluster, tmp_path, env=env) as sink,
    ):
        # The ConfigDef's checks: the required keys, each with its error.
        infos = await source.stub.Validate(pb.ValidateRequest(config={"name": "bad"}))
        errors = {c.value.name: list(c.value.errors) for c in infos.configs if c.value.errors}
        assert errors == {
            key: [f'Missing required configuration "{key}" which has no default value.']
            for key in ("directory", "topic")
        }
        assert infos.error_count == 2

        # A validator, and the connector's own check across keys, with the recommender's say.
        config = {"directory": "books", "topic": "t", "value.format": "xml"}
        infos = await source.stub.Validate(pb.ValidateRequest(config=config))
        [value_format] = [c.value for c in infos.configs if c.value.name == "value.format"]
        assert value_format.errors == [
            "Invalid value xml for configuration value.format: must be one of struct, text"
        ]
        config = {**config, "value.format": "text", "struct.name": "Line"}
        infos = await source.stub.Validate(pb.ValidateRequest(config=config))
        [struct_name] = [c.value for c in infos.configs if c.value.name == "struct.name"]
        assert struct_name.errors == ["struct.name applies only with value.format=struct"]
        assert not struct_name.visible
        [definition] = [c.definition for c in infos.configs if c.definition.name == "value.format"]
        assert list(definition.dependents) == ["struct.name"]

        # The same checks refuse a start; so does a folder outside the allowed ones.
        for config, expected in [
            ({"topic": "t"}, 'Missing required configuration "directory"'),
            ({"topic": "t", "directory": "/etc"}, "outside the allowed folders"),
            ({"topic": "t", "directory": "missing"}, "is not a folder"),
        ]:
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await source.stub.StartConnector(
                    pb.StartConnectorRequest(name="bad", config=config)
                )
            assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert expected in (refused.value.details() or "")

        infos = await sink.stub.Validate(pb.ValidateRequest(config={"min.word.length": "0"}))
        errors = {c.value.name: list(c.value.errors) for c in infos.configs if c.value.errors}
        assert errors == {
            "output": ['Missing required configuration "output" which has no default value.'],
            "min.word.length": [
                "Invalid value 0 for configuration min.word.length: must be in [1, 1000]"
            ],
        }

        # One output folder, one connector.
        first = {"topics": f"{cluster}-x", "output": "shared"}
        await start_all(sink, "first", first)
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await sink.stub.StartConnector(pb.StartConnectorRequest(name="second", config=first))
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "holds the counts of connector 'first'" in (refused.value.details() or "")


async def test_a_record_without_text_is_a_dead_letter_or_fails_the_task(
    kafka: str, cluster: str, tmp_path: Path, files: Path
) -> None:
    books, topic, dlq = files / "books", f"{cluster}-lines", f"{cluster}-dlq"
    await ensure_topic(kafka, topic, 1)
    # First in the topic: a record the JSON converter reads, but whose value has no text.
    await produce(kafka, topic, b'{"schema": {"type": "int32", "optional": false}, "payload": 7}')
    (books / "a.txt").write_text("one two\nthree\n")
    source_config = example_config("text-lines.json", topic=topic, **{"value.format": "text"})
    tolerant = example_config(
        "word-count.json", topics=topic, **{"errors.deadletterqueue.topic.name": dlq}
    )
    strict = {
        k: v for k, v in tolerant.items() if not k.startswith("errors.") and k != "output"
    } | {"name": "strict", "output": "strict"}
    env = {"HEADRACE_FILE_ROOTS": str(files)}
    async with (
        plugin_host(SOURCE, kafka, cluster, tmp_path, env=env) as source,
        plugin_host(SINK, kafka, cluster, tmp_path, env=env) as sink,
    ):
        await start_all(source, "lines", source_config)  # text values: the batch API
        records = await consume(kafka, topic, 3)
        assert sorted(json.loads(r.value)["payload"] for r in records[1:]) == ["one two", "three"]

        # By default (errors.tolerance=none) the record without text fails the task, saying why.
        watch = sink.stub.Watch(pb.WatchRequest())
        await start_all(sink, "strict", strict)
        failed = await next_event(watch, lambda e: e.connector == "strict" and e.state == "FAILED")
        watch.cancel()
        assert "a value without text: int" in failed.trace

        # With errors.tolerance=all it goes to the dead letter queue, as does one the
        # converter refuses, and the lines are counted.
        await produce(kafka, topic, b"not json")
        await start_all(sink, "counts", tolerant)
        words = Counter(one=1, two=1, three=1)
        await eventually("the lines counted", lambda: counted(files / "counts", 2, words))
        dead = await consume(kafka, dlq, 2)
        stages = {dict(r.headers)["__connect.errors.stage"]: r.value for r in dead}
        assert stages == {
            b"TASK_PUT": b'{"schema": {"type": "int32", "optional": false}, "payload": 7}',
            b"VALUE_CONVERTER": b"not json",
        }
