"""One chart per workload, beside the report: its figures side by side, one panel per unit (rates,
times, peak memory), each bar a system's median with its spread drawn as a line from the lowest
run to the highest. Drawn with matplotlib's non-interactive backend: no display is needed."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # after the backend is chosen
from matplotlib.ticker import FuncFormatter, MaxNLocator

from bench.results import Figure, Result

HEADRACE = "#0b5d7a"
PEER = "#9aa5b1"
BAR_HEIGHT_IN = 0.32


def panels(result: Result) -> list[tuple[str, list[Figure]]]:
    """The workload's figures by unit, in the order they first appear."""
    by_unit: dict[str, list[Figure]] = {}
    for figure in result.figures:
        by_unit.setdefault(figure.unit, []).append(figure)
    return list(by_unit.items())


def is_headrace(figure: Figure, result: Result) -> bool:
    """A figure of headrace's own: one a ratio names as headrace's, one named after headrace,
    or any of a workload that has no peer. A peer's figure that no ratio names (Connect
    standalone's memory beside distributed's, the raw produce alone) is a peer's all the same."""
    if not result.ratios:
        return True
    subjects = {r.subject for r in result.ratios}
    return figure.name in subjects or figure.name.startswith("headrace")


def chart(result: Result, path: Path) -> Path:
    """Draws ``result`` to ``path`` (PNG)."""
    groups = panels(result)
    tallest = max(len(figures) for _, figures in groups)
    fig, axes = plt.subplots(
        1,
        len(groups),
        figsize=(6.5 * len(groups), 1.2 + BAR_HEIGHT_IN * tallest * 1.6),
        squeeze=False,
    )
    for ax, (unit, figures) in zip(axes[0], groups, strict=True):
        names = [f.name for f in figures][::-1]  # the first figure on top
        medians = [f.median for f in figures][::-1]
        lows = [f.median - f.spread[0] for f in figures][::-1]
        highs = [f.spread[1] - f.median for f in figures][::-1]
        colours = [HEADRACE if is_headrace(f, result) else PEER for f in figures][::-1]
        ax.barh(names, medians, color=colours, height=0.6, xerr=[lows, highs], capsize=3)
        better = "higher" if figures[0].higher_is_better else "lower"
        ax.set_xlabel(f"{unit} ({better} is better)")
        ax.tick_params(axis="y", labelsize=8)
        ends = [m + h for m, h in zip(medians, highs, strict=True)]
        for y, (value, end) in enumerate(zip(medians, ends, strict=True)):
            ax.annotate(
                f"{value:,.0f}" if abs(value) >= 100 else f"{value:.2f}",
                (end, y),
                xytext=(4, 0),
                textcoords="offset points",
                va="center",
                fontsize=7,
            )
        ax.set_xlim(0, max(ends) * 1.2 or 1.0)
        ax.xaxis.set_major_locator(MaxNLocator(5))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.6g}"))
    fig.suptitle(f"{result.workload}: {result.description}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def charts(results: Sequence[Result], folder: Path) -> dict[str, Path]:
    """A chart per workload in ``folder`` (``<workload>.png``), by workload."""
    folder.mkdir(parents=True, exist_ok=True)
    return {r.workload: chart(r, folder / f"{r.workload}.png") for r in results if r.figures}
