"""Back-pressure: how many batches (and bytes) the executor holds at once.

Every batch in flight pins its request bytes, its Arrow table and a copy in the JVM, so the
executor admits a bounded number of them and turns the rest away at once (RESOURCE_EXHAUSTED with
a retry hint) instead of queueing them until the heap runs out. Thread-safe: the gRPC server calls
it from its worker threads.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from headrace.core.rpc import MAX_MESSAGE_BYTES

# Threads beyond the batch limit, so that reads and "busy" answers never wait behind writes.
_SPARE_THREADS = 4


@dataclass(frozen=True)
class Limits:
    """How much work may be in flight at once."""

    max_batches: int = 4
    # A few batches at the 64 MiB message limit would crowd a 512m driver heap; one batch of
    # any admissible size is always let in, so this only stops them from piling up.
    max_bytes: int = 128 * 1024 * 1024
    # How long a streamed batch may go without its next piece before it is given up: a client
    # that stalls must not hold a slot, or a thread, for ever.
    idle_s: float = 30.0

    def __post_init__(self) -> None:
        if self.max_batches < 1:
            raise ValueError(f"max_batches must be at least 1, not {self.max_batches}")
        if self.max_bytes < 1:
            raise ValueError(f"max_bytes must be at least 1, not {self.max_bytes}")
        if self.idle_s <= 0:
            raise ValueError(f"idle_s must be above 0, not {self.idle_s}")

    @property
    def largest_batch(self) -> int:
        """The most bytes one batch may have: what one message holds (clients split larger
        batches to fit), or ``max_bytes`` if that is more."""
        return max(self.max_bytes, MAX_MESSAGE_BYTES)

    @property
    def threads(self) -> int:
        """How many calls are served at once: every batch in flight, and a few beside them."""
        return self.max_batches + _SPARE_THREADS


class Busy(Exception):
    """The executor is at its limit; the caller should try again later."""


class Admission:
    """Counts batches and bytes in flight against :class:`Limits`."""

    def __init__(self, limits: Limits) -> None:
        self._limits = limits
        self._lock = threading.Lock()
        self._batches = 0
        self._bytes = 0

    @property
    def in_flight(self) -> tuple[int, int]:
        """(batches, bytes) currently admitted."""
        with self._lock:
            return self._batches, self._bytes

    @contextmanager
    def admit(self, size: int) -> Iterator[None]:
        """Holds a slot for a batch of ``size`` bytes while the block runs; raises Busy if full.
        ``size`` is 0 to :attr:`Limits.largest_batch` (a caller checks what it was told
        first): a negative one would lift the bound for every batch after it."""
        if not 0 <= size <= self._limits.largest_batch:
            raise ValueError(f"a batch of {size} bytes cannot be admitted")
        with self._lock:
            full = self._batches >= self._limits.max_batches or (
                self._batches > 0 and self._bytes + size > self._limits.max_bytes
            )
            if full:
                raise Busy(
                    f"{self._batches} batches ({self._bytes} bytes) in flight; "
                    f"limit {self._limits.max_batches} batches, {self._limits.max_bytes} bytes"
                )
            self._batches += 1
            self._bytes += size
        try:
            yield
        finally:
            with self._lock:
                self._batches -= 1
                self._bytes -= size
