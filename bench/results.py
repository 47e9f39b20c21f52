"""What a benchmark run measured: each figure over its repetitions, the ratios of headrace to its
peers, and each workload's result. Data only: the harness makes them, the report, the charts
and the goals read them."""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Figure:
    """One measured quantity over the repetitions, e.g. ``headrace end to end`` in records/s."""

    name: str
    unit: str
    values: tuple[float, ...]
    higher_is_better: bool = True

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    @property
    def spread(self) -> tuple[float, float]:
        return min(self.values), max(self.values)


@dataclass(frozen=True)
class Ratio:
    """headrace's figure over a peer's, both medians of this run (> 1 means headrace is ahead
    for rates; for times and memory, where lower is better, the ratio is inverted so that > 1
    still means headrace is ahead)."""

    subject: str
    peer: str
    value: float


@dataclass(frozen=True)
class Measure:
    """What a workload says of one figure: its unit and which way is better."""

    unit: str
    higher_is_better: bool = True


@dataclass(frozen=True)
class Result:
    workload: str
    description: str
    repeats: int
    warmups: int
    figures: tuple[Figure, ...]
    ratios: tuple[Ratio, ...]
    parameters: Mapping[str, object] = field(default_factory=dict)
