"""What the units of this plugin process report, fanned out to every ``Watch`` stream.

The bus carries the shared vocabulary (``headrace.core.model.structs``); ``service.py`` converts it
to protobuf at the edge.

| event | meaning |
| --- | --- |
| ``UnitStateChanged(unit, RUNNING)`` | started; for a task, its loop runs |
| ``UnitStateChanged(unit, FAILED, trace)`` | ``start`` or the loop raised (with the traceback) |
| ``UnitStateChanged(unit, STOPPED)`` | stopped on request (the unit is gone from this process) |
| ``ReconfigurationRequested(connector)`` | ``context.request_task_reconfiguration()`` |
| ``TopicUsed(unit, topic)`` | a task used a topic for the first time in this run |
| ``DeletionHeard(unit)`` | returned from ``stop(deleted=True)``; its clients close next |

A new subscriber first gets the current state of every live unit (RUNNING or FAILED), then every
event as it happens, so a worker that (re)connects late still learns about an earlier failure.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from headrace.core.model.structs import HostEvent, State, UnitStateChanged, WorkUnit

LIVE_STATES = (State.RUNNING, State.FAILED)
"""The states a new subscriber is told about first."""


class EventBus:
    """Latest live state per unit, plus a queue per subscriber."""

    def __init__(self) -> None:
        self._latest: dict[WorkUnit, UnitStateChanged] = {}
        self._queues: set[asyncio.Queue[HostEvent | None]] = set()

    def publish(self, event: HostEvent) -> None:
        """Records the event and hands it to every subscriber."""
        if isinstance(event, UnitStateChanged):
            self._remember(event)
        for queue in self._queues:
            queue.put_nowait(event)

    def _remember(self, event: UnitStateChanged) -> None:
        if event.state in LIVE_STATES:
            self._latest[event.unit] = event
        elif event.state is State.STOPPED:
            self._latest.pop(event.unit, None)

    async def subscribe(self) -> AsyncIterator[HostEvent]:
        """The current states, then every event, until ``close``."""
        queue: asyncio.Queue[HostEvent | None] = asyncio.Queue()
        for event in self._latest.values():
            queue.put_nowait(event)
        self._queues.add(queue)
        try:
            while (next_event := await queue.get()) is not None:
                yield next_event
        finally:
            self._queues.discard(queue)

    def close(self) -> None:
        """Ends every subscription (the process is shutting down)."""
        for queue in self._queues:
            queue.put_nowait(None)
