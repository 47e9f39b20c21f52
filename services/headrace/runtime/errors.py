"""Error handling for records in the task runner: ``errors.tolerance`` and the dead letter queue.

A record that cannot be converted fails its task with a RecordError naming where the record came
from (topic, partition, offset for sinks; source partition and target topic for sources), unless
``errors.tolerance=all``. Then the record is skipped, counted and logged (``record_skipped``) and,
for sinks with ``errors.deadletterqueue.topic.name`` set, its original bytes go to that topic with
headers saying why (Connect's ``__connect.errors.*`` headers, when
``errors.deadletterqueue.context.headers.enable=true``). Nothing is dropped silently.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from headrace.sdk.errors import ConfigException, ConnectError


class RecordError(ConnectError):
    """A record failed a conversion step; the message says which record and why."""

    def __init__(self, message: str, stage: str, cause: BaseException) -> None:
        super().__init__(message)
        self.stage = stage
        self.cause = cause


class TaskFenced(ConnectError):
    """A task's writes were refused because a newer instance of it started elsewhere."""


def sink_record_error(
    stage: str, topic: str, partition: int, offset: int, exc: BaseException
) -> RecordError:
    """A RecordError for a consumed record, e.g. stage ``value converter``."""
    return RecordError(
        f"{stage} failed for the record at topic {topic} partition {partition} "
        f"offset {offset}: {exc}",
        stage,
        exc,
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


@dataclass(frozen=True)
class ErrorPolicy:
    """What to do with a record that cannot be converted, from the connector config."""

    tolerate_all: bool = False
    dlq_topic: str | None = None
    dlq_context_headers: bool = False
    log_messages: bool = False

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
            log_messages=_flag(config, "errors.log.include.messages"),
        )


def _flag(config: Mapping[str, str], key: str) -> bool:
    raw = config.get(key, "false").strip().lower()
    if raw not in ("true", "false"):
        raise ConfigException(f"{key} must be true or false, not {raw!r}")
    return raw == "true"


def dlq_headers(
    error: RecordError, topic: str, partition: int, offset: int, connector: str, task: int
) -> list[tuple[str, bytes]]:
    """Connect's dead-letter context headers for one failed record."""
    cause = error.cause
    values = {
        "__connect.errors.topic": topic,
        "__connect.errors.partition": str(partition),
        "__connect.errors.offset": str(offset),
        "__connect.errors.connector.name": connector,
        "__connect.errors.task.id": str(task),
        "__connect.errors.stage": error.stage.upper().replace(" ", "_"),
        "__connect.errors.exception.class.name": type(cause).__qualname__,
        "__connect.errors.exception.message": str(error),
    }
    return [(k, v.encode()) for k, v in values.items()]
