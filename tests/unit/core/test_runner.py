"""Stopping a service's background tasks, and what its event loop logs, without I/O."""

from __future__ import annotations

import asyncio

import pytest
from aiokafka.errors import ProducerFenced

from headrace.core.runner import cancel, quiet_fenced_futures


async def test_a_task_that_fails_while_being_cancelled_does_not_fail_the_one_cancelling_it() -> (
    None
):
    entered = asyncio.Event()

    async def writing_when_fenced() -> None:
        entered.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            raise RuntimeError("the transaction could not be aborted") from None

    task = asyncio.create_task(writing_when_fenced())
    await entered.wait()
    await cancel(task)  # returns: the task was being stopped anyway
    assert task.done() and isinstance(task.exception(), RuntimeError)


async def test_cancel_stops_a_task_and_waits_for_it() -> None:
    task = asyncio.create_task(asyncio.Event().wait())
    await cancel(task)
    assert task.cancelled()


async def test_only_a_fenced_producer_s_orphaned_futures_are_kept_out_of_the_error_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    loop = asyncio.get_running_loop()
    previous = loop.get_exception_handler()
    quiet_fenced_futures()
    try:
        orphan: asyncio.Future[None] = loop.create_future()
        for exception in (ProducerFenced(), RuntimeError("a real problem")):
            loop.call_exception_handler(
                {
                    "message": "Future exception was never retrieved",
                    "exception": exception,
                    "future": orphan,
                }
            )
    finally:
        loop.set_exception_handler(previous)
    logged = [r.getMessage() for r in caplog.records if r.name == "asyncio"]
    assert len(logged) == 1 and "never retrieved" in logged[0]
    assert caplog.records[-1].exc_info and caplog.records[-1].exc_info[0] is RuntimeError
