"""Stopping a service's background tasks, on the event loop but without I/O."""

from __future__ import annotations

import asyncio

from headrace.core.runner import cancel


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
