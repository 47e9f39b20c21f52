"""File to file through Kafka in standalone mode: ``headrace standalone`` against Kafka Connect
standalone, each started as a user starts it, from a worker properties file, on the same broker
and files, with the String converter on both.

The figures are those of the ``file`` workload (end to end, steady state, source alone, sink
alone; ``bench.workloads.files``), and peak resident memory: the standalone process with its
plugin processes (every process it runs) against Connect's standalone worker JVM (every process
it runs). headrace runs its own FileStream connectors; Connect, Kafka's.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from bench.connect import STRING_CONVERTER, rest_client
from bench.env import BenchEnv
from bench.memory import PeakMemory
from bench.workloads.files import (
    PYTHON_FILE,
    Case,
    against_one_peer,
    fresh_folder,
    peak_figures,
    prefixed,
)
from bench.workloads.javafiles import CONNECT_RSS, against_connect_standalone
from headrace.clients.connect import BlockingConnect, RestError
from headrace.local.kafka import free_port

SYSTEMS = ("headrace standalone", "Kafka Connect standalone")
HEADRACE_RSS = "headrace standalone, every process"


@dataclass
class HeadraceStandalone:
    """One ``headrace standalone`` process in ``folder``, driven over its REST API; connectors
    may read and write files under ``files``."""

    bootstrap: str
    folder: Path
    files: Path
    port: int = field(default_factory=free_port)
    _proc: subprocess.Popen[bytes] | None = None
    _client: BlockingConnect | None = None

    def start(self, timeout: float = 90.0) -> None:
        worker = self.folder / "worker.properties"
        worker.write_text(
            f"bootstrap.servers={self.bootstrap}\n"
            f"key.converter={STRING_CONVERTER}\n"
            f"value.converter={STRING_CONVERTER}\n"
            f"offset.storage.file.filename={self.folder / 'offsets'}\n"
            # As Connect's in this run: its sink flushes its file at each offset commit.
            "offset.flush.interval.ms=1000\n"
            f"listeners=http://127.0.0.1:{self.port}\n"
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith("HEADRACE_")}
        env |= {
            "HEADRACE_VAR": str(self.folder / "var"),
            "HEADRACE_CONFIG_ADDR": f"127.0.0.1:{free_port()}",
            "HEADRACE_FILE_ROOTS": str(self.files),
        }
        with (self.folder / "standalone.log").open("ab") as log:
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "headrace.standalone", str(worker)],
                cwd=self.folder,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        self._client = rest_client(self.port)
        deadline = time.monotonic() + timeout
        while not self._answers():
            if self._proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                tail = (self.folder / "standalone.log").read_text(errors="replace")[-3000:]
                raise RuntimeError(f"headrace standalone did not start:\n{tail}")
            time.sleep(0.2)

    def _answers(self) -> bool:
        try:
            self._rest.call("GET", "/")
        except RestError:
            return False
        return True

    @property
    def _rest(self) -> BlockingConnect:
        assert self._client is not None, "not started"
        return self._client

    def create(self, name: str, config: Mapping[str, str]) -> None:
        self._rest.create(name, config)

    def delete(self, name: str) -> None:
        self._rest.delete(name)

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(60)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        if self._client is not None:
            self._client.close()
            self._client = None


def _leave(folder: Path) -> None:
    """Nothing to stop: a run's files stay for a look afterwards, as every workload's do."""


class StandaloneFileToFile:
    name = "standalone"
    description = "file -> Kafka -> file in standalone mode, one process each"
    measures, ratios = against_one_peer(SYSTEMS, HEADRACE_RSS, CONNECT_RSS)
    max_repeats = 3

    def parameters(self, smoke: bool) -> dict[str, object]:
        return {"lines": 2_000 if smoke else 1_000_000, "line_bytes": 100}

    def run_once(self, env: BenchEnv, parameters: Mapping[str, object]) -> dict[str, float]:
        n, line_bytes = int(str(parameters["lines"])), int(str(parameters["line_bytes"]))
        return against_connect_standalone(env, self.files(env), (n, line_bytes), self._headrace)

    def _headrace(
        self, env: BenchEnv, files: Path, input_file: Path, size: tuple[int, int], filled: str
    ) -> dict[str, float]:
        n, line_bytes = size
        converters = {"key.converter": STRING_CONVERTER, "value.converter": STRING_CONVERTER}
        ours = env.kept("headrace standalone", partial(self._started, env), HeadraceStandalone.stop)
        with PeakMemory() as peaks:
            peaks.track(HEADRACE_RSS, ours.pid)
            case = Case(env, ours, converters, fresh_folder(files, env), line_bytes, PYTHON_FILE)
            figures = prefixed(SYSTEMS[0], case.run(input_file, n, filled))
        return figures | peak_figures(peaks)

    def _started(self, env: BenchEnv) -> HeadraceStandalone:
        """headrace standalone, started in the warm-up and kept, as Connect standalone is; its
        file root is one folder for every run."""
        ours = HeadraceStandalone(env.bootstrap, env.folder("headrace-standalone"), self.files(env))
        ours.start()
        return ours

    def files(self, env: BenchEnv) -> Path:
        """The folder both systems' files go in, the same in every run of the workload (headrace
        standalone, kept, has it as its file root)."""
        return env.kept("standalone files", partial(env.folder, "standalone-files"), _leave)
