"""The benchmark harness's arithmetic: medians, spreads, ratios that read the same way for rates
and for times, the cap on measured runs, warm-ups at smoke size, the memory table and the charts'
colours."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest
from PIL import Image

from bench.charts import is_headrace
from bench.env import BenchEnv, abba
from bench.harness import Figure, Measure, Ratio, Result, markdown, memory_table, run, save


class Scripted:
    """A workload whose repetitions return figures from a script, recording what it was asked."""

    name = "scripted"
    description = "figures from a script"
    measures: Mapping[str, Measure] = {
        "ours": Measure("records/s"),
        "theirs": Measure("records/s"),
        "our time": Measure("s", higher_is_better=False),
        "their time": Measure("s", higher_is_better=False),
        "our memory": Measure("MiB", higher_is_better=False),
    }
    ratios: tuple[tuple[str, str], ...] = (("ours", "theirs"), ("our time", "their time"))
    max_repeats = 2

    def __init__(self, script: list[dict[str, float]]) -> None:
        self.script = script
        self.asked: list[Mapping[str, object]] = []
        self.orders: list[str] = []
        self.systems = tuple((lambda s=s: {s: 1.0}) for s in "AB")

    def parameters(self, smoke: bool) -> dict[str, object]:
        return {"records": 10 if smoke else 1_000}

    def run_once(self, env: BenchEnv, parameters: Mapping[str, object]) -> dict[str, float]:
        self.orders.append("".join(env.each_system(*self.systems)))
        self.asked.append(parameters)
        return self.script[len(self.asked) - 1]


def figures(ours: float, theirs: float, our_time: float, their_time: float) -> dict[str, float]:
    return {
        "ours": ours,
        "theirs": theirs,
        "our time": our_time,
        "their time": their_time,
        "our memory": 100.0,
    }


NO_ENV = BenchEnv(Path("/nonexistent"))  # never entered: no broker, no stack


def test_warmups_run_at_smoke_size_and_are_thrown_away() -> None:
    workload = Scripted([figures(1, 1, 1, 1), figures(10, 20, 2, 1), figures(30, 20, 4, 1)])

    result = run(workload, NO_ENV, repeats=2, warmups=1, smoke=False)

    assert [p["records"] for p in workload.asked] == [10, 1_000, 1_000]
    ours = next(f for f in result.figures if f.name == "ours")
    assert ours.values == (10, 30)
    assert ours.median == 20
    assert ours.spread == (10, 30)


def test_measured_runs_are_capped_by_the_workload() -> None:
    workload = Scripted([figures(i, 1, 1, 1) for i in range(1, 6)])

    result = run(workload, NO_ENV, repeats=5, warmups=0, smoke=False)

    assert result.repeats == 2
    assert len(workload.asked) == 2


def test_ratios_above_one_mean_headrace_is_ahead_for_rates_and_for_times() -> None:
    # Twice the rate of the peer, and half its time: both read as 2x.
    workload = Scripted([figures(200, 100, 1, 2), figures(200, 100, 1, 2)])

    result = run(workload, NO_ENV, repeats=2, warmups=0, smoke=False)

    assert {(r.subject, r.value) for r in result.ratios} == {("ours", 2.0), ("our time", 2.0)}


def test_the_report_names_every_figure_ratio_and_peak() -> None:
    workload = Scripted([figures(200, 100, 1, 2)])
    result: Result = run(workload, NO_ENV, repeats=1, warmups=0, smoke=False)

    report = markdown([result])

    assert "| ours | theirs | 2.00x |" in report
    assert "| scripted | our memory | 100 |" in report
    assert "records=1000" in report


@pytest.mark.parametrize("smoke", [True, False])
def test_a_smoke_run_uses_smoke_parameters(smoke: bool) -> None:
    workload = Scripted([figures(1, 1, 1, 1)])

    run(workload, NO_ENV, repeats=1, warmups=0, smoke=smoke)

    assert workload.asked == [{"records": 10 if smoke else 1_000}]


def test_the_report_has_a_chart_per_workload_beside_it(tmp_path: Path) -> None:
    workload = Scripted([figures(10, 20, 2, 1), figures(30, 20, 4, 1)])
    result = run(workload, NO_ENV, repeats=2, warmups=0, smoke=False)
    empty = Result("idle", "measures nothing", 1, 0, (), ())

    save([result, empty], tmp_path)

    chart = tmp_path / "scripted.png"
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with Image.open(chart) as image:  # a panel per unit: rates, times, memory side by side
        assert image.width > 2 * image.height
    assert not (tmp_path / "idle.png").exists()
    latest = (tmp_path / "latest.md").read_text()
    assert "![scripted](scripted.png)" in latest and "![idle]" not in latest


def test_a_chart_colours_every_peer_s_figure_as_a_peer_s() -> None:
    def figure(name: str) -> Figure:
        return Figure(name, "records/s", (1.0,))

    named = ["headrace end to end", "Connect end to end", "Connect memory", "raw produce"]
    compared = Result("w", "d", 1, 0, tuple(map(figure, named)), (Ratio(named[0], named[1], 1.0),))
    alone = Result("solo", "d", 1, 0, (figure("config service 1,000 connectors"),), ())

    assert [is_headrace(f, compared) for f in compared.figures] == [True, False, False, False]
    assert is_headrace(alone.figures[0], alone)  # no peer at all: every figure is headrace's


def test_the_memory_table_puts_each_tree_s_rss_and_pss_side_by_side() -> None:
    def figure(name: str, mib: float) -> Figure:
        return Figure(name, "MiB", (mib,), higher_is_better=False)

    figures = (
        figure("headrace, every process peak RSS", 800),
        figure("headrace, every process peak PSS", 410),
        figure("executor peak RSS, 1 sink task", 300),  # sampled by resident set only
        Figure("headrace end to end", "records/s", (1.0,)),
    )
    result = Result("file", "", 1, 0, figures, ())
    table = memory_table([result])
    assert "| file | headrace, every process | 800 | 410 |" in table
    assert "| file | executor peak RSS, 1 sink task | 300 | - |" in table
    assert not any("end to end" in row for row in table)


def test_the_systems_of_a_workload_take_turns_going_first_a_b_b_a() -> None:
    """Warm-ups in the given order; then the measured runs A-B-B-A, by fours."""
    workload = Scripted([figures(1, 1, 1, 1)] * 6)
    workload.max_repeats = 5
    run(workload, NO_ENV, repeats=5, warmups=1, smoke=False)
    assert workload.orders == ["AB", "AB", "BA", "BA", "AB", "AB"]


@pytest.mark.parametrize(("turn", "order"), [(0, "ABC"), (1, "CBA"), (2, "CBA"), (3, "ABC")])
def test_abba_reverses_the_middle_two_of_every_four(turn: int, order: str) -> None:
    assert "".join(abba(turn, "ABC")) == order


class Keeping(Scripted):
    """A scripted workload with a peer it keeps, as a Connect worker is kept."""

    def __init__(self, script: list[dict[str, float]], fail_at: int = -1) -> None:
        super().__init__(script)
        self.events: list[str] = []
        self.fail_at = fail_at

    def run_once(self, env: BenchEnv, parameters: Mapping[str, object]) -> dict[str, float]:
        peer = env.kept("peer", self._start, lambda p: self.events.append(f"stop {p}"))
        self.events.append(f"use {peer}")
        if len(self.asked) == self.fail_at:
            raise RuntimeError("the run failed")
        return super().run_once(env, parameters)

    def _start(self) -> str:
        self.events.append("start")
        return "peer-1"


def test_a_kept_peer_starts_in_the_warm_up_serves_every_run_and_stops_after() -> None:
    workload = Keeping([figures(1, 1, 1, 1)] * 3)
    run(workload, NO_ENV, repeats=2, warmups=1, smoke=False)
    assert workload.events == ["start", "use peer-1", "use peer-1", "use peer-1", "stop peer-1"]


def test_a_kept_peer_is_stopped_when_a_run_fails() -> None:
    workload = Keeping([figures(1, 1, 1, 1)] * 3, fail_at=1)
    with pytest.raises(RuntimeError, match="the run failed"):
        run(workload, NO_ENV, repeats=2, warmups=1, smoke=False)
    assert workload.events[0] == "start" and workload.events[-1] == "stop peer-1"
