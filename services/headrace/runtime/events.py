"""Unit state changes inside the plugin process, fanned out to every ``Watch`` stream.

A unit is a connector (task -1) or one of its tasks. States:

| state | meaning |
| --- | --- |
| RUNNING | started; for a task, its loop runs |
| FAILED | ``start`` or the loop raised; ``trace`` holds the traceback text |
| STOPPED | stopped on request (the unit is gone from this process) |
| RECONFIGURATION_REQUESTED | the connector called ``context.request_task_reconfiguration()`` |

A new subscriber first gets the current state of every live unit (RUNNING or FAILED), then every
change as it happens, so a worker that (re)connects late still learns about an earlier failure.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from enum import StrEnum

CONNECTOR = -1
"""The task number that stands for the connector itself."""


class UnitState(StrEnum):
    RUNNING = "RUNNING"
    FAILED = "FAILED"
    STOPPED = "STOPPED"
    RECONFIGURATION_REQUESTED = "RECONFIGURATION_REQUESTED"


@dataclass(frozen=True)
class UnitEvent:
    """A connector (task -1) or task changed state."""

    connector: str
    task: int
    state: UnitState
    trace: str = ""


class EventBus:
    """Latest state per unit, plus a queue per subscriber."""

    def __init__(self) -> None:
        self._latest: dict[tuple[str, int], UnitEvent] = {}
        self._queues: set[asyncio.Queue[UnitEvent | None]] = set()

    def publish(self, event: UnitEvent) -> None:
        """Records the event and hands it to every subscriber."""
        key = (event.connector, event.task)
        if event.state in (UnitState.RUNNING, UnitState.FAILED):
            self._latest[key] = event
        elif event.state is UnitState.STOPPED:
            self._latest.pop(key, None)
        for queue in self._queues:
            queue.put_nowait(event)

    async def subscribe(self) -> AsyncIterator[UnitEvent]:
        """The current states, then every change, until ``close``."""
        queue: asyncio.Queue[UnitEvent | None] = asyncio.Queue()
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
