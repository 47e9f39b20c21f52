"""How the benchmarks say a start grows with the connectors it replays: the exponent of
t = a + b·N^k, which a fixed cost of starting cannot pull down."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bench.workloads.coldstart import PLANE, SIZES, figures, fitted_exponent


@given(
    fixed=st.floats(0.0, 5.0),
    per=st.floats(1e-7, 1e-4),
    k=st.floats(0.5, 2.5),
)
def test_the_exponent_of_a_start_with_a_fixed_cost_is_the_replay_s_own(
    fixed: float, per: float, k: float
) -> None:
    points = [(n, fixed + per * n**k) for n in SIZES]
    assert fitted_exponent(points) == pytest.approx(k, abs=1e-6)


def test_a_linear_replay_after_a_second_of_start_up_reads_as_linear() -> None:
    """The ratio of the two largest totals said 0.6 for this: the start-up second hid the
    growth."""
    points = [(n, 1.0 + 2e-5 * n) for n in SIZES]
    assert fitted_exponent(points) == pytest.approx(1.0)


def test_times_that_do_not_grow_fit_no_curve() -> None:
    with pytest.raises(ValueError, match="do not grow"):
        fitted_exponent([(1_000, 1.0), (10_000, 0.9), (100_000, 3.0)])


def test_the_figures_give_the_cost_of_each_further_connector_between_sizes() -> None:
    times = {
        n: {"config": 1.0 + 3e-5 * n, "coordinator": 0.5 + 1e-5 * n, PLANE: 1.2 + 4e-5 * n}
        for n in SIZES
    }
    out = figures(times)
    assert out["config service and coordinator at once 100,000 connectors"] == pytest.approx(5.2)
    assert out["config service per connector, 1,000 to 10,000"] == pytest.approx(30.0)
    assert out["coordinator per connector, 10,000 to 100,000"] == pytest.approx(10.0)
    assert out["config service growth exponent, 1,000 to 100,000"] == pytest.approx(1.0)
