"""Runs workloads several times after a warm-up, and reports each figure with its spread and the
ratio of headrace to every peer measured in the same run.

A workload measures one repetition and returns its figures by name (records/s, seconds, MiB);
the harness keeps every repetition, reports the median and the spread (lowest to highest), and
divides medians for the ratios the workload names. Absolute numbers on a shared machine say
little; ratios between things measured side by side, minutes apart, say what there is to say.
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Protocol

from bench.env import BenchEnv
from bench.goals import goals_table
from bench.results import Figure, Measure, Ratio, Result


class Workload(Protocol):
    name: str
    description: str
    measures: Mapping[str, Measure]  # figure name -> unit, direction
    ratios: tuple[tuple[str, str], ...]  # (headrace figure, peer figure)
    # At most this many measured runs, whatever the command line asks: a workload that takes
    # minutes a run keeps the whole of `make bench` inside its budget.
    max_repeats: int

    def parameters(self, smoke: bool) -> dict[str, object]: ...

    def run_once(self, env: BenchEnv, parameters: Mapping[str, object]) -> dict[str, float]:
        """One repetition: every figure in ``measures``, by name."""
        ...


def run(workload: Workload, env: BenchEnv, *, repeats: int, warmups: int, smoke: bool) -> Result:
    """Warm-ups first, at smoke size and thrown away: plugin processes, JVMs' JIT and Spark's
    first job start there, and a small run starts them as well as a big one. Then the measured
    repetitions, each told its turn (``env.turn``), by which the systems it runs take turns
    going first. The peers a workload keeps (``env.kept``) live from the warm-up to its last
    run, as headrace's services do, and are stopped after it."""
    parameters = workload.parameters(smoke)
    repeats = min(repeats, workload.max_repeats)
    samples: dict[str, list[float]] = {name: [] for name in workload.measures}
    try:
        for _ in range(warmups):
            env.turn = 0
            workload.run_once(env, workload.parameters(True))
        for turn in range(repeats):
            env.turn = turn  # the systems of a run take turns going first: A-B-B-A
            measured = workload.run_once(env, parameters)
            for name in workload.measures:
                samples[name].append(measured[name])
    finally:
        env.stop_kept()  # the peers it kept warm, as headrace's services are
    figures = tuple(
        Figure(name, m.unit, tuple(samples[name]), m.higher_is_better)
        for name, m in workload.measures.items()
    )
    return Result(
        workload.name,
        workload.description,
        repeats,
        warmups,
        figures,
        tuple(ratio(figures, subject, peer) for subject, peer in workload.ratios),
        parameters,
    )


POLL_S = 0.2


async def watch(
    what: str, progress: Callable[[], Awaitable[int]], n: int, started: float, deadline_s: float
) -> tuple[float, float]:
    """(end to end, steady state) records/s of ``n`` records, polling how many are out.

    End to end runs from ``started`` to the last record out; steady state from the first record
    out to the last, so start-up costs (a JVM, plugin processes, Spark's first job) stay out of
    the rate.
    """
    first_at, first_count = 0.0, 0
    while (now := time.perf_counter()) - started < deadline_s:
        count = await progress()
        if count and not first_at:
            first_at, first_count = now, count
        if count >= n:
            end_to_end = n / (now - started)
            steady = (n - first_count) / (now - first_at) if now > first_at else end_to_end
            return end_to_end, steady
        await asyncio.sleep(POLL_S)
    raise RuntimeError(f"{what}: {await progress()} of {n} records in {deadline_s}s")


def ratio(figures: tuple[Figure, ...], subject: str, peer: str) -> Ratio:
    by_name = {f.name: f for f in figures}
    ours, theirs = by_name[subject], by_name[peer]
    value = ours.median / theirs.median
    return Ratio(subject, peer, value if ours.higher_is_better else 1 / value)


def machine() -> str:
    """The machine in one line, for the report's heading."""
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return (
        f"{os.cpu_count()} cores, {memory:.0f} GiB, {platform.system()} {platform.machine()}, "
        f"Python {platform.python_version()}"
    )


def _number(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.2f}"


def markdown(results: list[Result], charts: Mapping[str, Path] | None = None) -> str:
    """The report as markdown tables: figures with their spread, then the ratios; each
    workload's chart under its heading when ``charts`` has one (a path beside the report)."""
    lines = [f"Machine: {machine()}.", ""]
    for result in results:
        params = ", ".join(f"{k}={v}" for k, v in result.parameters.items())
        drawn = (charts or {}).get(result.workload)
        lines += [
            f"### {result.workload}: {result.description}",
            "",
            *([f"![{result.workload}]({drawn.name})", ""] if drawn else []),
            f"{result.repeats} measured run(s) after {result.warmups} warm-up(s); {params}.",
            "",
            "| figure | median | spread (low - high) | unit |",
            "| --- | ---: | ---: | --- |",
        ]
        for f in result.figures:
            low, high = f.spread
            lines.append(
                f"| {f.name} | {_number(f.median)} | {_number(low)} - {_number(high)} | {f.unit} |"
            )
        lines.append("")
        if result.ratios:
            lines += ["| headrace | against | ratio |", "| --- | --- | ---: |"]
            lines += [f"| {r.subject} | {r.peer} | {r.value:.2f}x |" for r in result.ratios]
            lines.append("")
    return "\n".join(lines + memory_table(results) + goals_table(results))


def memory_table(results: list[Result]) -> list[str]:
    """Every process's peak memory, from every workload that sampled it, in one table: its peak
    resident set (RSS) and, where sampled, its peak proportional set (PSS)."""
    rows: dict[tuple[str, str], dict[str, float]] = {}
    for r in results:
        for f in r.figures:
            if f.unit != "MiB":
                continue
            name, _, size = f.name.rpartition(" peak ")
            if size not in ("RSS", "PSS"):
                name, size = f.name, "RSS"
            rows.setdefault((r.workload, name), {})[size] = f.median
    if not rows:
        return []
    return [
        "### memory: peak RSS and PSS while the workloads ran",
        "",
        "| workload | processes | RSS MiB | PSS MiB |",
        "| --- | --- | ---: | ---: |",
        *(
            f"| {workload} | {name} | {_either(sizes.get('RSS'))} | {_either(sizes.get('PSS'))} |"
            for (workload, name), sizes in rows.items()
        ),
        "",
    ]


def _either(value: float | None) -> str:
    return "-" if value is None else _number(value)


def save(results: list[Result], folder: Path, failed: list[str] | None = None) -> tuple[Path, Path]:
    """Writes the run as JSON and as markdown under ``folder``, and a chart per workload
    (``<workload>.png``, which the markdown shows); also ``latest.md``."""
    folder.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    as_json = folder / f"bench-{stamp}.json"
    as_md = folder / f"bench-{stamp}.md"
    payload = {
        "machine": machine(),
        "results": [
            {**asdict(r), "figures": [{**asdict(f), "median": f.median} for f in r.figures]}
            for r in results
        ],
    }
    as_json.write_text(json.dumps(payload, indent=2, default=str) + "\n")
    from bench.charts import charts  # drawing needs matplotlib, which the arithmetic does not

    text = markdown(results, charts(results, folder))
    if failed:  # a partial report must say so, since it also becomes latest.md
        text += f"\nFailed, so not in this report: {', '.join(failed)}.\n"
    as_md.write_text(text)
    (folder / "latest.md").write_text(text)
    return as_json, as_md
