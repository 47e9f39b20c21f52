"""Lifecycle helpers and the Watch event bus, on the event loop but without I/O."""

from __future__ import annotations

import asyncio

from headrace.core.model.structs import ReconfigurationRequested, State, UnitStateChanged, WorkUnit
from headrace.runtime.host.events import EventBus
from headrace.runtime.lifecycle import bounded, format_trace, unless_stopped


async def test_unless_stopped_returns_the_result_when_it_comes_first() -> None:
    assert await unless_stopped(asyncio.Event(), asyncio.sleep(0, result=7)) == 7


async def test_unless_stopped_abandons_the_call_when_stopped() -> None:
    stop = asyncio.Event()
    hang = asyncio.ensure_future(asyncio.Event().wait())
    asyncio.get_running_loop().call_soon(stop.set)
    assert await unless_stopped(stop, hang) is None
    assert hang.cancelled()


async def test_bounded_gives_up_on_a_call_that_ignores_cancellation() -> None:
    release = asyncio.Event()

    async def stubborn() -> None:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            await release.wait()  # ignores the cancellation until the test lets it go

    work = asyncio.ensure_future(stubborn())
    await asyncio.sleep(0)
    assert await bounded(work, 0.05) == (False, None)
    assert not work.done()
    release.set()
    await work
    assert await bounded(asyncio.sleep(0, result="x"), 1) == (True, "x")


def test_format_trace_keeps_the_whole_traceback() -> None:
    try:
        raise ValueError("boom")
    except ValueError as exc:
        trace = format_trace(exc)
    assert trace.startswith("Traceback") and "ValueError: boom" in trace


async def test_a_new_watcher_first_gets_every_live_unit_then_changes() -> None:
    bus = EventBus()
    bus.publish(UnitStateChanged(WorkUnit("c", 0), State.RUNNING))
    bus.publish(UnitStateChanged(WorkUnit("c", 1), State.FAILED, "trace"))
    bus.publish(UnitStateChanged(WorkUnit("c", 2), State.RUNNING))
    bus.publish(UnitStateChanged(WorkUnit("c", 2), State.STOPPED))
    bus.publish(ReconfigurationRequested("c"))  # not a state: a late watcher does not get it
    stream = bus.subscribe()
    seen = [await anext(stream), await anext(stream)]
    assert {(e.unit.task, e.state) for e in seen if isinstance(e, UnitStateChanged)} == {
        (0, State.RUNNING),
        (1, State.FAILED),
    }
    bus.publish(ReconfigurationRequested("c"))
    assert await anext(stream) == ReconfigurationRequested("c")
    bus.close()
    assert [e async for e in stream] == []
