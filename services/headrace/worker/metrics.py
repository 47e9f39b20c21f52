"""The worker's metrics, served with those of its plugin processes on one ``/metrics``.

| name | type | labels | what |
| --- | --- | --- | --- |
| ``headrace_worker_generation`` | gauge | | the generation of the last assignment received |
| ``headrace_worker_rebalances_total`` | counter | | the generations this worker took part in |
| ``headrace_worker_units`` | gauge | connector, kind, state | units here, by their last state |
| ``headrace_worker_plugin_processes`` | gauge | | plugin processes running |

``kind`` is ``connector`` or ``task``; a unit is here from its assignment until it is revoked,
so UNASSIGNED is never counted, and FAILED is until the unit is restarted or moved.

**The plugin processes' metrics.** The task loops run in plugin processes (``headrace.runtime``),
which keep the task metrics of ``headrace.core.observability.metrics``. prometheus-client's
multiprocess mode carries them here: the worker puts a folder of its own in
``PROMETHEUS_MULTIPROC_DIR`` before it starts any plugin process, every plugin process (which
inherits the variable) writes its values to memory-mapped files named for its pid there, and each
scrape merges the files (``PluginFiles``): counters and histograms summed over every process the
worker ever ran, so totals never go back when a plugin process is replaced; gauges summed over the
live ones. A plugin process drops its gauges as it exits, and the scrape drops those of one that
died without doing so. The worker's own metrics stay in its memory (the variable is set after
prometheus-client chose its mode). The folder is fresh for each run of the worker and removed when
it stops; the folders a killed run left behind are removed by the next run of a worker with the same
id.
"""

from __future__ import annotations

import os
import shutil
from collections import Counter as Tally
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge
from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector, mark_process_dead

from headrace.core.model.structs import State, WorkUnit
from headrace.core.runner import alive

GENERATION = Gauge(
    "headrace_worker_generation", "The generation of the last assignment the worker received."
)
REBALANCES = Counter(
    "headrace_worker_rebalances", "Generations (rebalances) the worker took part in."
)

UnitKey = tuple[str, str, str]  # connector, kind, state


def unit_counts(states: Mapping[WorkUnit, State]) -> Tally[UnitKey]:
    """How many units are in each state, by connector and kind."""
    return Tally(
        (unit.connector, "connector" if unit.is_connector else "task", state.value)
        for unit, state in states.items()
    )


class WorkerCollector:
    """The worker's units by state and its plugin processes, read at each scrape from state
    the worker replaces (never mutates), so a scrape on the server's thread reads a whole one."""

    def __init__(
        self, states: Callable[[], Mapping[WorkUnit, State]], processes: Callable[[], int]
    ) -> None:
        self._states = states
        self._processes = processes

    def collect(self) -> Iterator[Metric]:
        units = GaugeMetricFamily(
            "headrace_worker_units",
            "Connectors and tasks assigned to this worker, by the state it last reported.",
            labels=["connector", "kind", "state"],
        )
        for key, count in sorted(unit_counts(self._states()).items()):
            units.add_metric(key, count)
        yield units
        yield GaugeMetricFamily(
            "headrace_worker_plugin_processes",
            "Plugin processes this worker runs.",
            value=self._processes(),
        )


def pid_of(file: Path) -> int | None:
    """The pid a multiprocess file is named for (``<kind>_<pid>.db``); None for another file."""
    _, _, pid = file.stem.rpartition("_")
    return int(pid) if file.suffix == ".db" and pid.isdecimal() else None


class PluginFiles:
    """What the plugin processes wrote to ``folder``, merged at each scrape, with the gauges of
    processes that died without dropping them taken out first. Files named for this process are
    left out: its own metrics are served from memory."""

    def __init__(self, folder: Path, is_alive: Callable[[int], bool] = alive) -> None:
        self.folder = folder
        self._alive = is_alive

    def sweep(self) -> None:
        """Drops the live gauges of processes that are gone."""
        for file in self.folder.glob("gauge_live*_*.db"):
            pid = pid_of(file)
            if pid is not None and not self._alive(pid):
                mark_process_dead(pid, str(self.folder))

    def collect(self) -> Iterable[Metric]:
        self.sweep()
        own = os.getpid()
        files = [str(f) for f in self.folder.glob("*.db") if pid_of(f) not in (None, own)]
        merged: Iterable[Metric] = MultiProcessCollector.merge(files, accumulate=True)
        return merged


def plugin_metrics_folder(run_dir: Path, worker_id: str) -> Path:
    """A fresh folder for this run's plugin processes to write their metrics to; those of
    earlier runs of this worker id whose process is gone are removed."""
    for stale in run_dir.glob(f"metrics-{worker_id}-*"):
        pid = stale.name.rpartition("-")[2]
        if pid.isdecimal() and not alive(int(pid)):
            shutil.rmtree(stale, ignore_errors=True)
    folder = run_dir / f"metrics-{worker_id}-{os.getpid()}"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    return folder


def registry(worker: WorkerCollector, plugins: PluginFiles) -> CollectorRegistry:
    """What the worker's ``/metrics`` serves: its own metrics (with the process's), its units,
    and its plugin processes'."""
    served = CollectorRegistry()
    served.register(REGISTRY)
    served.register(worker)
    served.register(plugins)
    return served
