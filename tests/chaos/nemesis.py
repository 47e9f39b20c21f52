"""The nemesis's plan: which fault, where and for how long, drawn from a seed.

A plan is a pure function of the seed, the run's length and what can be hit, so a seed names
a run: its faults come in the same order, at the same times, on the same kind of target (which
plugin process, of those alive when the fault comes, is drawn from the fault's own generator).
Faults overlap: the next may start while the last one's hold has not ended.

- ``kill``: SIGKILL; the process is started again after the hold (a plugin process is started
  again by its worker, when that worker sees it gone).
- ``term``: SIGTERM, the same.
- ``freeze``: SIGSTOP, and SIGCONT after the hold, longer than a worker's session: a frozen
  worker is taken for dead and its units run elsewhere, and it wakes up as a zombie.
- ``slow`` / ``refuse``: the proxy in front of the broker or the executor delays every byte, or
  refuses and cuts every connection, for the hold.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

SERVICES = (
    "config",
    "coordinator",
    "coordinator-2",
    "worker-1",
    "worker-2",
    "worker-3",
    "executor",
)
PLUGIN = "plugin"  # any plugin process of any worker, chosen when the fault comes
BROKER = "broker"
PROXIED = ("broker-link", "executor-link")

# How often each kind of fault is drawn, and the hold it gets (seconds, low and high).
KINDS: dict[str, tuple[int, tuple[float, float]]] = {
    "kill": (5, (0.5, 8.0)),
    "term": (2, (0.5, 5.0)),
    "freeze": (2, (10.0, 20.0)),
    "slow": (1, (3.0, 10.0)),
    "refuse": (1, (2.0, 8.0)),
}


@dataclass(frozen=True)
class Fault:
    number: int
    at_s: float  # from the start of the faults
    kind: str
    target: str  # a service's name, PLUGIN, BROKER, or a proxied link
    hold_s: float
    seed: int  # for the choice made when the fault comes (which plugin process)

    def describe(self) -> dict[str, object]:
        return {
            "fault": self.number,
            "kind": self.kind,
            "target": self.target,
            "hold_s": round(self.hold_s, 2),
        }


def targets(kind: str) -> tuple[str, ...]:
    if kind in ("slow", "refuse"):
        return PROXIED
    if kind == "freeze":
        return (*SERVICES, PLUGIN)
    return (*SERVICES, PLUGIN, BROKER)


def plan(seed: int, duration_s: float, mean_gap_s: float = 6.0) -> list[Fault]:
    """The faults of a run of ``duration_s`` seconds: gaps drawn around ``mean_gap_s``, each
    fault's kind by its weight, its target among those the kind can hit. None starts in the
    last ``mean_gap_s``, so the last hold can end inside the run."""
    rng = random.Random(seed)
    names = list(KINDS)
    weights = [KINDS[k][0] for k in names]
    faults: list[Fault] = []
    at = rng.uniform(mean_gap_s / 2, mean_gap_s)
    while at < duration_s - mean_gap_s:
        kind = rng.choices(names, weights)[0]
        low, high = KINDS[kind][1]
        faults.append(
            Fault(
                number=len(faults) + 1,
                at_s=round(at, 3),
                kind=kind,
                target=rng.choice(targets(kind)),
                hold_s=round(rng.uniform(low, high), 3),
                seed=rng.getrandbits(32),
            )
        )
        at += rng.expovariate(1 / mean_gap_s)
    return faults


def pick(fault: Fault, candidates: list[int]) -> int | None:
    """The process a fault on a plugin process hits, of those alive when it comes."""
    if not candidates:
        return None
    return random.Random(fault.seed).choice(sorted(candidates))
