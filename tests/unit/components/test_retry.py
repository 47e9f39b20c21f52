"""errors.retry.*: how long a RetriableError is retried, and the waits between tries."""

from __future__ import annotations

import itertools
from typing import TypeGuard

import pytest
from hypothesis import given
from hypothesis import strategies as st

from headrace.components.retry import RetryPolicy, retrying, retrying_on
from headrace.sdk.errors import ConfigException, RetriableError


def test_waits_double_from_300_ms_up_to_the_most_and_stop_at_the_timeout() -> None:
    assert list(RetryPolicy(5000, 1000).delays_ms()) == [300, 600, 1000, 1000, 1000, 1000, 100]
    assert list(RetryPolicy(0).delays_ms()) == []


def test_minus_one_retries_forever() -> None:
    assert list(itertools.islice(RetryPolicy(-1, 2000).delays_ms(), 6)) == [
        300,
        600,
        1200,
        2000,
        2000,
        2000,
    ]


@given(st.integers(0, 10**6), st.integers(100, 10**5))
def test_the_waits_add_up_to_the_timeout_and_none_is_longer_than_the_most(
    timeout: int, most: int
) -> None:
    delays = list(RetryPolicy(timeout, most).delays_ms())
    assert sum(delays) == timeout
    assert all(0 < d <= most for d in delays)


def test_the_keys_are_read_and_bad_values_refused_naming_the_key() -> None:
    config = {"errors.retry.timeout": "-1", "errors.retry.delay.max.ms": "10"}
    assert RetryPolicy.from_config(config) == RetryPolicy(-1, 10)
    assert RetryPolicy.from_config({}) == RetryPolicy(0, 60_000)
    for key, value in [
        ("errors.retry.timeout", "-2"),
        ("errors.retry.timeout", "soon"),
        ("errors.retry.delay.max.ms", "0"),
    ]:
        with pytest.raises(ConfigException, match=key):
            RetryPolicy.from_config({key: value})


async def test_a_call_is_tried_again_until_it_passes_or_the_time_is_up() -> None:
    tries: list[int] = []

    async def busy_twice() -> str:
        tries.append(len(tries))
        if len(tries) <= 2:
            raise RetriableError("busy")
        return "done"

    heard: list[tuple[int, float]] = []
    policy = RetryPolicy(1000, 1)
    assert await retrying(busy_twice, policy, lambda n, e, s: heard.append((n, s))) == "done"
    assert heard == [(1, 0.001), (2, 0.001)]

    async def always_busy() -> str:
        raise RetriableError("still busy")

    with pytest.raises(RetriableError, match="still busy"):
        await retrying(always_busy, RetryPolicy(3, 1), lambda n, e, s: None)


async def test_any_error_the_caller_calls_retriable_is_tried_again_and_no_other() -> None:
    def busy(error: Exception) -> TypeGuard[LookupError]:
        return isinstance(error, LookupError)

    failures: list[Exception] = [KeyError("busy"), IndexError("busy"), ValueError("broken")]

    async def failing() -> str:
        raise failures.pop(0)

    heard: list[tuple[int, str]] = []
    with pytest.raises(ValueError, match="broken"):  # not retriable: raised at once
        await retrying_on(
            busy, failing, RetryPolicy(1000, 1), lambda n, e, s: heard.append((n, repr(e)))
        )
    assert heard == [(1, "KeyError('busy')"), (2, "IndexError('busy')")]

    failures.append(RetriableError("the SDK's own"))
    with pytest.raises(RetriableError):  # not retriable to this caller either
        await retrying_on(busy, failing, RetryPolicy(1000, 1), lambda n, e, s: None)
