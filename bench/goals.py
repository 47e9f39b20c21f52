"""The goals headrace's benchmarks hold it to, and whether a run met each: computed from the
run's own ratios and figures, never written by hand.

A ratio goal holds when every ratio it names is at least its bound (ratios read so that more is
better for headrace, memory included: ``0.5x Connect's memory`` is a ratio of 2). A figure goal
holds when the figure's median is at most its bound. A goal whose workload did not run, or whose
ratio or figure the run did not report, is "not measured", never met.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bench.results import Result

SCENARIOS = ("end to end", "steady state", "source alone", "sink alone")
CONNECT = "Kafka Connect distributed"
TUNED = "Kafka Connect distributed, tuned"


@dataclass(frozen=True)
class RatioGoal:
    workload: str
    goal: str
    ratios: tuple[tuple[str, str], ...]  # (headrace figure, peer figure)
    at_least: float


@dataclass(frozen=True)
class FigureGoal:
    workload: str
    goal: str
    figure: str
    at_most: float


Goal = RatioGoal | FigureGoal


def _each_scenario(subject: str, peer: str) -> tuple[tuple[str, str], ...]:
    return tuple((f"{subject} {s}", f"{peer} {s}") for s in SCENARIOS)


GOALS: tuple[Goal, ...] = (
    RatioGoal(
        "file",
        "≥2.0x Kafka Connect distributed, defaults and tuned, on every figure",
        _each_scenario("headrace", CONNECT) + _each_scenario("headrace", TUNED),
        2.0,
    ),
    RatioGoal(
        "file",
        "≥0.6x the raw aiokafka ceiling, pipelined, end to end and steady",
        (
            ("headrace end to end", "raw aiokafka produce and consume, pipelined"),
            ("headrace steady state", "raw aiokafka produce and consume, pipelined"),
        ),
        0.6,
    ),
    RatioGoal(
        "file",
        "memory (PSS, every process) ≤0.5x Kafka Connect distributed's",
        (("headrace, every process peak PSS", "Kafka Connect distributed workers peak PSS"),),
        2.0,
    ),
    RatioGoal(
        "jvm-file",
        "≥1.0x Kafka Connect standalone on every figure",
        _each_scenario("headrace JVM host", "Kafka Connect standalone"),
        1.0,
    ),
    RatioGoal(
        "jvm-file",
        "memory (PSS, every process) ≤1.0x Kafka Connect standalone's",
        (("headrace, every process peak PSS", "Kafka Connect standalone worker peak PSS"),),
        1.0,
    ),
    RatioGoal(
        "parquet",
        "≥2.0x Quix Streams, end to end and steady",
        (
            ("headrace end to end", "Quix Streams end to end"),
            ("headrace steady state", "Quix Streams steady state"),
        ),
        2.0,
    ),
    RatioGoal(
        "parquet",
        "≥1.0x warm, tuned Spark direct, end to end and steady",
        (
            ("headrace end to end", "Spark direct from Arrow"),
            ("headrace steady state", "Spark direct from Arrow"),
        ),
        1.0,
    ),
    RatioGoal(
        "parquet",
        "memory (PSS, every process) ≤2x Quix Streams'",
        (("headrace, every process peak PSS", "Quix Streams peak PSS"),),
        0.5,
    ),
    RatioGoal(
        "delta",
        "≥1.0x Spark direct",
        (("headrace steady state", "Spark direct from Arrow"),),
        1.0,
    ),
    RatioGoal(
        "rebalance",
        "≥1.0x Kafka Connect distributed at 1, 8 and 32 tasks",
        tuple(
            (f"headrace create to {n} tasks RUNNING", f"{CONNECT} create to {n} tasks RUNNING")
            for n in (1, 8, 32)
        ),
        1.0,
    ),
    FigureGoal(
        "coldstart", "config service ≤5 s at 100,000", "config service 100,000 connectors", 5.0
    ),
    FigureGoal("coldstart", "coordinator ≤5 s at 100,000", "coordinator 100,000 connectors", 5.0),
    FigureGoal(
        "coldstart",
        "config service's fitted exponent ≤1.05",
        "config service growth exponent, 1,000 to 100,000",
        1.05,
    ),
    FigureGoal(
        "coldstart",
        "coordinator's fitted exponent ≤1.05",
        "coordinator growth exponent, 1,000 to 100,000",
        1.05,
    ),
)


def verdict(goal: Goal, results: Sequence[Result]) -> tuple[str, str]:
    """("met" | "not met" | "not measured", what the run measured for it)."""
    result = next((r for r in results if r.workload == goal.workload), None)
    if result is None:
        return "not measured", "the workload did not run"
    if isinstance(goal, FigureGoal):
        figure = next((f for f in result.figures if f.name == goal.figure), None)
        if figure is None:
            return "not measured", f"no figure {goal.figure!r}"
        return ("met" if figure.median <= goal.at_most else "not met"), f"{figure.median:.3g}"
    by_pair = {(r.subject, r.peer): r.value for r in result.ratios}
    missing = [pair for pair in goal.ratios if pair not in by_pair]
    if missing:
        return "not measured", f"no ratio of {missing[0][0]!r} to {missing[0][1]!r}"
    values = [by_pair[pair] for pair in goal.ratios]
    lowest = min(values)
    said = f"{lowest:.2f}x at the lowest" if len(values) > 1 else f"{lowest:.2f}x"
    return ("met" if lowest >= goal.at_least else "not met"), said


def goals_table(results: Sequence[Result]) -> list[str]:
    """The goals, each with the run's verdict, as a markdown table."""
    rows = []
    for goal in GOALS:
        state, measured = verdict(goal, results)
        rows.append(f"| `{goal.workload}` | {goal.goal} | {measured} | {state} |")
    return [
        "### goals, as this run measured them",
        "",
        "| workload | goal | measured | |",
        "| --- | --- | --- | --- |",
        *rows,
        "",
    ]
