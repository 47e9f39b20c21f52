"""Apache Kafka Connect itself, as a peer: standalone, on the run's broker, from Maven's jars.

``make bench`` resolves ``deploy/kafka-connect/pom.xml`` (connect-runtime, connect-file and
connect-json at the broker's version) into ``deploy/kafka-connect/lib``. A worker runs as
``ConnectStandalone`` with a heap of 512 MiB, its REST listener on a free loopback port and the
String converter (the file connectors move text); connectors are created and deleted over its
REST API, as a user would, so the clock starts at the create call as it does for headrace. Its
own defaults stay as they are unless a workload passes worker overrides.
"""

from __future__ import annotations

import json
import subprocess
import time
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from headrace.cli.kafka import free_port
from headrace.core.settings import project_home

STRING_CONVERTER = "org.apache.kafka.connect.storage.StringConverter"


def _lib() -> Path:
    lib = project_home() / "deploy" / "kafka-connect" / "lib"
    if not any(lib.glob("connect-runtime-*.jar")):
        raise SystemExit(f"Kafka Connect's jars are missing under {lib}: run `make connect-jars`")
    return lib


def _properties(path: Path, values: Mapping[str, str]) -> Path:
    path.write_text("".join(f"{k}={v}\n" for k, v in values.items()))
    return path


@dataclass
class ConnectStandalone:
    """One standalone Connect worker, driven over its REST API until :meth:`stop`."""

    bootstrap: str
    folder: Path
    worker_overrides: Mapping[str, str] = field(default_factory=dict)
    port: int = field(default_factory=free_port)
    _proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 90.0) -> None:
        """Starts the worker and waits until its REST API answers."""
        worker = {
            "bootstrap.servers": self.bootstrap,
            "key.converter": STRING_CONVERTER,
            "value.converter": STRING_CONVERTER,
            "offset.storage.file.filename": str(self.folder / "offsets"),
            # Its sink flushes its file when it commits offsets: a second, not the example's ten,
            # so the last lines are out within a second of arriving, as headrace's are.
            "offset.flush.interval.ms": "1000",
            "listeners": f"http://127.0.0.1:{self.port}",
            **self.worker_overrides,
        }
        properties = _properties(self.folder / "worker.properties", worker)
        log4j = project_home() / "deploy" / "kafka" / "log4j.properties"
        with (self.folder / "connect.log").open("ab") as log:
            self._proc = subprocess.Popen(
                [
                    "java",
                    "-Xmx512m",
                    "-Xms512m",
                    f"-Dlog4j.configuration=file:{log4j}",
                    "-cp",
                    f"{_lib()}/*",
                    "org.apache.kafka.connect.cli.ConnectStandalone",
                    str(properties),
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        deadline = time.monotonic() + timeout
        while not self._answers():
            if (tail := self.failed()) is not None:
                raise RuntimeError(f"Kafka Connect exited:\n{tail}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"Kafka Connect did not answer in {timeout}s")
            time.sleep(0.2)

    def _answers(self) -> bool:
        try:
            self._call("GET", "/")
        except OSError:
            return False
        return True

    def _call(self, method: str, path: str, body: object = None) -> object:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}{path}",
            data=data,
            method=method,
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            payload = response.read()
        return json.loads(payload) if payload else None

    def create(self, name: str, config: Mapping[str, str]) -> None:
        self._call("POST", "/connectors", {"name": name, "config": dict(config)})

    def delete(self, name: str) -> None:
        self._call("DELETE", f"/connectors/{name}")

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def failed(self) -> str | None:
        """The log's tail when the worker has exited, None while it runs."""
        if self._proc is None or self._proc.poll() is None:
            return None
        lines = (self.folder / "connect.log").read_text(errors="replace").splitlines()
        return "\n".join(lines[-30:])

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(30)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
