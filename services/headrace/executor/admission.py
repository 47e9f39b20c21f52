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


@dataclass(frozen=True)
class Limits:
    """How much work may be in flight at once."""

    max_batches: int = 4
    # A few batches at the 64 MiB message limit would crowd a 512m driver heap; one batch of
    # any admissible size is always let in, so this only stops them from piling up.
    max_bytes: int = 128 * 1024 * 1024

    def __post_init__(self) -> None:
        if self.max_batches < 1:
            raise ValueError(f"max_batches must be at least 1, not {self.max_batches}")
        if self.max_bytes < 1:
            raise ValueError(f"max_bytes must be at least 1, not {self.max_bytes}")


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
        """Holds a slot for a batch of ``size`` bytes while the block runs; raises Busy if full."""
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
