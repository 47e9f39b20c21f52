"""The console's first page: how long a browser takes from asking for ``/ui/`` to a page an
operator can use, with 200 connectors in the cluster.

The config service is started on a cluster of its own, seeded as ``coldstart`` seeds one (each
connector with two tasks, every unit RUNNING), and is ready (replayed) before the clock. Each
load is a fresh browser context of Debian's Chromium, headless, driven by Playwright, so nothing
is cached. The clock runs from ``page.goto`` until the page is interactive: its script has
started, read the session and the board, drawn every connector's row, and asked for its live
updates (``body[data-ready]`` and a row per connector). The goal is 2 s; no peer runs this
workload, so it reports times and no ratios.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping

from playwright.sync_api import sync_playwright

from bench.env import BenchEnv
from bench.harness import Measure
from bench.workloads.coldstart import own_cluster, seed
from headrace.local import chromium
from headrace.local.stack import CONFIG, Stack

CONNECTORS = 200
SMOKE_CONNECTORS = 5
LOADS = 5  # per run; the figure is their median, the first (cold) one apart
FIRST = "first load, browser just started"
WARM = "later loads, median"


class Console:
    name = "console"
    description = "the console's first page interactive, 200 connectors"
    measures: Mapping[str, Measure] = {
        FIRST: Measure("s", higher_is_better=False),
        WARM: Measure("s", higher_is_better=False),
    }
    ratios: tuple[tuple[str, str], ...] = ()
    max_repeats = 3

    def parameters(self, smoke: bool) -> dict[str, object]:
        return {"connectors": SMOKE_CONNECTORS if smoke else CONNECTORS, "loads": LOADS}

    def run_once(self, env: BenchEnv, parameters: Mapping[str, object]) -> dict[str, float]:
        n, loads = int(str(parameters["connectors"])), int(str(parameters["loads"]))
        settings = own_cluster(env, f"console{n}")
        asyncio.run(seed(settings, n, 2))
        stack = Stack(settings)
        try:
            stack.start("config", ready=CONFIG)
            times = page_loads(f"http://{settings.rest_addr}/ui/", n, loads)
        finally:
            stack.stop("config")
        later = sorted(times[1:])
        return {FIRST: times[0], WARM: later[len(later) // 2] if later else times[0]}


def page_loads(url: str, connectors: int, loads: int) -> list[float]:
    """Seconds from asking for the page to its being interactive, a fresh context each."""
    times: list[float] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium.executable(), args=list(chromium.ARGS)
        )
        try:
            for _ in range(loads):
                context = browser.new_context(viewport={"width": 1400, "height": 900})
                page = context.new_page()
                started = time.perf_counter()
                page.goto(url)
                page.wait_for_selector("body[data-ready]", timeout=60_000)
                page.wait_for_function(
                    f"document.querySelectorAll('#connectors tbody tr').length === {connectors}",
                    timeout=60_000,
                )
                times.append(time.perf_counter() - started)
                rows = page.locator("#connectors tbody tr").count()
                context.close()
                if rows != connectors:
                    raise RuntimeError(f"the page listed {rows} connectors of {connectors}")
        finally:
            browser.close()
    return times
