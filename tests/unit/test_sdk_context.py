"""What a context offers a plugin when no runtime made it: a stdlib logger, no executor."""

from __future__ import annotations

import logging

import pyarrow as pa
import pytest

from headrace.sdk import (
    KAFKA_OFFSET_COLUMN,
    ConnectError,
    ConnectorContext,
    Executor,
    Logger,
    SinkTaskContext,
    SourceTaskContext,
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
        ) -> tuple[int, int]:
            return table.num_rows, 0

    executor: Executor = Fake()
    context = SinkTaskContext("c", 0, executor=executor)
    table = pa.table({KAFKA_OFFSET_COLUMN: pa.array([0, 1], pa.int64())})
    assert await context.executor.write_table(topic="t", partition=0, table=table, path="/") == (
        2,
        0,
    )
