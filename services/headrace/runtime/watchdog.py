"""A bound on every call into plugin code, kept by a thread beside the event loop.

A call that does not return may hold more than itself: a blocking call inside async code holds
the event loop, and with it every other unit of the process; a thread stuck in a driver holds
what it locked. Nothing short of ending the process frees that, so a call that overruns its bound
ends the plugin process. The worker sees the exit and fails every unit the process hosted. This
module writes the stacks of the process's threads to its log, then one line naming the call, its
unit and its bound, to the log and to a file of its own (``reason_file``), whence the worker
takes it, and nothing else the process wrote, as those units' trace. Units of other plugin
versions live in other processes and keep moving data.

The thread, not the loop, keeps the time, since the loop may be the thing that is stuck. Outside
a plugin process (the runtime's own tests) no watchdog is installed and :func:`bounded` bounds
nothing.
"""

from __future__ import annotations

import contextlib
import faulthandler
import itertools
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

EXIT_OVERRUN = 75  # the plugin process's exit code when a call overran its bound
CHECK_S = 0.25


@dataclass(frozen=True)
class Call:
    """A call into plugin code under way: which, for which unit, and when it must be back."""

    unit: str
    name: str
    started: float
    deadline: float

    def describe(self, now: float) -> str:
        return (
            f"{self.name} of {self.unit} has not returned after {now - self.started:.1f} s "
            f"(bound {self.deadline - self.started:.1f} s)"
        )


def kill(
    overdue: list[Call], now: float, out: TextIO = sys.stderr, reason_file: Path | None = None
) -> None:
    """Ends the process, leaving the threads' stacks and then the reason as its log's tail, and
    the reason alone in ``reason_file``."""
    faulthandler.dump_traceback(file=out, all_threads=True)
    calls = "; ".join(c.describe(now) for c in overdue)
    reason = f"plugin call timed out: {calls}: the plugin process was killed"
    out.write(reason + "\n")
    out.flush()
    if reason_file is not None:
        with contextlib.suppress(OSError):
            reason_file.write_text(reason + "\n")
    os._exit(EXIT_OVERRUN)


class Watchdog:
    """Keeps the bounds of the calls under way; ``on_overrun`` gets the overdue calls."""

    def __init__(
        self,
        timeout_s: float,
        on_overrun: Callable[[list[Call], float], None] = kill,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.timeout_s = timeout_s
        self._on_overrun = on_overrun
        self._clock = clock
        self._calls: dict[int, Call] = {}
        self._ids = itertools.count()
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    @contextlib.contextmanager
    def bounded(self, unit: str, name: str, timeout_s: float | None = None) -> Iterator[None]:
        """Bounds the plugin call made inside the block (``timeout_s``, else the default)."""
        now = self._clock()
        call = Call(unit, name, now, now + (self.timeout_s if timeout_s is None else timeout_s))
        key = next(self._ids)
        with self._lock:
            self._calls[key] = call
        try:
            yield
        finally:
            with self._lock:
                del self._calls[key]

    def overdue(self) -> list[Call]:
        """The calls past their bound now, oldest first."""
        now = self._clock()
        with self._lock:
            late = [c for c in self._calls.values() if c.deadline <= now]
        return sorted(late, key=lambda c: c.started)

    def check(self) -> None:
        late = self.overdue()
        if late:
            self._on_overrun(late, self._clock())

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self._watch, name="plugin-call-watchdog", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        if self._thread is not None:
            self._thread.join()

    def _watch(self) -> None:
        while not self._stopped.wait(CHECK_S):
            self.check()


_installed: Watchdog | None = None


def install(watchdog: Watchdog | None) -> None:
    """Makes ``watchdog`` the one :func:`bounded` uses in this process (None: no bounds)."""
    global _installed
    _installed = watchdog


@contextlib.contextmanager
def bounded(unit: object, name: str, timeout_s: float | None = None) -> Iterator[None]:
    """Bounds the plugin call made inside the block by this process's watchdog, if any."""
    if _installed is None:
        yield
        return
    with _installed.bounded(str(unit), name, timeout_s):
        yield
