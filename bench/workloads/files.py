"""File to file through Kafka: FileStreamSource -> topic -> FileStreamSink, headrace beside Kafka
Connect, standalone and distributed with two workers, running Kafka's own FileStream connectors on
the same broker and files.

Each run measures three things for each system: the source alone (file -> topic, until every
line is in the topic), the sink alone (a topic filled beforehand -> file), and both end to end
(file -> topic -> file). Both systems use the String converter for keys and values, so both put
the same bytes in Kafka; Kafka Connect runs with its own defaults otherwise. The ceiling is bare
aiokafka producing the same lines through its batch path and consuming them in large chunks.
Lines are ``line_bytes`` long with their newline, so MB/s = records/s x line_bytes / 10^6.

Peak resident memory is sampled while each system runs (workload 5): headrace's services each on
their own, with each worker's plugin processes counted with it, and Connect's worker JVMs. Two
headrace workers compare with Connect's two distributed workers.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Protocol, TypeVar

from bench import raw
from bench.connect import STRING_CONVERTER, ConnectDistributed, ConnectWorker, standalone
from bench.env import BenchEnv
from bench.harness import Measure, watch
from bench.memory import PeakMemory, plugin_processes
from headrace.clients.config import ConfigClient
from headrace.core.storage.topics import ensure_topic

DEADLINE_S = 1800.0
DISTRIBUTED = "Kafka Connect distributed"
TUNED = "Kafka Connect distributed, tuned"
EXACTLY_ONCE = "Kafka Connect distributed, exactly-once sources"
SYSTEMS = ("headrace", "Kafka Connect standalone", DISTRIBUTED, TUNED, EXACTLY_ONCE)
CLUSTERS: Mapping[str, Mapping[str, str]] = {
    # Connect's defaults against headrace's: one 16 KiB batch in flight, 500-record polls.
    DISTRIBUTED: {},
    # headrace's sizes: 512 KiB producer batches lingering 5 ms, 10,000-record polls.
    TUNED: {
        "producer.batch.size": str(512 * 1024),
        "producer.linger.ms": "5",
        "consumer.max.poll.records": "10000",
    },
    # Transactions for every source, as headrace's sources write by default (KIP-618).
    EXACTLY_ONCE: {"exactly.once.source.support": "enabled"},
}
"""Each Connect distributed cluster of the workload, by the worker settings it runs with."""
HEADRACE_RSS = {
    "headrace workers and plugins": ("worker-1", "worker-2"),
    "headrace config service": ("config",),
    "headrace coordinator": ("coordinator",),
    "headrace executor": ("executor",),
    # Everything headrace runs, against Connect's workers, which hold everything Connect runs.
    "headrace, every process": ("worker-1", "worker-2", "config", "coordinator", "executor"),
}
CONNECT_RSS = ("Kafka Connect standalone worker", *(f"{c} workers" for c in CLUSTERS))
SCENARIOS = ("end to end", "steady state", "source alone", "sink alone")
PIPELINED = "raw aiokafka produce and consume, pipelined"
PYTHON_FILE = (
    "headrace_file_source.FileStreamSourceConnector",
    "headrace_file_sink.FileStreamSinkConnector",
)


MEMORY_SIZES = ("RSS", "PSS")
"""Each process tree's peak resident set, and its peak proportional set (shared pages divided
among the processes that map them): ``bench/memory.py``."""


def memory_measures(*processes: str) -> dict[str, Measure]:
    """The peak memory figures of each of ``processes``, both ways."""
    return {
        f"{p} peak {size}": Measure("MiB", higher_is_better=False)
        for p in processes
        for size in MEMORY_SIZES
    }


class Connectors(Protocol):
    def create(self, name: str, config: Mapping[str, str]) -> object: ...
    def delete(self, name: str) -> object: ...


def lines(n: int, line_bytes: int) -> list[bytes]:
    """``n`` distinct lines, each ``line_bytes`` long with its newline."""
    return [f"{i:010d}".ljust(line_bytes - 1, "x").encode() for i in range(n)]


async def topic_count(bootstrap: str, topic: str) -> int:
    """Lines in ``topic`` now. They are numbered and go in order to its one partition, so the
    last committed one says how many are in (for both systems, counted the same way)."""
    last = await raw.last_committed(bootstrap, topic)
    number = None if last is None else re.search(rb"\d{10}", last)
    return 0 if number is None else int(number.group()) + 1


def lines_in(path: Path, line_bytes: int) -> int:
    return path.stat().st_size // line_bytes if path.exists() else 0


def check_copy(what: str, out: Path, input_file: Path, line_bytes: int) -> None:
    """Raises RuntimeError unless ``out`` holds exactly the lines of ``input_file``, in order,
    once each: a run that lost, repeated or reordered a line is no measurement (and a repeated
    line would flatter its rate). Checked once the connectors are gone, so that a line written
    twice after the count was reached is seen too."""
    if out.read_bytes() == input_file.read_bytes():
        return
    got = out.read_bytes().splitlines()
    check_lines(what, f"{out} ({out.stat().st_size // line_bytes} lines by size)", got, input_file)


def check_topic(what: str, topic: str, values: Sequence[bytes | None], input_file: Path) -> None:
    """As :func:`check_copy`, for a source's topic: its committed values are the input's lines,
    in order, once each."""
    check_lines(what, f"topic {topic}", [v or b"" for v in values], input_file)


def check_lines(what: str, where: str, got: Sequence[bytes], input_file: Path) -> None:
    want = input_file.read_bytes().splitlines()
    if list(got) == want:
        return
    first = next((i for i, (a, b) in enumerate(zip(got, want, strict=False)) if a != b), None)
    if first is not None:
        how = f"line {first + 1} differs"
    else:
        how = "the same lines, then more" if len(got) > len(want) else "the same lines, fewer"
    raise RuntimeError(f"{what}: {where} has {len(got)} lines against {len(want)} written: {how}")


@dataclass
class Case:
    """One system's connectors for one run: names, files and topics of their own."""

    env: BenchEnv
    connectors: Connectors
    extra: Mapping[str, str]  # what a connector config needs on this system
    folder: Path
    line_bytes: int
    classes: tuple[str, str] = ("FileStreamSource", "FileStreamSink")
    """The source's and the sink's connector.class."""

    def source(self, name: str, file: Path, topic: str, created: ExitStack) -> None:
        """Creates a file source; it is deleted when ``created`` closes, failure or not."""
        config = {"connector.class": self.classes[0], "file": str(file), "topic": topic}
        self.connectors.create(
            name, {**config, "tasks.max": "1", "batch.size": "2000", **self.extra}
        )
        created.callback(self.connectors.delete, name)

    def sink(self, name: str, file: Path, topic: str, created: ExitStack) -> None:
        """Creates a file sink; it is deleted when ``created`` closes, failure or not."""
        config = {"connector.class": self.classes[1], "file": str(file), "topics": topic}
        self.connectors.create(name, {**config, "tasks.max": "1", **self.extra})
        created.callback(self.connectors.delete, name)

    async def _topic_count(self, topic: str) -> int:
        return await topic_count(self.env.bootstrap, topic)

    def run(self, input_file: Path, n: int, filled_topic: str) -> dict[str, float]:
        """The four figures of one system: end to end, steady state, source and sink alone."""
        out, topic = self.folder / "e2e.out", self.env.fresh("lines")
        source, sink = self.env.fresh("source"), self.env.fresh("sink")
        asyncio.run(ensure_topic(self.env.bootstrap, topic, 1))

        async def out_lines() -> int:
            return lines_in(out, self.line_bytes)

        with ExitStack() as created:
            started = time.perf_counter()
            self.source(source, input_file, topic, created)
            self.sink(sink, out, topic, created)
            end_to_end, steady = asyncio.run(watch("end to end", out_lines, n, started, DEADLINE_S))
        check_copy("end to end", out, input_file, self.line_bytes)

        alone, alone_topic = self.env.fresh("source"), self.env.fresh("lines")
        asyncio.run(ensure_topic(self.env.bootstrap, alone_topic, 1))
        with ExitStack() as created:
            started = time.perf_counter()
            self.source(alone, input_file, alone_topic, created)
            source_rate, _ = asyncio.run(
                watch(
                    "source alone", lambda: self._topic_count(alone_topic), n, started, DEADLINE_S
                )
            )
        values = asyncio.run(raw.committed_values(self.env.bootstrap, alone_topic))
        check_topic("source alone", alone_topic, values, input_file)

        alone, sink_out = self.env.fresh("sink"), self.folder / "sink.out"

        async def sink_lines() -> int:
            return lines_in(sink_out, self.line_bytes)

        with ExitStack() as created:
            started = time.perf_counter()
            self.sink(alone, sink_out, filled_topic, created)
            sink_rate, _ = asyncio.run(watch("sink alone", sink_lines, n, started, DEADLINE_S))
        check_copy("sink alone", sink_out, input_file, self.line_bytes)
        return {
            "end to end": end_to_end,
            "steady state": steady,
            "source alone": source_rate,
            "sink alone": sink_rate,
        }


class FileToFile:
    name = "file"
    description = "file -> Kafka -> file, FileStreamSource and FileStreamSink"
    measures: Mapping[str, Measure] = {
        **{f"{s} {c}": Measure("records/s") for s in SYSTEMS for c in SCENARIOS},
        "raw aiokafka produce": Measure("records/s"),
        "raw aiokafka consume": Measure("records/s"),
        PIPELINED: Measure("records/s"),
        **memory_measures(*HEADRACE_RSS, *CONNECT_RSS),
    }
    # Three runs, as everywhere (a spread needs three; the systems take turns going first).
    max_repeats = 3
    ratios: tuple[tuple[str, str], ...] = (
        *((f"headrace {c}", f"{peer} {c}") for peer in SYSTEMS[1:] for c in SCENARIOS),
        ("headrace end to end", PIPELINED),
        ("headrace steady state", PIPELINED),
        *(
            (f"{ours} peak {size}", f"Kafka Connect distributed workers peak {size}")
            for ours in ("headrace workers and plugins", "headrace, every process")
            for size in MEMORY_SIZES
        ),
    )

    def parameters(self, smoke: bool) -> dict[str, object]:
        return {"lines": 2_000 if smoke else 1_000_000, "line_bytes": 100}

    def run_once(self, env: BenchEnv, parameters: Mapping[str, object]) -> dict[str, float]:
        n, line_bytes = int(str(parameters["lines"])), int(str(parameters["line_bytes"]))
        # headrace's services may read and write only under their file roots.
        files = env.stack.settings.file_roots[0]
        files.mkdir(parents=True, exist_ok=True)
        data = lines(n, line_bytes)
        input_file = files / env.fresh("input")
        input_file.write_bytes(b"".join(d + b"\n" for d in data))
        filled = env.fresh("filled")
        produce, consume, both = asyncio.run(self._raw(env, filled, data))
        figures = {
            "raw aiokafka produce": produce,
            "raw aiokafka consume": consume,
            PIPELINED: both,
        }
        run = (input_file, n, filled)
        return figures | env.each_system(
            partial(self._headrace, env, files, run, line_bytes),
            partial(self._standalone, env, files, run, line_bytes),
            *(partial(self._distributed, env, files, run, line_bytes, c) for c in CLUSTERS),
        )

    def _headrace(
        self, env: BenchEnv, files: Path, run: tuple[Path, int, str], line_bytes: int
    ) -> dict[str, float]:
        converters = {"key.converter": STRING_CONVERTER, "value.converter": STRING_CONVERTER}
        with (
            ConfigClient(env.stack.settings.config_addr, env.stack.settings) as client,
            PeakMemory() as peaks,
        ):
            own = plugin_processes("/plugins/file-source/", "/plugins/file-sink/")
            for name, services in HEADRACE_RSS.items():
                for service in services:
                    peaks.track(name, env.stack.pid(service), own)
            # headrace's own file connectors, by their full names: Kafka's, installed for the
            # jvm-file workload, answer to the same aliases.
            ours = Case(env, client, converters, fresh_folder(files, env), line_bytes, PYTHON_FILE)
            figures = prefixed("headrace", ours.run(*run))
        return figures | peak_figures(peaks)

    def _standalone(
        self, env: BenchEnv, files: Path, run: tuple[Path, int, str], line_bytes: int
    ) -> dict[str, float]:
        worker = kept_standalone(env)
        with PeakMemory() as peaks:
            peaks.track("Kafka Connect standalone worker", worker.pid)
            theirs = Case(env, worker, {}, fresh_folder(files, env), line_bytes)
            figures = prefixed("Kafka Connect standalone", theirs.run(*run))
        return figures | peak_figures(peaks)

    def _distributed(
        self,
        env: BenchEnv,
        files: Path,
        run: tuple[Path, int, str],
        line_bytes: int,
        system: str = DISTRIBUTED,
    ) -> dict[str, float]:
        overrides = CLUSTERS[system]
        cluster = env.kept(
            system,
            lambda: started(ConnectDistributed(env.bootstrap, env.folder("connect"), 2, overrides)),
            ConnectDistributed.stop,
        )
        with PeakMemory() as peaks:
            for pid in cluster.pids:
                peaks.track(f"{system} workers", pid)
            theirs = Case(env, cluster, {}, fresh_folder(files, env), line_bytes)
            figures = prefixed(system, theirs.run(*run))
        return figures | peak_figures(peaks)

    async def _raw(
        self, env: BenchEnv, topic: str, data: list[bytes]
    ) -> tuple[float, float, float]:
        """The ceiling: produce alone (which fills the topic the sinks read alone), consume
        alone, and both at once through a topic of their own, as a pipeline runs them."""
        records: list[raw.Record] = [(None, d) for d in data]
        await ensure_topic(env.bootstrap, topic, 1)
        produced = await raw.produce(env.bootstrap, topic, 1, records)
        consumed = await raw.consume(env.bootstrap, topic, env.fresh("group"), len(data))
        through = env.fresh("pipelined")
        await ensure_topic(env.bootstrap, through, 1)
        both = await raw.pipelined(env.bootstrap, through, env.fresh("group"), 1, records)
        return produced, consumed, both


def against_one_peer(
    systems: tuple[str, str], ours_rss: str, theirs_rss: str, *more_of_ours: str
) -> tuple[Mapping[str, Measure], tuple[tuple[str, str], ...]]:
    """The measures and ratios of a workload that runs the scenarios on headrace (``systems[0]``)
    and on one peer (``systems[1]``), with the peak memory of each beside (and of
    ``more_of_ours``, other scopes of headrace's processes, each set against the peer's)."""
    ours = (ours_rss, *more_of_ours)
    measures: Mapping[str, Measure] = {
        **{f"{s} {c}": Measure("records/s") for s in systems for c in SCENARIOS},
        **memory_measures(*ours, theirs_rss),
    }
    ratios = (
        *((f"{systems[0]} {c}", f"{systems[1]} {c}") for c in SCENARIOS),
        *(
            (f"{scope} peak {size}", f"{theirs_rss} peak {size}")
            for scope in ours
            for size in MEMORY_SIZES
        ),
    )
    return measures, ratios


Started = TypeVar("Started", ConnectWorker, ConnectDistributed)


def started(peer: Started) -> Started:
    """``peer``, started and ready."""
    peer.start()
    return peer


def kept_standalone(env: BenchEnv) -> ConnectWorker:
    """The workload's Kafka Connect standalone worker, started in its warm-up and kept."""
    return env.kept(
        "Kafka Connect standalone",
        lambda: started(standalone(env.bootstrap, env.folder("connect"))),
        ConnectWorker.stop,
    )


def fresh_folder(root: Path, env: BenchEnv) -> Path:
    folder = root / env.fresh("out")
    folder.mkdir()
    return folder


def peak_figures(peaks: PeakMemory) -> dict[str, float]:
    return {
        **{f"{name} peak RSS": mib for name, mib in peaks.mib().items()},
        **{f"{name} peak PSS": mib for name, mib in peaks.pss_mib().items()},
    }


def prefixed(system: str, figures: Mapping[str, float]) -> dict[str, float]:
    return {f"{system} {name}": value for name, value in figures.items()}
