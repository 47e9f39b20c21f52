"""Stopping a service's background tasks, and what its event loop logs, without I/O."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

import pytest
from aiokafka.errors import ProducerFenced

from headrace.core import runner
from headrace.core.runner import alive, cancel, quiet_fenced_futures, watch_parent
from tests.support import eventually


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


def _gone_pid() -> int:
    """The pid of a process that has exited and been reaped."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_alive_tells_a_running_process_from_one_that_is_gone() -> None:
    assert alive(os.getpid())
    assert alive(1)  # there, though owned by someone else
    assert not alive(_gone_pid())


async def test_watch_parent_stops_once_the_parent_is_gone_and_not_before(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gone, here = asyncio.Event(), asyncio.Event()
    await asyncio.wait_for(watch_parent(_gone_pid(), gone, every_s=0.01), 5)
    assert gone.is_set()

    checks = 0

    def counted(pid: int) -> bool:
        nonlocal checks
        checks += 1
        return alive(pid)

    monkeypatch.setattr(runner, "alive", counted)
    watching = asyncio.create_task(watch_parent(os.getpid(), here, every_s=0.01))
    await eventually("several checks", lambda: checks >= 3, 5)  # each finding the parent there
    assert not here.is_set() and not watching.done()
    here.set()  # stopped for another reason: the watch ends too
    await asyncio.wait_for(watching, 5)
