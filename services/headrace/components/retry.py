"""Retries of a task's calls that fail with ``RetriableError`` (KIP-298's ``errors.retry.*``).

| key | default | meaning |
| --- | --- | --- |
| ``errors.retry.timeout`` | 0 | ms a failing call is retried for; 0: not at all, -1: forever |
| ``errors.retry.delay.max.ms`` | 60000 | the longest wait between two tries |

The waits grow as Connect's do: 300 ms, then twice the last, at most ``delay.max``, and never
past the timeout. What is retried is a source task's ``poll`` and a sink task's ``put`` (and
``put_batch``), each try a call of its own under the plugin-call bound; a ``RetriableError``
still failing when the time is up fails the task with it, as any other error does. A source
task's Kafka transaction is retried under the same policy when the producer fails with an error
the Kafka client calls retriable: it is aborted and written again whole (``transactions.py``).
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TypeGuard, TypeVar

from headrace.core.model.connectorconfig import whole_number
from headrace.sdk.errors import RetriableError

T = TypeVar("T")
E = TypeVar("E", bound=Exception)

TIMEOUT = "errors.retry.timeout"
DELAY_MAX = "errors.retry.delay.max.ms"
FIRST_DELAY_MS = 300  # Connect's RETRIES_DELAY_MIN_MS


@dataclass(frozen=True)
class RetryPolicy:
    timeout_ms: int = 0  # -1: forever
    delay_max_ms: int = 60_000

    @classmethod
    def from_config(cls, config: Mapping[str, str]) -> RetryPolicy:
        """The connector's policy; ConfigException naming the key of a value that is not one."""
        raw = config.get(TIMEOUT, "").strip()
        timeout = -1 if raw == "-1" else whole_number(config, TIMEOUT, 0)
        delay_max = whole_number(config, DELAY_MAX, 60_000, minimum=1)
        return cls(timeout, delay_max)

    def delays_ms(self) -> Iterator[int]:
        """The waits before each next try, until the timeout would be passed."""
        waited, delay = 0, FIRST_DELAY_MS
        while self.timeout_ms < 0 or waited < self.timeout_ms:
            wait = min(delay, self.delay_max_ms)
            if self.timeout_ms >= 0:
                wait = min(wait, self.timeout_ms - waited)
            yield wait
            waited += wait
            delay *= 2


async def retrying(
    call: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    on_retry: Callable[[int, RetriableError, float], None],
) -> T:
    """``call``'s result, trying again after each ``RetriableError`` as long as ``policy`` says;
    ``on_retry`` hears of each (try number, error, seconds it waits)."""
    return await retrying_on(_is_retriable_error, call, policy, on_retry)


async def retrying_on(
    retriable: Callable[[Exception], TypeGuard[E]],
    call: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    on_retry: Callable[[int, E, float], None],
) -> T:
    """``retrying`` for the errors ``retriable`` accepts; any other is raised at once."""
    delays = policy.delays_ms()
    for attempt in itertools.count(1):
        try:
            return await call()
        except Exception as exc:
            if not retriable(exc):
                raise
            delay_ms = next(delays, None)
            if delay_ms is None:
                raise
            on_retry(attempt, exc, delay_ms / 1000)
            await asyncio.sleep(delay_ms / 1000)
    raise AssertionError("unreachable")


def _is_retriable_error(error: Exception) -> TypeGuard[RetriableError]:
    return isinstance(error, RetriableError)
