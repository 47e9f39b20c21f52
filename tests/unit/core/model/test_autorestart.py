"""Automatic restarts: when a FAILED unit is restarted, when it is given up, when it recovered."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from headrace.core.model.autorestart import (
    MAX_BACKOFF_MS,
    Attempt,
    GiveUp,
    Policy,
    Recovered,
    Restart,
    Wait,
    next_step,
    policy_of,
    shown,
)
from headrace.sdk.errors import ConfigException

ON = Policy(enabled=True, max_attempts=3, backoff_ms=1000)


def test_a_failure_waits_the_backoff_then_each_attempt_waits_twice_as_long() -> None:
    assert next_step(ON, "FAILED", None, failed_seen_ms=0, now_ms=999) == Wait(1, 1000)
    assert next_step(ON, "FAILED", None, failed_seen_ms=0, now_ms=1000) == Restart(1)
    first = Attempt(1, at_ms=1000)
    assert next_step(ON, "FAILED", first, failed_seen_ms=1200, now_ms=2500) == Wait(2, 3000)
    assert next_step(ON, "FAILED", first, failed_seen_ms=1200, now_ms=3000) == Restart(2)
    second = Attempt(2, at_ms=3000)
    assert next_step(ON, "FAILED", second, None, now_ms=6999) == Wait(3, 7000)
    assert next_step(ON, "FAILED", second, None, now_ms=7000) == Restart(3)


def test_after_the_most_attempts_the_unit_is_given_up_and_stays_failed() -> None:
    assert next_step(ON, "FAILED", Attempt(3, 7000), None, now_ms=10**9) == GiveUp(3)


def test_a_unit_that_ran_as_long_as_its_next_wait_has_recovered() -> None:
    last = Attempt(2, at_ms=3000)
    assert next_step(ON, "RUNNING", last, None, now_ms=3000 + 3999) is None
    assert next_step(ON, "RUNNING", last, None, now_ms=3000 + 4000) == Recovered()


@pytest.mark.parametrize("state", ["RUNNING", "FAILED", "PAUSED", "UNASSIGNED", "RESTARTING"])
def test_nothing_happens_without_the_policy(state: str) -> None:
    assert next_step(Policy(), state, Attempt(1, 0), 0, 10**9) is None


@given(st.integers(1, 60))
def test_waits_double_and_never_pass_ten_minutes(attempt: int) -> None:
    policy = Policy(enabled=True, max_attempts=100, backoff_ms=500)
    assert policy.delay_ms(attempt) == min(500 * 2 ** (attempt - 1), MAX_BACKOFF_MS)
    assert policy.delay_ms(attempt + 1) >= policy.delay_ms(attempt)


def test_the_status_shows_the_attempts_the_next_try_or_that_they_were_given_up() -> None:
    last = Attempt(2, 3000)
    assert shown(Wait(3, 7000), last, now_ms=5000).next_ms == 7000
    assert shown(Restart(3), last, now_ms=7100).next_ms == 7100
    given_up = shown(GiveUp(2), last, now_ms=9000)
    assert (given_up.attempts, given_up.next_ms, given_up.given_up) == (2, 0, True)


def test_the_keys_are_read_and_bad_values_refused_naming_the_key() -> None:
    config = {
        "auto.restart.enable": "true",
        "auto.restart.max.attempts": "4",
        "auto.restart.backoff.ms": "250",
    }
    assert policy_of(config) == Policy(True, 4, 250)
    assert policy_of({}) == Policy(False, 10, 30_000)
    for key, value in [
        ("auto.restart.enable", "yes"),
        ("auto.restart.max.attempts", "-1"),
        ("auto.restart.backoff.ms", "soon"),
    ]:
        with pytest.raises(ConfigException, match=key):
            policy_of({key: value})
