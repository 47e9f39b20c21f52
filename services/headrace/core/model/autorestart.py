"""Automatic restarts of FAILED connectors and tasks, with exponential backoff and a bounded
number of attempts (Kafka Connect has none; Strimzi's operator offers them). Pure: what to do
about one unit, given its state, its last automatic restart and the time.

A connector opts in with its config:

| key | default | meaning |
| --- | --- | --- |
| ``auto.restart.enable`` | false | restart its FAILED connector and tasks automatically |
| ``auto.restart.max.attempts`` | 10 | attempts in a row before giving up (the unit stays FAILED) |
| ``auto.restart.backoff.ms`` | 30000 | wait before the first attempt (then doubling, to 10 min) |

Attempts are counted per unit, from its failure on: attempt n comes ``backoff * 2^(n-1)`` after
the one before it (the first, ``backoff`` after the failure was seen). A unit that then runs for
as long as its next wait would have been has recovered, and its count starts again at 0. The
config service records each attempt on the configs topic, so the count survives its restarts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from headrace.core.model.connectorconfig import whole_number
from headrace.sdk.errors import ConfigException

ENABLE = "auto.restart.enable"
MAX_ATTEMPTS = "auto.restart.max.attempts"
BACKOFF = "auto.restart.backoff.ms"
MAX_BACKOFF_MS = 10 * 60 * 1000


@dataclass(frozen=True)
class Policy:
    enabled: bool = False
    max_attempts: int = 10
    backoff_ms: int = 30_000

    def delay_ms(self, attempt: int) -> int:
        """How long attempt ``attempt`` (1, 2, ...) waits after the one before it."""
        return min(self.backoff_ms * 2 ** max(attempt - 1, 0), MAX_BACKOFF_MS)


def policy_of(config: Mapping[str, str]) -> Policy:
    """The connector's policy; ConfigException naming the key of a value that is not one."""
    raw = config.get(ENABLE, "false").strip().lower()
    if raw not in ("true", "false"):
        raise ConfigException(f"{ENABLE}: {raw!r} is not true or false")
    attempts, backoff = (
        whole_number(config, MAX_ATTEMPTS, 10),
        whole_number(config, BACKOFF, 30_000),
    )
    return Policy(raw == "true", attempts, backoff)


@dataclass(frozen=True)
class Attempt:
    """The last automatic restart of a unit: the how-manieth in a row, and when (epoch ms)."""

    count: int
    at_ms: int


@dataclass(frozen=True)
class Restart:
    attempt: int


@dataclass(frozen=True)
class Wait:
    attempt: int
    until_ms: int


@dataclass(frozen=True)
class GiveUp:
    attempts: int


@dataclass(frozen=True)
class Recovered:
    """The unit ran for as long as its next wait: its count starts again."""


Step = Restart | Wait | GiveUp | Recovered | None


def next_step(
    policy: Policy,
    state: str,
    last: Attempt | None,
    failed_seen_ms: int | None,
    now_ms: int,
) -> Step:
    """What to do about a unit in ``state`` (RUNNING, FAILED...): ``last`` is its last automatic
    restart, ``failed_seen_ms`` when it was first seen FAILED since (None: not seen yet)."""
    if not policy.enabled:
        return None
    count = last.count if last is not None else 0
    if state == "RUNNING":
        if last is not None and now_ms - last.at_ms >= policy.delay_ms(count + 1):
            return Recovered()
        return None
    if state != "FAILED":
        return None
    if count >= policy.max_attempts:
        return GiveUp(count)
    since = (
        last.at_ms
        if last is not None
        else (failed_seen_ms if failed_seen_ms is not None else now_ms)
    )
    due = since + policy.delay_ms(count + 1)
    return Restart(count + 1) if now_ms >= due else Wait(count + 1, due)


@dataclass(frozen=True)
class Shown:
    """What a unit's status says of its automatic restarts."""

    attempts: int = 0
    next_ms: int = 0  # when the next is due; 0: none is
    given_up: bool = False


def shown(step: Step, last: Attempt | None, now_ms: int) -> Shown:
    """The status's view of a unit whose next step is ``step``."""
    attempts = last.count if last is not None else 0
    match step:
        case Wait(_, until_ms):
            return Shown(attempts, until_ms)
        case Restart():
            return Shown(attempts, now_ms)
        case GiveUp():
            return Shown(attempts, 0, True)
    return Shown(attempts)
