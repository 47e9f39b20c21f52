"""Error handling for records in the task runner: ``errors.tolerance``, the error log and the dead
letter queue.

A record that cannot be converted or transformed fails its task with a RecordError naming where
the record came from (topic, partition, offset for sinks; source partition and target topic for
sources), unless ``errors.tolerance=all``; so does a record a sink task reports as errant
(``context.errant_record_reporter``, stage ``TASK_PUT``). Under ``errors.tolerance=all`` the record
is skipped and counted; with ``errors.log.enable=true`` each one is also logged at ERROR
(``record_skipped``: the stage and the error, and with ``errors.log.include.messages=true`` where
the record came from and a preview of its key and value). Nothing is dropped silently.

The dead letter queue (sinks, ``errors.deadletterqueue.topic.name``): a topic of one partition,
created if missing with ``errors.deadletterqueue.topic.replication.factor`` replicas (min(3,
brokers) when the key is not set, so the embedded single broker works). Each record written there
is a skipped record's original key, value, headers and timestamp, plus Connect's
``__connect.errors.*`` headers saying why when
``errors.deadletterqueue.context.headers.enable=true``. Only the sink task that consumed the
record writes it, and before the offsets past it are committed: at least once, so a task that
fails before its commit may write a record again when it reads it again.
"""

from __future__ import annotations

import traceback
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from headrace.core.security import secrets
from headrace.core.storage.fetch import Message
from headrace.sdk.errors import ConfigException, ConnectError

PREVIEW_CHARS = 200
"""How much of a key or value ``errors.log.include.messages`` logs: enough to recognise it."""

_CONNECT_STAGES = {"transform": "TRANSFORMATION"}
"""Our stage names whose Connect name is not just their upper-case form."""


class RecordError(ConnectError):
    """A record failed a step of its way; the message says which record and why.

    ``executing`` is the fully qualified name of the class that was at work (the converter, the
    transformation chain, the sink task), for the dead letter queue's headers.
    """

    def __init__(self, message: str, stage: str, cause: BaseException, executing: str = "") -> None:
        super().__init__(message)
        self.stage = stage
        self.cause = cause
        self.executing = executing


class TaskFenced(ConnectError):
    """A task's writes were refused because a newer instance of it started elsewhere."""


def qualified_name(cls: type) -> str:
    """A class's name with its module (as Python's tracebacks print it: builtins bare), the
    counterpart of Java's ``Class.getName`` in Connect's headers."""
    if cls.__module__ in ("builtins", "__main__"):
        return cls.__qualname__
    return f"{cls.__module__}.{cls.__qualname__}"


def sink_record_error(
    stage: str,
    topic: str,
    partition: int,
    offset: int,
    exc: BaseException,
    executing: type | None = None,
) -> RecordError:
    """A RecordError for a consumed record, e.g. stage ``value converter``."""
    return RecordError(
        f"{stage} failed for the record at topic {topic} partition {partition} "
        f"offset {offset}: {exc}",
        stage,
        exc,
        "" if executing is None else qualified_name(executing),
    )


def source_record_error(
    stage: str, source_partition: Mapping[str, object], topic: str, exc: BaseException
) -> RecordError:
    """A RecordError for a polled record on its way to ``topic``."""
    return RecordError(
        f"{stage} failed for a record from source partition {dict(source_partition)} "
        f"to topic {topic}: {exc}",
        stage,
        exc,
    )


def connect_stage(stage: str) -> str:
    """Connect's name of a stage (``value converter`` -> ``VALUE_CONVERTER``)."""
    return _CONNECT_STAGES.get(stage, stage.upper().replace(" ", "_"))


@dataclass(frozen=True)
class ErrorPolicy:
    """What to do with a record that fails, from the connector config.

    ``dlq_replication_factor`` None: the key is not set, and a missing dead letter queue topic
    gets the replication factor of every topic headrace creates.
    """

    tolerate_all: bool = False
    dlq_topic: str | None = None
    dlq_context_headers: bool = False
    log_errors: bool = False
    log_messages: bool = False
    dlq_replication_factor: int | None = None

    @classmethod
    def from_config(cls, config: Mapping[str, str]) -> ErrorPolicy:
        """Reads the ``errors.*`` keys; ConfigException for a value Connect would reject."""
        tolerance = config.get("errors.tolerance", "none").strip().lower()
        if tolerance not in ("none", "all"):
            raise ConfigException(f"errors.tolerance must be none or all, not {tolerance!r}")
        return cls(
            tolerate_all=tolerance == "all",
            dlq_topic=config.get("errors.deadletterqueue.topic.name", "").strip() or None,
            dlq_context_headers=_flag(config, "errors.deadletterqueue.context.headers.enable"),
            log_errors=_flag(config, "errors.log.enable"),
            log_messages=_flag(config, "errors.log.include.messages"),
            dlq_replication_factor=_replication_factor(config),
        )


def _flag(config: Mapping[str, str], key: str) -> bool:
    raw = config.get(key, "false").strip().lower()
    if raw not in ("true", "false"):
        raise ConfigException(f"{key} must be true or false, not {raw!r}")
    return raw == "true"


def _replication_factor(config: Mapping[str, str]) -> int | None:
    """``errors.deadletterqueue.topic.replication.factor``: a short of at least 1. Connect's
    -1 (the broker's default) is refused: the admin client cannot ask for it."""
    key = "errors.deadletterqueue.topic.replication.factor"
    raw = config.get(key, "").strip()
    if not raw:
        return None
    if not raw.isdecimal() or not 1 <= int(raw) <= 32767:
        raise ConfigException(f"{key} must be a whole number from 1 to 32767, not {raw!r}")
    return int(raw)


def dlq_headers(
    error: RecordError, topic: str, partition: int, offset: int, connector: str, task: int
) -> list[tuple[str, bytes]]:
    """Connect's dead-letter context headers for one failed record: where it was consumed, the
    stage and class that failed, and the cause's class, message and traceback, with every
    secret this process holds hidden."""
    cause = error.cause
    values = {
        "__connect.errors.topic": topic,
        "__connect.errors.partition": str(partition),
        "__connect.errors.offset": str(offset),
        "__connect.errors.connector.name": connector,
        "__connect.errors.task.id": str(task),
        "__connect.errors.stage": connect_stage(error.stage),
        "__connect.errors.class.name": error.executing,
        "__connect.errors.exception.class.name": qualified_name(type(cause)),
        # The record goes to a topic others read: an exception that quotes a secret this
        # process holds (a config's password, a provider's value) says [hidden] there.
        "__connect.errors.exception.message": secrets.mask(str(cause)),
        "__connect.errors.exception.stacktrace": secrets.mask(
            "".join(traceback.format_exception(cause))
        ),
    }
    if not error.executing:
        del values["__connect.errors.class.name"]
    return [(k, v.encode()) for k, v in values.items()]


def preview(data: bytes | None) -> str | None:
    """The start of a key or value as text, for a log line: undecodable bytes escaped, and the
    full length said when it is cut."""
    if data is None:
        return None
    head = data[: PREVIEW_CHARS * 4]  # at least PREVIEW_CHARS characters, whatever the encoding
    text = head.decode("utf-8", errors="backslashreplace")
    if len(head) == len(data) and len(text) <= PREVIEW_CHARS:
        return text
    return f"{text[:PREVIEW_CHARS]}... ({len(data)} bytes)"


def skip_log_fields(error: RecordError, policy: ErrorPolicy, message: Message) -> dict[str, Any]:
    """The fields of a ``record_skipped`` log line (the logger binds connector and task): the
    stage, the class at work and the cause; where the record was consumed and its key and value
    only with ``errors.log.include.messages=true``."""
    fields: dict[str, Any] = {
        "stage": connect_stage(error.stage),
        "executing": error.executing or None,
        "error": str(error.cause),
        "error_class": qualified_name(type(error.cause)),
    }
    if policy.log_messages:
        fields |= {
            "topic": message.topic,
            "partition": message.partition,
            "offset": message.offset,
            "key": preview(message.key),
            "value": preview(message.value),
        }
    return fields
