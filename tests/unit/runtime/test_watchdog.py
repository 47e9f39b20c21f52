"""The watchdog's bookkeeping, on a clock the test moves: which calls are overdue, and when."""

from __future__ import annotations

import pytest

from headrace.runtime import watchdog
from headrace.runtime.watchdog import Call, Watchdog


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


def test_only_calls_past_their_bound_are_overdue_oldest_first(clock: Clock) -> None:
    overruns: list[list[Call]] = []
    dog = Watchdog(10.0, lambda late, now: overruns.append(late), clock)
    with dog.bounded("a-0", "poll"):
        clock.now += 4
        with dog.bounded("b-0", "stop", timeout_s=2.0), dog.bounded("c-0", "put"):
            clock.now += 1.9
            dog.check()
            assert overruns == []
            clock.now += 0.1
            assert [(c.unit, c.name) for c in dog.overdue()] == [("b-0", "stop")]
            clock.now += 4
            dog.check()
    assert [[(c.unit, c.name) for c in late] for late in overruns] == [
        [("a-0", "poll"), ("b-0", "stop")]
    ]
    assert dog.overdue() == []  # every call returned: nothing left to time


def test_a_call_that_raises_is_no_longer_timed(clock: Clock) -> None:
    dog = Watchdog(1.0, lambda late, now: None, clock)
    with pytest.raises(RuntimeError), dog.bounded("a-0", "put"):
        raise RuntimeError("the plugin's own error")
    clock.now += 5
    assert dog.overdue() == []


def test_the_reason_names_the_call_its_unit_and_its_bound() -> None:
    call = Call("conn-3", "put", started=10.0, deadline=40.0)
    assert call.describe(41.25) == "put of conn-3 has not returned after 31.2 s (bound 30.0 s)"


def test_without_a_watchdog_installed_nothing_is_bounded(clock: Clock) -> None:
    dog = Watchdog(1.0, lambda late, now: None, clock)
    watchdog.install(None)
    with watchdog.bounded("a-0", "poll"):
        clock.now += 5
        assert dog.overdue() == []
    watchdog.install(dog)
    try:
        with watchdog.bounded("a-0", "poll"):
            clock.now += 5
            assert [c.unit for c in dog.overdue()] == ["a-0"]
    finally:
        watchdog.install(None)
