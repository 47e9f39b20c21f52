"""Moving one connector from one side to the other with its offsets, so that no record is lost
or repeated: KIP-980's STOPPED creation and KIP-875's offsets, on both sides.

The steps, each taken only once the one before it holds:

1. the config is validated on the side it goes to (``plan``);
2. the connector is created there STOPPED;
3. it is stopped on the side it comes from, until its tasks are gone;
4. its offsets there (a source's, or a sink's consumer group's positions) are read and written
   on the side it goes to;
5. it is resumed there, until it and every task are RUNNING;
6. only then is it deleted where it came from (or kept STOPPED there).

Which step comes next is read from the two sides every time (:func:`next_step`), never
remembered: a move cut short anywhere goes on from where it stands when it is run again. A move
that fails before step 5 is undone as far as this run took it: the connector is resumed where it
came from and the copy it created deleted, so that it runs on exactly one side. Once the side it
goes to was told to resume, the move is not undone: records may have been written there since.
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from headrace.migration.connect import ConnectApi, RestError, Status
from headrace.migration.plan import Move

WAIT_S = 120.0
POLL_S = 0.5


class Step(enum.Enum):
    CREATE = "create it STOPPED on the side it goes to"
    STOP = "stop it on the side it comes from"
    MOVE_OFFSETS = "move its offsets and resume it on the side it goes to"
    DELETE = "delete it on the side it comes from"
    DONE = "nothing: it has moved"


class MoveError(Exception):
    """A move that cannot go on: the message says where it stands and how to go on."""


def next_step(here: Status | None, there: Status | None, *, keep: bool) -> Step:
    """What moving a connector needs next, from its status on the side it comes from
    (``here``) and on the side it goes to (``there``); None where it does not exist. Raises
    MoveError where moving it would be wrong."""
    if there is None:
        if here is None:
            raise MoveError("it exists on neither side")
        return Step.CREATE
    if here is None:
        if there.running:
            return Step.DONE
        raise MoveError(
            f"it is {there.state} on the side it goes to and gone from the side it comes from: "
            "its offsets cannot be read any more; resume it there, or delete it there and "
            "create it again where it came from"
        )
    if there.stopped:
        return Step.MOVE_OFFSETS if here.stopped else Step.STOP
    if there.running and here.stopped:
        return Step.DONE if keep else Step.DELETE
    raise MoveError(
        f"it is {_shown(here)} on the side it comes from and {_shown(there)} on the side it "
        "goes to: a move leaves it running on one side only; stop it on one side first"
    )


def _shown(status: Status) -> str:
    tasks = ", ".join(status.tasks) or "none"
    return f"{status.state} (tasks: {tasks})"


@dataclass
class Cutover:
    """Moves connectors from ``source`` to ``target``; ``report`` hears each step taken."""

    source: ConnectApi
    target: ConnectApi
    keep: bool = False
    wait_s: float = WAIT_S
    report: Callable[[str, str], None] = lambda name, line: None

    async def move(self, move: Move) -> None:
        """Takes ``move`` as far as it goes: to DONE, or to a MoveError saying where it stands
        and how to go on (after undoing what this run did, where it may)."""
        name = move.name
        created = stopped = False
        step: Step | None = None
        while True:
            try:
                here = await self.source.status(name)
                there = await self.target.status(name)
                step = next_step(here, there, keep=self.keep)
                if step is Step.DONE:
                    self.report(name, f"on {self.target.name}: RUNNING")
                    return
                if step is Step.CREATE and not move.movable:
                    raise MoveError(f"{name}: cannot move: {'; '.join(move.blockers)}")
                self.report(name, step.value)
                if step is Step.CREATE:
                    await self.target.create_stopped(name, move.config)
                    created = True
                    await self._until(self.target, name, "STOPPED", _stopped)
                elif step is Step.STOP:
                    await self.source.stop(name)
                    stopped = True
                    await self._until(self.source, name, "STOPPED, its tasks gone", _stopped)
                elif step is Step.MOVE_OFFSETS:
                    offsets = await self.source.offsets(name)
                    if offsets:
                        await self.target.alter_offsets(name, offsets)
                    self.report(name, f"{len(offsets)} offset(s) moved")
                    await self.target.resume(name)
                    created = stopped = False  # resumed there: no longer undone
                    await self._until(self.target, name, "RUNNING, every task", _running)
                elif step is Step.DELETE:
                    await _gone(self.source.delete(name))
                    await self._until(self.source, name, "gone", lambda status: status is None)
            except (RestError, MoveError, TimeoutError) as exc:
                if step is None or (not (created or stopped) and isinstance(exc, MoveError)):
                    raise  # refused before anything changed: said as it is
                left = await self._undo(name, created, stopped)
                raise MoveError(self._where(name, step, exc, created or stopped, left)) from None

    async def _until(
        self, side: ConnectApi, name: str, what: str, holds: Callable[[Status | None], bool]
    ) -> None:
        deadline = asyncio.get_running_loop().time() + self.wait_s
        while not holds(status := await side.status(name)):
            if asyncio.get_running_loop().time() > deadline:
                now = "gone" if status is None else _shown(status)
                trace = f"; {status.trace.splitlines()[0]}" if status and status.trace else ""
                raise TimeoutError(
                    f"not {what} on {side.name} within {self.wait_s:g} s: {now}{trace}"
                )
            await asyncio.sleep(POLL_S)

    async def _undo(self, name: str, created: bool, stopped: bool) -> list[str]:
        """Puts back what this run changed before the move was committed: the connector runs
        where it came from, and no copy of it waits on the side it goes to. What could not be
        put back, said."""
        left = []
        if stopped and (error := await _quietly(self.source.resume(name))):
            left.append(f"it stays STOPPED on {self.source.name} ({error})")
        if created and (error := await _quietly(self.target.delete(name))):
            left.append(f"its STOPPED copy stays on {self.target.name} ({error})")
        return left

    def _where(
        self, name: str, step: Step, error: Exception, undoing: bool, left: list[str]
    ) -> str:
        said = f"{name}: could not {step.value}: {error}"
        if undoing and not left:
            return f"{said}; undone: it runs on {self.source.name} as before"
        return "; ".join([said, *left, "run the same command again to go on from here"])


def _stopped(status: Status | None) -> bool:
    return status is not None and status.stopped


def _running(status: Status | None) -> bool:
    return status is not None and status.running


async def _gone(deleting: Awaitable[None]) -> None:
    """A delete, done when the connector is already gone (a delete under way is)."""
    try:
        await deleting
    except RestError as exc:
        if exc.status != 404:
            raise


async def _quietly(call: Awaitable[None]) -> RestError | None:
    """Best effort: the error that stopped the move is the one to raise; this one's is said."""
    try:
        await call
    except RestError as exc:
        return exc
    return None
