"""The waits between tries of a call to another service."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from headrace.core.backoff import Backoff


def test_each_wait_doubles_up_to_the_ceiling_and_starts_again_after_a_reset() -> None:
    waits = Backoff(0.1, 0.5)
    assert [waits.next_s() for _ in range(5)] == [0.1, 0.2, 0.4, 0.5, 0.5]
    waits.reset()
    assert waits.upcoming_s == 0.1 and waits.next_s() == 0.1


@given(st.floats(0.01, 1.0), st.floats(0.0, 0.5), st.integers(1, 20))
def test_jitter_only_lengthens_a_wait_and_by_at_most_its_share(
    first: float, jitter: float, tries: int
) -> None:
    plain, jittered = Backoff(first, 5.0), Backoff(first, 5.0, jitter)
    for _ in range(tries):
        base, wait = plain.next_s(), jittered.next_s()
        assert base <= wait <= base * (1 + jitter)
