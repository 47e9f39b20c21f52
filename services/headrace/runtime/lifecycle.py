"""Small asyncio helpers for stopping work promptly and bounding plugin calls.

Plugin code is trusted to be async but not to be well behaved: a ``poll`` may wait forever and a
``stop`` may hang. These helpers let the runtime give up on such calls without hanging itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import traceback
from collections.abc import Awaitable
from typing import TypeVar

from headrace.core.security import secrets

T = TypeVar("T")


def format_trace(exc: BaseException) -> str:
    """The full traceback text of an exception: how errors cross process boundaries, with the
    secrets this process holds hidden (a plugin's message may quote one)."""
    return secrets.mask("".join(traceback.format_exception(exc)))


async def abandon(work: asyncio.Future[T], grace: float) -> None:
    """Cancels ``work`` and waits a little for it; a coroutine that ignores cancellation is
    left behind rather than allowed to hang the caller."""
    work.cancel()
    await asyncio.wait({work}, timeout=grace)
    if work.done() and not work.cancelled():
        work.exception()  # retrieved, so asyncio does not log "exception never retrieved"
    else:
        work.add_done_callback(lambda f: f.cancelled() or f.exception())


async def unless_stopped(stop: asyncio.Event, aw: Awaitable[T], grace: float = 1.0) -> T | None:
    """The result of ``aw``, or None if ``stop`` is set first (``aw`` is then cancelled).

    Used around calls that may wait for data (``poll``, ``getmany``): abandoning them loses
    nothing, since they have not handed anything over yet.
    """
    work = asyncio.ensure_future(aw)
    waiter = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({work, waiter}, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        await abandon(work, grace)
        raise
    finally:
        waiter.cancel()
    if work.done():
        return work.result()
    await abandon(work, grace)
    return None


async def bounded(aw: Awaitable[T], seconds: float) -> tuple[bool, T | None]:
    """Runs ``aw`` for at most ``seconds``: (True, result) or (False, None) on timeout.

    Exceptions from ``aw`` propagate. On timeout the work is cancelled and abandoned.
    """
    work = asyncio.ensure_future(aw)
    try:
        done, _ = await asyncio.wait({work}, timeout=seconds)
    except asyncio.CancelledError:
        await abandon(work, 0.1)
        raise
    if done:
        return True, work.result()
    await abandon(work, 0.1)
    return False, None


async def sleep_unless_stopped(stop: asyncio.Event, seconds: float) -> None:
    """Waits ``seconds``, returning early when ``stop`` is set."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), timeout=seconds)
