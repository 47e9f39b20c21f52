"""Kafka's own FileStream connectors (connect-file, at the broker's version) on headrace's JVM
plugin host, against the same connectors on Kafka Connect standalone: same jars, same broker,
same files, the String converter on both.

The figures are those of the ``file`` workload (end to end, steady state, source alone, sink
alone; ``bench.workloads.files``), and peak resident memory: headrace's workers with their plugin
processes and JVMs (one per connector version) against Connect's standalone worker JVM, which
holds every connector in one process.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path

from bench import raw
from bench.connect import STRING_CONVERTER
from bench.env import BenchEnv
from bench.memory import PeakMemory, plugin_processes
from bench.workloads.files import (
    Case,
    against_one_peer,
    fresh_folder,
    kept_standalone,
    lines,
    peak_figures,
    prefixed,
)
from headrace.clients.config import ConfigClient
from headrace.core.storage.topics import ensure_topic
from headrace.isolation.plugins import JVM_PLUGINS

JAVA_FILE = (
    "org.apache.kafka.connect.file.FileStreamSourceConnector",
    "org.apache.kafka.connect.file.FileStreamSinkConnector",
)
SYSTEMS = ("headrace JVM host", "Kafka Connect standalone")
HEADRACE_RSS = "headrace workers, plugins and JVMs"
EVERY_RSS = "headrace, every process"
"""With the config service, the coordinator and the executor: what Connect's one JVM holds."""
CONNECT_RSS = "Kafka Connect standalone worker"


class JavaFileToFile:
    name = "jvm-file"
    description = "file -> Kafka -> file, Kafka's FileStream connectors on headrace's JVM host"
    measures, ratios = against_one_peer(SYSTEMS, HEADRACE_RSS, CONNECT_RSS, EVERY_RSS)
    max_repeats = 3

    def parameters(self, smoke: bool) -> dict[str, object]:
        return {"lines": 2_000 if smoke else 500_000, "line_bytes": 100}

    def run_once(self, env: BenchEnv, parameters: Mapping[str, object]) -> dict[str, float]:
        n, line_bytes = int(str(parameters["lines"])), int(str(parameters["line_bytes"]))
        files = env.stack.settings.file_roots[0]
        files.mkdir(parents=True, exist_ok=True)
        return against_connect_standalone(env, files, (n, line_bytes), self._headrace)

    def _headrace(
        self, env: BenchEnv, files: Path, input_file: Path, size: tuple[int, int], filled: str
    ) -> dict[str, float]:
        n, line_bytes = size
        converters = {"key.converter": STRING_CONVERTER, "value.converter": STRING_CONVERTER}
        with (
            ConfigClient(env.stack.settings.config_addr, env.stack.settings) as client,
            PeakMemory() as peaks,
        ):
            java = plugin_processes(f"/{JVM_PLUGINS}/")  # Kafka's connectors, not headrace's
            for service in ("worker-1", "worker-2"):
                peaks.track(HEADRACE_RSS, env.stack.pid(service), java)
                peaks.track(EVERY_RSS, env.stack.pid(service), java)
            for service in ("config", "coordinator", "executor"):
                peaks.track(EVERY_RSS, env.stack.pid(service))
            ours = Case(env, client, converters, fresh_folder(files, env), line_bytes, JAVA_FILE)
            figures = prefixed(SYSTEMS[0], ours.run(input_file, n, filled))
        return figures | peak_figures(peaks)


HeadraceSide = Callable[[BenchEnv, Path, Path, tuple[int, int], str], dict[str, float]]
"""headrace's part of a run: (env, files, input file, (lines, line bytes), filled topic) to
its figures."""


def against_connect_standalone(
    env: BenchEnv, files: Path, size: tuple[int, int], headrace: HeadraceSide
) -> dict[str, float]:
    """One run of ``size`` lines in ``files``, through ``headrace`` and through Kafka Connect
    standalone, in this run's turn: the input file and the filled topic the sinks read alone
    made first."""
    n, line_bytes = size
    input_file = files / env.fresh("input")
    input_file.write_bytes(b"".join(d + b"\n" for d in lines(n, line_bytes)))
    filled = env.fresh("filled")
    asyncio.run(fill_topic(env, filled, input_file.read_bytes().splitlines()))
    return env.each_system(
        partial(headrace, env, files, input_file, size, filled),
        partial(on_connect_standalone, env, files, input_file, size, filled),
    )


def on_connect_standalone(
    env: BenchEnv, files: Path, input_file: Path, size: tuple[int, int], filled: str
) -> dict[str, float]:
    """The figures of Kafka's FileStream connectors on a Kafka Connect standalone worker, and
    its peak RSS: ``size`` lines of ``size[1]`` bytes from ``input_file``, or ``filled``."""
    n, line_bytes = size
    worker = kept_standalone(env)
    with PeakMemory() as peaks:
        peaks.track(CONNECT_RSS, worker.pid)
        theirs = Case(env, worker, {}, fresh_folder(files, env), line_bytes, JAVA_FILE)
        figures = prefixed(SYSTEMS[1], theirs.run(input_file, n, filled))
    return figures | peak_figures(peaks)


async def fill_topic(env: BenchEnv, topic: str, data: list[bytes]) -> None:
    """The topic the sinks read alone, filled beforehand."""
    await ensure_topic(env.bootstrap, topic, 1)
    await raw.produce(env.bootstrap, topic, 1, [(None, d) for d in data])
