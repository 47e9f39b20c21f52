"""The pure parts of record error handling: the ``errors.*`` keys, the dead letter queue's context
headers, what a skipped record's log line holds, and finding the message behind an errant
record."""

from __future__ import annotations

import asyncio

import pytest
from aiokafka import ConsumerRecord

from headrace.components.converters import JsonConverter, StringConverter
from headrace.components.errorpolicy import (
    PREVIEW_CHARS,
    ErrorPolicy,
    RecordError,
    dlq_headers,
    preview,
    qualified_name,
    sink_record_error,
    skip_log_fields,
)
from headrace.components.transforms import TransformChain
from headrace.core.security import secrets
from headrace.runtime.deadletter import acknowledgement
from headrace.runtime.sink.records import Message, Originals, as_consumed
from headrace.sdk import ConfigException, DataError, SinkRecord, SinkTask, TopicPartition


class Refused(Exception):
    """A sink's own error."""


def failed(stage: str, cause: BaseException, executing: type | None = None) -> RecordError:
    try:
        raise cause
    except BaseException as exc:  # noqa: BLE001 - raised here only to give it a traceback
        return sink_record_error(stage, "orders", 3, 42, exc, executing)


def message(offset: int, value: bytes | None = b"v", topic: str = "orders") -> Message:
    return ConsumerRecord(
        topic=topic,
        partition=3,
        offset=offset,
        timestamp=1700000000000,
        timestamp_type=0,
        key=b"k",
        value=value,
        checksum=None,
        serialized_key_size=1,
        serialized_value_size=1,
        headers=[],
    )


def test_the_context_headers_are_connects_full_set() -> None:
    error = failed("task put", Refused("row too wide"), SinkTask)
    headers = dict(dlq_headers(error, "orders", 3, 42, "c", 7))
    trace = headers.pop("__connect.errors.exception.stacktrace").decode()
    assert {k: v.decode() for k, v in headers.items()} == {
        "__connect.errors.topic": "orders",
        "__connect.errors.partition": "3",
        "__connect.errors.offset": "42",
        "__connect.errors.connector.name": "c",
        "__connect.errors.task.id": "7",
        "__connect.errors.stage": "TASK_PUT",
        "__connect.errors.class.name": "headrace.sdk.task.SinkTask",
        "__connect.errors.exception.class.name": f"{__name__}.Refused",
        "__connect.errors.exception.message": "row too wide",
    }
    assert trace.startswith("Traceback (most recent call last):")
    assert "raise cause" in trace and trace.endswith(f"{__name__}.Refused: row too wide\n")


@pytest.mark.parametrize(
    ("stage", "executing", "connect_stage"),
    [
        ("key converter", StringConverter, "KEY_CONVERTER"),
        ("value converter", JsonConverter, "VALUE_CONVERTER"),
        ("transform", TransformChain, "TRANSFORMATION"),
    ],
)
def test_each_stage_has_connects_name_and_its_class(
    stage: str, executing: type, connect_stage: str
) -> None:
    headers = dict(dlq_headers(failed(stage, DataError("bad"), executing), "o", 0, 1, "c", 0))
    assert headers["__connect.errors.stage"] == connect_stage.encode()
    assert headers["__connect.errors.class.name"] == qualified_name(executing).encode()
    assert headers["__connect.errors.exception.class.name"] == b"headrace.sdk.errors.DataError"
    assert headers["__connect.errors.exception.message"] == b"bad"


def test_a_builtin_exception_is_named_as_python_prints_it_and_an_unknown_class_not_at_all() -> None:
    headers = dict(dlq_headers(failed("value converter", ValueError("")), "o", 0, 1, "c", 0))
    assert headers["__connect.errors.exception.class.name"] == b"ValueError"
    assert headers["__connect.errors.exception.message"] == b""
    assert "__connect.errors.class.name" not in headers


def test_the_error_policy_reads_every_errors_key() -> None:
    assert ErrorPolicy.from_config({}) == ErrorPolicy()
    assert not ErrorPolicy().log_errors  # Connect's default: tolerated errors are only counted
    policy = ErrorPolicy.from_config(
        {
            "errors.tolerance": "all",
            "errors.log.enable": "true",
            "errors.log.include.messages": "TRUE",
            "errors.deadletterqueue.topic.name": " dlq ",
            "errors.deadletterqueue.context.headers.enable": "true",
            "errors.deadletterqueue.topic.replication.factor": "2",
        }
    )
    assert policy == ErrorPolicy(
        tolerate_all=True,
        dlq_topic="dlq",
        dlq_context_headers=True,
        log_errors=True,
        log_messages=True,
        dlq_replication_factor=2,
    )


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("errors.tolerance", "some"),
        ("errors.log.enable", "yes"),
        ("errors.log.include.messages", "1"),
        ("errors.deadletterqueue.topic.replication.factor", "0"),
        ("errors.deadletterqueue.topic.replication.factor", "-1"),
        ("errors.deadletterqueue.topic.replication.factor", "three"),
        ("errors.deadletterqueue.topic.replication.factor", "40000"),
    ],
)
def test_the_error_policy_refuses_what_connect_would_refuse(key: str, value: str) -> None:
    with pytest.raises(ConfigException, match=key.replace(".", r"\.")):
        ErrorPolicy.from_config({key: value})


def test_a_skipped_record_is_placed_and_shown_only_when_messages_are_included() -> None:
    error = failed("value converter", DataError("not JSON"), JsonConverter)
    terse = skip_log_fields(error, ErrorPolicy(log_errors=True), message(42, b"{oops"))
    assert terse == {
        "stage": "VALUE_CONVERTER",
        "executing": "headrace.components.converters.jsonconv.JsonConverter",
        "error": "not JSON",
        "error_class": "headrace.sdk.errors.DataError",
    }
    full = skip_log_fields(
        error, ErrorPolicy(log_errors=True, log_messages=True), message(42, b"{oops")
    )
    assert full == {
        **terse,
        "topic": "orders",
        "partition": 3,
        "offset": 42,
        "key": "k",
        "value": "{oops",
    }


def test_a_preview_is_text_cut_to_a_readable_length() -> None:
    assert preview(None) is None
    assert preview(b"") == ""
    assert preview("grüße".encode()) == "grüße"
    assert preview(b"\xff\x00") == "\\xff\x00"
    long = b"x" * 5000
    assert preview(long) == "x" * PREVIEW_CHARS + "... (5000 bytes)"
    wide = "é".encode() * PREVIEW_CHARS  # short in characters, long in bytes
    assert preview(wide) == "é" * PREVIEW_CHARS
    assert preview(wide + b"!") == "é" * PREVIEW_CHARS + f"... ({2 * PREVIEW_CHARS + 1} bytes)"


async def test_an_acknowledgement_follows_the_send_and_drops_its_result() -> None:
    assert acknowledgement(None).done()
    sent: asyncio.Future[object] = asyncio.get_running_loop().create_future()
    done = acknowledgement(sent)
    assert not done.done()
    sent.set_result("metadata")
    await done
    assert done.result() is None
    failing: asyncio.Future[object] = asyncio.get_running_loop().create_future()
    refused = acknowledgement(failing)
    failing.set_exception(Refused("broker said no"))
    with pytest.raises(Refused):
        await refused


def record(offset: int, topic: str = "orders", value: str = "v") -> SinkRecord:
    return SinkRecord(topic=topic, partition=3, offset=offset, key="k", value=value)


def test_the_message_behind_a_record_is_found_fetch_by_fetch() -> None:
    tp = TopicPartition("orders", 3)
    first, second = [message(0), message(2), message(5)], [message(6), message(7)]
    moved = message(9)
    originals = (
        Originals().with_fetch({tp: first}, {}).with_fetch({tp: second}, {("renamed", 3, 9): moved})
    )
    assert originals.find(record(5)) is first[2]
    assert originals.find(record(7)) is second[1]
    assert originals.find(record(9, topic="renamed")) is moved
    assert originals.find(record(1)) is None  # a gap: compacted away, or never there
    assert originals.find(record(9)) is None
    assert originals.find(record(0, topic="other")) is None
    assert originals.without({tp}) == Originals()
    assert originals.without({TopicPartition("other", 0)}) == originals
    assert originals.without(None) == Originals()


def test_a_record_without_a_known_message_goes_through_the_converters() -> None:
    plain = JsonConverter({"schemas.enable": "false"})
    made = SinkRecord(
        topic="orders",
        partition=3,
        offset=8,
        key="k",
        value={"id": 1},
        timestamp=None,
        headers=(("h", "v"), ("b", b"\x00")),
    )
    consumed = as_consumed(made, plain, plain)
    assert (consumed.topic, consumed.partition, consumed.offset) == ("orders", 3, 8)
    assert (consumed.key, consumed.value) == (b'"k"', b'{"id":1}')
    assert consumed.headers == [("h", b"v"), ("b", b"\x00")]
    assert consumed.timestamp == -1  # Kafka's "no timestamp"


def test_dead_letter_headers_hide_the_secrets_this_process_holds() -> None:
    secrets.register(["dlq-h1dden-pw"])
    try:
        raise DataError("cannot reach db as admin:dlq-h1dden-pw@db")
    except DataError as exc:
        error = RecordError("the record failed", "convert", exc)
    headers = dict(dlq_headers(error, "orders", 3, 42, "c", 0))
    message = headers["__connect.errors.exception.message"].decode()
    trace = headers["__connect.errors.exception.stacktrace"].decode()
    assert message == "cannot reach db as admin:[hidden]@db"
    assert "dlq-h1dden-pw" not in trace and "admin:[hidden]@db" in trace
