"""The benchmarks' goals: each computed from the run's own ratios and figures, and each naming
only what its workload reports."""

from __future__ import annotations

import pytest

from bench.goals import GOALS, FigureGoal, RatioGoal, goals_table, verdict
from bench.results import Figure, Ratio, Result
from bench.workloads import WORKLOADS


@pytest.mark.parametrize("goal", GOALS, ids=lambda g: f"{g.workload}: {g.goal}")
def test_each_goal_names_what_its_workload_reports(goal: RatioGoal | FigureGoal) -> None:
    workload = WORKLOADS[goal.workload]
    if isinstance(goal, RatioGoal):
        missing = [pair for pair in goal.ratios if pair not in workload.ratios]
        assert not missing, f"{goal.workload} reports no ratio {missing}"
    else:
        assert goal.figure in workload.measures


GOAL = RatioGoal("file", "≥2x", (("a", "b"), ("c", "d")), 2.0)


def result(**ratios: float) -> Result:
    pairs = {"ab": ("a", "b"), "cd": ("c", "d")}
    return Result("file", "", 3, 1, (), tuple(Ratio(*pairs[k], v) for k, v in ratios.items()))


def test_a_ratio_goal_is_met_only_when_every_ratio_it_names_is() -> None:
    assert verdict(GOAL, [result(ab=2.5, cd=2.0)]) == ("met", "2.00x at the lowest")
    assert verdict(GOAL, [result(ab=2.5, cd=1.9)]) == ("not met", "1.90x at the lowest")


def test_a_goal_the_run_did_not_measure_is_never_met() -> None:
    assert verdict(GOAL, [])[0] == "not measured"
    assert verdict(GOAL, [result(ab=3.0)]) == ("not measured", "no ratio of 'c' to 'd'")


def test_a_figure_goal_holds_at_or_below_its_bound() -> None:
    goal = FigureGoal("coldstart", "≤5 s", "t", 5.0)

    def run(seconds: float) -> list[Result]:
        return [Result("coldstart", "", 3, 1, (Figure("t", "s", (seconds,), False),), ())]

    assert verdict(goal, run(4.2)) == ("met", "4.2")
    assert verdict(goal, run(5.1))[0] == "not met"


def test_the_table_lists_every_goal_with_its_verdict() -> None:
    table = goals_table([result(ab=2.5, cd=2.0)])
    assert len([row for row in table if row.startswith("| `")]) == len(GOALS)
