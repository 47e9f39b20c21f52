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
import contextlib
import enum
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from headrace.clients.connect import ConnectApi, RestError, Status
from headrace.migration.plan import Move, clean

WAIT_S = 120.0
POLL_S = 0.5
TASKLESS_SETTLE_S = 5.0
"""How long a connector that runs with no task must stay so before it counts as RUNNING: just
resumed, it may not have written its task configs yet."""


class Step(enum.Enum):
    CREATE = "create it STOPPED on {target}"
    STOP = "stop it on {source}"
    MOVE_OFFSETS = "move its offsets and resume it on {target}"
    DELETE = "delete it on {source}"
    DONE = "nothing: it has moved"

    def said(self, source: str, target: str) -> str:
        return self.value.format(source=source, target=target)


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
    if here.stopped:
        raise MoveError(
            f"it is {_shown(there)} on the side it goes to, which was told to resume it, and "
            "STOPPED on the side it comes from: restart it there until it runs, then run the "
            "same command again to finish; or move it back"
        )
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
        and how to go on (after undoing what this run did, where it may). Nothing it says
        holds a value of ``move.secrets``."""
        name = move.name
        undo = _Undo()
        step: Step | None = None
        while True:
            try:
                here = await self.source.status(name)
                there = await self.target.status(name)
                step = next_step(here, there, keep=self.keep)
                if step is Step.DONE:
                    self.report(name, f"on {self.target.name}: RUNNING")
                    return
                if step not in (Step.DELETE,) and not move.movable:
                    raise MoveError(f"{name}: cannot move: {'; '.join(move.blockers)}")
                self.report(name, self._said(step))
                if undo.state is None and here is not None:
                    undo.state = here.state  # as it was before this run changed anything
                await self._take(step, move, undo)
            except (RestError, MoveError, TimeoutError) as exc:
                if step is None or (not undo.anything and isinstance(exc, MoveError)):
                    raise MoveError(clean(str(exc), move.secrets)) from None
                await self._committed_meanwhile(name, undo)
                left = await self._undo(name, undo)
                said = self._where(name, step, exc, undo.anything, left)
                raise MoveError(clean(said, move.secrets)) from None
            except (asyncio.CancelledError, KeyboardInterrupt):
                # Interrupted (Ctrl-C): put back what may be, then stop as asked.
                await self._committed_meanwhile(name, undo)
                await self._undo(name, undo)
                raise

    def _said(self, step: Step) -> str:
        return step.said(self.source.name, self.target.name)

    async def _take(self, step: Step, move: Move, undo: _Undo) -> None:
        name = move.name
        if step is Step.CREATE:
            await self.target.create_stopped(name, move.config)
            undo.created = True
            await self._until(self.target, name, "STOPPED", _stopped)
        elif step is Step.STOP:
            await self.source.stop(name)
            undo.stopped = True
            await self._until(self.source, name, "STOPPED, its tasks gone", _stopped)
        elif step is Step.MOVE_OFFSETS:
            offsets = await self.source.offsets(name)
            # What the side it goes to holds already (an earlier connector of that name's
            # offsets, a sink group's old positions) must not outlive the move.
            await self.target.reset_offsets(name)
            if offsets:
                await self.target.alter_offsets(name, offsets)
            self.report(name, f"{len(offsets)} offset(s) moved")
            undo.resuming = True
            await self.target.resume(name)
            undo.created = undo.stopped = undo.resuming = False  # committed: not undone
            await self._until(self.target, name, "RUNNING, every task", _running)
        elif step is Step.DELETE:
            await _gone(self.source.delete(name))
            await self._until(self.source, name, "gone", lambda status: status is None)

    async def _until(
        self, side: ConnectApi, name: str, what: str, holds: Callable[[Status | None], bool]
    ) -> None:
        clock = asyncio.get_running_loop().time
        deadline, since = clock() + self.wait_s, None
        while True:
            status = await side.status(name)
            if not holds(status):
                since = None
            elif status is None or not status.taskless:
                return
            elif since is None:
                since = clock()
            elif clock() - since >= TASKLESS_SETTLE_S:
                return
            if clock() > deadline:
                now = "gone" if status is None else _shown(status)
                trace = f"; {status.trace.splitlines()[0]}" if status and status.trace else ""
                raise TimeoutError(
                    f"not {what} on {side.name} within {self.wait_s:g} s: {now}{trace}"
                )
            await asyncio.sleep(POLL_S)

    async def _committed_meanwhile(self, name: str, undo: _Undo) -> None:
        """A resume whose answer was lost may have been applied: if the side it goes to runs
        it (or tries to), the move is committed and nothing is undone."""
        if not undo.resuming:
            return
        with contextlib.suppress(RestError):
            there = await self.target.status(name)
            if there is None or there.stopped:
                return
        undo.created = undo.stopped = False

    async def _undo(self, name: str, undo: _Undo) -> list[str]:
        """Puts back what this run changed before the move was committed: the connector is
        where it came from in the state it had, and no copy of it waits on the side it goes
        to. What could not be put back, said."""
        left = []
        if undo.stopped:
            back = self.source.pause if undo.state == "PAUSED" else self.source.resume
            if error := await _quietly(back(name)):
                left.append(f"it stays STOPPED on {self.source.name} ({error})")
        if undo.created and (error := await _quietly(self.target.delete(name))):
            left.append(f"its STOPPED copy stays on {self.target.name} ({error})")
        return left

    def _where(
        self, name: str, step: Step, error: Exception, undoing: bool, left: list[str]
    ) -> str:
        said = f"{name}: could not {self._said(step)}: {error}"
        if undoing and not left:
            return f"{said}; undone: it is on {self.source.name} as it was"
        return "; ".join([said, *left, "run the same command again to go on from here"])


@dataclass
class _Undo:
    """What one run changed that it may still put back, and the state it found."""

    state: str | None = None
    created: bool = False  # the STOPPED copy on the side it goes to
    stopped: bool = False  # the connector, on the side it comes from
    resuming: bool = False  # a resume was sent; its answer has not come

    @property
    def anything(self) -> bool:
        return self.created or self.stopped


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
