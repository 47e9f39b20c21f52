"""The whole system on one machine: every service a real OS process, logs under ``var/log``.

``python -m headrace.local stack up`` (what ``make run`` calls) starts the embedded Kafka broker
unless ``KAFKA_BOOTSTRAP_SERVERS`` names a cluster, then the Spark executor, the config service, the
coordinator (a replica per address in ``HEADRACE_COORDINATOR_ADDR``) and two workers;
``python -m headrace.local stack down`` stops every one of them. The end-to-end
tests start the same processes through :class:`Stack`, on free ports and a folder of their own.

A service is ready when its health service says so (``grpc.health.v1``, see
``headrace.core.observability.health``): the config service and the executor when their API is, a
coordinator replica as soon as it answers (standing by is all a replica after the first does),
unless the caller waits for it to lead (``ready=COORDINATOR``), a worker as soon as it answers (it
serves health only once it has joined the group and applied its first assignment). A worker listens
on a free port, the address it logs (``worker_serving``).

Every service serves Prometheus metrics on a free port on loopback (``--metrics-addr``), the
address it logs (``metrics_serving``): :meth:`Stack.metrics_address` reads it back.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path

from headrace.clients import health
from headrace.core.observability.health import SERVER, full_name
from headrace.core.rpc import split_address
from headrace.core.runner import alive
from headrace.core.security import tls
from headrace.core.settings import Settings
from headrace.local.kafka import free_port
from headrace.v1 import config_pb2, coordinator_pb2, executor_pb2

CONFIG = full_name(config_pb2, "ConfigService")
COORDINATOR = full_name(coordinator_pb2, "Coordinator")
EXECUTOR = full_name(executor_pb2, "Executor")
HEALTH_CALL_S = 1.0
FREE_PORT = "127.0.0.1:0"
"""Where a service listens when the others need not know beforehand: a port free as it starts,
chosen outside the system's ephemeral range (``_port_chosen``), where the defaults of the
others (50051 to 50054) are, and which a port the system picked could take before they bind."""
METRICS_SERVING = "metrics_serving"
WORKER_SERVING = "worker_serving"


def _port_chosen(arg: str) -> str:
    return f"127.0.0.1:{free_port()}" if arg == FREE_PORT else arg


@dataclass(frozen=True)
class ServiceSpec:
    name: str
    module: str
    args: tuple[str, ...]
    ready: str  # the health service name that says it is ready
    address: str | None = None  # where its health service answers; None: the one it logs
    announces: str | None = None  # the log event with the address it bound, if it has none


def service_specs(settings: Settings, workers: int = 2) -> list[ServiceSpec]:
    executor_host, executor_port = split_address(settings.executor_addr)
    specs = [
        ServiceSpec(
            "executor",
            "headrace.executor",
            ("--host", executor_host, "--port", str(executor_port)),
            EXECUTOR,
            settings.executor_addr,
        ),
        ServiceSpec(
            "config",
            "headrace.config",
            ("--address", settings.config_addr),
            CONFIG,
            settings.config_addr,
        ),
    ]
    # One coordinator per address: the first takes the lease, the others stand by.
    specs.extend(
        ServiceSpec(
            "coordinator" if i == 0 else f"coordinator-{i + 1}",
            "headrace.coordinator",
            ("--address", address),
            SERVER,  # answering, standing by or leading: workers find the leader
            address,
        )
        for i, address in enumerate(settings.coordinator_addrs)
    )
    specs.extend(
        ServiceSpec(
            f"worker-{i}",
            "headrace.worker",
            ("--worker-id", f"worker-{i}", "--address", FREE_PORT),
            SERVER,  # a worker serves health once it runs what the group wants of it
            announces=WORKER_SERVING,
        )
        for i in range(1, workers + 1)
    )
    return [replace(s, args=(*s.args, "--metrics-addr", FREE_PORT)) for s in specs]


def _announced(log_path: Path, offset: int, event: str) -> str | None:
    """The ``address`` of the last ``event`` in the log since ``offset``; None if none yet."""
    if not log_path.exists():
        return None
    with log_path.open("rb") as f:
        f.seek(offset)
        text = f.read().decode(errors="replace")
    marker = f'"event": "{event}"'
    for line in reversed(text.splitlines()):
        if marker in line:
            try:
                return str(json.loads(line)["address"])
            except (json.JSONDecodeError, KeyError):
                continue
    return None


def _serving_where_announced(
    settings: Settings, log_path: Path, offset: int, event: str, service: str
) -> bool:
    address = _announced(log_path, offset, event)
    return address is not None and _serving(settings, address, service)


def _serving(settings: Settings, address: str, service: str) -> bool:
    """Whether the health service at ``address`` says ``service`` is SERVING (asked over TLS
    when the settings say so)."""
    with tls.channel(address, settings) as channel:
        return health.serving(channel, service, HEALTH_CALL_S)


@dataclass
class Stack:
    """Starts, watches and stops the services' processes; pid files make ``down`` work later."""

    settings: Settings
    extra_args: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # More environment for one service, over the settings' (a worker's own plugin path).
    extra_env: dict[str, dict[str, str]] = field(default_factory=dict)
    # Services someone else runs at the addresses the settings name (an executor already serving
    # a Spark cluster, or the one the test suite shares): ``up`` and ``down`` leave them alone.
    external: frozenset[str] = frozenset()
    workers: int = 2
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    # Where each service's log was when this Stack last started it: what it logged since is
    # this run's.
    log_offsets: dict[str, int] = field(default_factory=dict)

    @property
    def log_dir(self) -> Path:
        return self.settings.var_dir / "log"

    @property
    def pid_dir(self) -> Path:
        return self.settings.var_dir / "pids"

    def log_file(self, name: str) -> Path:
        return self.log_dir / f"{name}.log"

    def specs(self) -> list[ServiceSpec]:
        return service_specs(self.settings, self.workers)

    def spec(self, name: str) -> ServiceSpec:
        return next(s for s in self.specs() if s.name == name)

    def announced(self, name: str, event: str) -> str | None:
        """The address a service logged with ``event`` in its current run (the last one in its
        log, if this Stack did not start it)."""
        return _announced(self.log_file(name), self.log_offsets.get(name, 0), event)

    def metrics_address(self, name: str) -> str | None:
        """Where a running service serves its metrics (``http://<address>/metrics``)."""
        return self.announced(name, METRICS_SERVING)

    def health_address(self, name: str) -> str | None:
        """Where a running service serves gRPC health."""
        spec = self.spec(name)
        if spec.address is not None:
            return spec.address
        return None if spec.announces is None else self.announced(name, spec.announces)

    def pid(self, name: str) -> int | None:
        try:
            pid = int((self.pid_dir / f"{name}.pid").read_text())
        except (FileNotFoundError, ValueError):
            return None
        return pid if alive(pid) else None

    def start(self, name: str, timeout: float = 120.0, ready: str | None = None) -> None:
        """Starts one service (unless it already runs) and waits until it is ready, or until
        the health service name ``ready`` is SERVING (``COORDINATOR``: leading, its state
        replayed)."""
        if self.pid(name) is not None:
            return
        spec = self.spec(name)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.pid_dir.mkdir(parents=True, exist_ok=True)
        log_path = self.log_file(name)
        offset = log_path.stat().st_size if log_path.exists() else 0
        self.log_offsets[name] = offset
        env = {**os.environ, **self.settings.to_env(), **self.extra_env.get(name, {})}
        with log_path.open("ab") as out:
            proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    spec.module,
                    *map(_port_chosen, spec.args),
                    *self.extra_args.get(name, ()),
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                start_new_session=True,
            )
        self.processes[name] = proc
        (self.pid_dir / f"{name}.pid").write_text(str(proc.pid))
        service = ready if ready is not None else spec.ready
        if spec.address is not None:
            ready_now = partial(_serving, self.settings, spec.address, service)
        else:
            assert spec.announces is not None, f"{name} has no address"
            ready_now = partial(
                _serving_where_announced,
                self.settings,
                log_path,
                offset,
                spec.announces,
                service,
            )
        deadline = time.monotonic() + timeout
        while not ready_now():
            if proc.poll() is not None:
                raise RuntimeError(f"{name} exited with {proc.returncode}; see {log_path}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"{name} was not ready within {timeout}s; see {log_path}")
            time.sleep(0.1)

    def up(self) -> None:
        for spec in self.specs():
            if spec.name not in self.external:
                self.start(spec.name)

    def send_signal(self, name: str, sig: signal.Signals) -> None:
        pid = self.pid(name)
        if pid is not None:
            os.kill(pid, sig)

    def stop(self, name: str, timeout: float = 30.0, sig: signal.Signals = signal.SIGTERM) -> None:
        """Stops one service: ``sig`` first, SIGKILL if it has not gone by the deadline."""
        pid = self.pid(name)
        proc = self.processes.pop(name, None)
        if pid is not None:
            os.kill(pid, sig)
            deadline = time.monotonic() + timeout
            while alive(pid) and time.monotonic() < deadline:
                if proc is not None and proc.poll() is not None:
                    break
                time.sleep(0.05)
            if alive(pid) and (proc is None or proc.poll() is None):
                os.kill(pid, signal.SIGKILL)
            if proc is not None:
                proc.wait()
        (self.pid_dir / f"{name}.pid").unlink(missing_ok=True)

    def down(self) -> None:
        # Workers first, so they stop their tasks while the others still answer.
        for spec in reversed(self.specs()):
            if spec.name not in self.external:
                self.stop(spec.name)
