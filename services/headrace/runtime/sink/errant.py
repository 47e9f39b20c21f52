"""Records a sink task's stages refused, or the task reported as errant
(``context.errant_record_reporter``): under ``errors.tolerance=none`` the first fails the task,
even if the task caught what ``report`` raised (as Connect does); under ``all`` each is skipped:
counted, logged if ``errors.log.enable`` says so, and sent to the dead letter queue, if there
is one, with the message it was consumed as.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from structlog.typing import FilteringBoundLogger

from headrace.components.converters import Converter, HeaderConverter
from headrace.components.errorpolicy import (
    ErrorPolicy,
    RecordError,
    sink_record_error,
    skip_log_fields,
)
from headrace.runtime.deadletter import DeadLetterQueue, acknowledgement
from headrace.runtime.sink.records import Message, as_consumed
from headrace.sdk.records import SinkRecord


class Errant:
    def __init__(
        self,
        policy: ErrorPolicy,
        task_type: type,
        log: FilteringBoundLogger,
        skip: Callable[[], int],
        original: Callable[[SinkRecord], Message | None],
        converters: tuple[Converter, Converter, HeaderConverter],
    ) -> None:
        """``skip`` counts a record skipped and says how many so far; ``original``, the message
        a record the task holds was consumed as, if it is still known; ``converters``, those
        that make a record into a message again when it is not."""
        self._policy = policy
        self._task_type = task_type
        self._log = log
        self._skip = skip
        self._original = original
        self._converters = converters
        self._first: RecordError | None = None  # reported under errors.tolerance=none
        self.dlq: DeadLetterQueue | None = None  # once the task's loop may run

    async def report(self, record: SinkRecord, error: BaseException) -> asyncio.Future[None]:
        """What ``errant_record_reporter.report`` does: fails the task, or skips the record
        with the message it was consumed as."""
        where = (record.topic, record.partition, record.offset)
        failure = (
            error  # a stage failed where a converted task's records were made
            if isinstance(error, RecordError)
            else sink_record_error("task put", *where, error, self._task_type)
        )
        if not self._policy.tolerate_all:
            self._first = self._first or failure
            if failure is error:
                raise failure
            raise failure from error
        message = self._original(record)
        if message is None:
            message = as_consumed(record, *self._converters)
        return acknowledgement(await self.tolerate(message, failure))

    def raise_reported(self) -> None:
        """Fails the loop with a record the task reported under ``errors.tolerance=none``, even
        if the task caught what ``report`` raised (as Connect does)."""
        if self._first is not None:
            raise self._first

    async def tolerate(self, message: Message, error: RecordError) -> asyncio.Future[Any] | None:
        """Skips a record under ``errors.tolerance=all``: counts it, logs it if
        ``errors.log.enable`` says so, and sends it to the dead letter queue, if there is one
        (the future of that send)."""
        skipped = self._skip()
        if self._policy.log_errors:
            self._log.error(
                "record_skipped",
                dead_letter_topic=self._policy.dlq_topic,
                skipped_total=skipped,
                **skip_log_fields(error, self._policy, message),
            )
        return None if self.dlq is None else await self.dlq.send(message, error)

    async def acknowledged(self) -> None:
        if self.dlq is not None:
            await self.dlq.acknowledged()

    async def close(self) -> None:
        if self.dlq is not None:
            await self.dlq.close()
            self.dlq = None
