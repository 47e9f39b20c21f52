"""What a context offers a plugin when no runtime made it (a stdlib logger, no executor, a
reporter that fails on an errant record), and how a sink context hands a task's requests on."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Set

import pyarrow as pa
import pytest

from headrace.sdk import (
    KAFKA_OFFSET_COLUMN,
    ConnectError,
    ConnectorContext,
    ErrantRecordReporter,
    Executor,
    Logger,
    SinkRecord,
    SinkTaskContext,
    SourceTaskContext,
    TopicPartition,
)
from headrace.sdk.logger import DEFAULT_LOGGER_NAME, StdlibLogger


def test_every_context_logs_through_stdlib_logging_by_default(
    caplog: pytest.LogCaptureFixture,
) -> None:
    loggers: list[Logger] = [
        ConnectorContext("c").logger,
        SourceTaskContext("c", 0).logger,
        SinkTaskContext("c", 1).logger,
    ]
    with caplog.at_level(logging.DEBUG, logger=DEFAULT_LOGGER_NAME):
        for n, logger in enumerate(loggers):
            logger.info("plugin_event", n=n, path="/x")
    assert [r.getMessage() for r in caplog.records] == [
        f"plugin_event n={n} path='/x'" for n in range(3)
    ]
    assert {r.levelno for r in caplog.records} == {logging.INFO}
    assert {r.name for r in caplog.records} == {DEFAULT_LOGGER_NAME}


def test_the_stdlib_logger_has_every_level_and_the_exception(
    caplog: pytest.LogCaptureFixture,
) -> None:
    logger = StdlibLogger(connector="c")
    with caplog.at_level(logging.DEBUG, logger=DEFAULT_LOGGER_NAME):
        logger.debug("d")
        logger.warning("w", k=1)
        logger.error("e")
        try:
            raise ValueError("boom")
        except ValueError:
            logger.exception("x")
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        (logging.DEBUG, "d connector='c'"),
        (logging.WARNING, "w connector='c' k=1"),
        (logging.ERROR, "e connector='c'"),
        (logging.ERROR, "x connector='c'"),
    ]
    assert caplog.records[-1].exc_info is not None
    assert caplog.records[0].filename == __file__.rsplit("/", 1)[-1]  # the caller's line


async def test_a_sink_context_without_a_runtime_has_no_executor() -> None:
    table = pa.table({KAFKA_OFFSET_COLUMN: pa.array([0], pa.int64())})
    with pytest.raises(ConnectError, match="no Spark executor"):
        await SinkTaskContext("c", 0).executor.write_table(
            topic="t", partition=0, table=table, path="/data"
        )


async def test_a_sink_context_hands_over_the_executor_it_was_given() -> None:
    class Fake:
        async def write_table(
            self,
            *,
            topic: str,
            partition: int,
            table: pa.Table,
            path: str,
            format: str = "parquet",
            options: Mapping[str, str] | None = None,
        ) -> tuple[int, int]:
            return table.num_rows, 0

        async def query(self, *, table: pa.Table, sql: str) -> pa.Table:
            return table

    executor: Executor = Fake()
    context = SinkTaskContext("c", 0, executor=executor)
    table = pa.table({KAFKA_OFFSET_COLUMN: pa.array([0, 1], pa.int64())})
    assert await context.executor.write_table(topic="t", partition=0, table=table, path="/") == (
        2,
        0,
    )


A0, A1 = TopicPartition("a", 0), TopicPartition("a", 1)
RECORD = SinkRecord(topic="a", partition=1, offset=7, key=None, value="v")


async def test_a_sink_context_without_a_runtime_fails_on_an_errant_record() -> None:
    cause = ValueError("cannot write")
    with pytest.raises(ConnectError, match="errant record at a-1 offset 7: cannot write") as info:
        await SinkTaskContext("c", 0).errant_record_reporter.report(RECORD, cause)
    assert info.value.__cause__ is cause


async def test_a_sink_context_hands_errant_records_to_the_reporter_it_was_given() -> None:
    reported: list[tuple[SinkRecord, BaseException]] = []

    async def report(record: SinkRecord, error: BaseException) -> asyncio.Future[None]:
        reported.append((record, error))
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        done.set_result(None)
        return done

    context = SinkTaskContext("c", 0, errant_record_reporter=ErrantRecordReporter(report))
    cause = ValueError("cannot write")
    await (await context.errant_record_reporter.report(RECORD, cause))
    assert reported == [(RECORD, cause)]


def test_a_sink_context_hands_offsets_pauses_and_resumes_on() -> None:
    asked: list[tuple[str, object]] = []

    def offsets(given: Mapping[TopicPartition, int]) -> None:
        asked.append(("offset", dict(given)))

    def pause(partitions: Set[TopicPartition]) -> None:
        asked.append(("pause", partitions))

    def resume(partitions: Set[TopicPartition]) -> None:
        asked.append(("resume", partitions))

    context = SinkTaskContext("c", 0, _offset=offsets, _pause=pause, _resume=resume)
    context.offset(A0, 5)
    context.offset({A0: 0, A1: 9})
    context.pause(A0, A1)
    context.resume(A1)
    assert asked == [
        ("offset", {A0: 5}),
        ("offset", {A0: 0, A1: 9}),
        ("pause", frozenset({A0, A1})),
        ("resume", frozenset({A1})),
    ]


def test_a_sink_context_refuses_an_offset_that_cannot_be() -> None:
    context = SinkTaskContext("c", 0)
    with pytest.raises(ValueError, match="at least 0"):
        context.offset({A0: 1, A1: -1})
    with pytest.raises(TypeError, match="needs the offset"):
        context.offset(A0)  # type: ignore[call-overload]  # the mistake under test


def test_a_sink_context_without_a_runtime_ignores_offsets_and_pauses() -> None:
    context = SinkTaskContext("c", 0)
    context.offset(A0, 3)
    context.pause(A0)
    context.resume(A0)
    assert context.assignment() == set()
