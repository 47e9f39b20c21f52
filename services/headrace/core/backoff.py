"""Waits that grow between the tries of a call to another service: the first, then twice the
last, at most a ceiling, started again when a try gets through. Pure: the callers sleep."""

from __future__ import annotations

import random
from dataclasses import dataclass, field


@dataclass
class Backoff:
    """``first_s``, then each wait twice the last, at most ``most_s``; with ``jitter`` each wait
    is up to that fraction longer, so that callers turned away together do not come back
    together."""

    first_s: float
    most_s: float
    jitter: float = 0.0
    _next_s: float = field(init=False)

    def __post_init__(self) -> None:
        self._next_s = self.first_s

    @property
    def upcoming_s(self) -> float:
        """The next wait, before jitter, without taking it."""
        return self._next_s

    def next_s(self) -> float:
        """The next wait (with its jitter), and the one after it doubled."""
        wait = self._next_s * (1 + random.random() * self.jitter)
        self._next_s = min(self._next_s * 2, self.most_s)
        return wait

    def reset(self) -> None:
        """A try got through: the next wait is the first again."""
        self._next_s = self.first_s
