"""``python -m headrace.worker``: one worker node of the group.

Once it has joined the group and applied its first assignment (``worker_ready``), it serves the
standard gRPC health service and reflection on ``--address`` (default ``HEADRACE_WORKER_ADDR``,
else a free port on loopback; port 0 picks a free one) and logs ``worker_serving`` with the
address bound: SERVING means it runs what the group wants of it, so a probe that cannot connect
yet says it is not ready. It has no API of its own. Prometheus metrics, its own and its plugin
processes', on ``--metrics-addr`` (``headrace.worker.metrics``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import socket
from pathlib import Path

import grpc
from prometheus_client import REGISTRY
from prometheus_client.registry import Collector

from headrace.core import runner
from headrace.core.observability import log, metrics
from headrace.core.observability.health import Health
from headrace.core.rpc import split_address
from headrace.core.security.guard import ServerSecurity, security_or_exit
from headrace.core.settings import Settings, settings_or_exit
from headrace.core.storage.topics import ensure_topics
from headrace.isolation.plugins import JVM_PLUGINS, installed
from headrace.worker import metrics as worker_metrics
from headrace.worker.worker import Worker, build_worker

ADDRESS_ENV = "HEADRACE_WORKER_ADDR"
DEFAULT_ADDRESS = "127.0.0.1:0"  # two workers on one machine must not collide


def bindable(address: str) -> str:
    """``address`` with a free port in place of port 0.

    ``runner.start_server`` does not say which port it bound, so the port is chosen here; the
    one race (another process binding it in between) fails the start loudly, and is narrow.
    """
    host, port = split_address(address)
    if port != 0:
        return address
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        port = probe.getsockname()[1]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


async def serve_health(address: str, health: Health, security: ServerSecurity) -> grpc.aio.Server:
    """The health service (and reflection) on ``address``, every name SERVING."""
    bound = bindable(address)
    server = await runner.start_server(bound, lambda _: None, health, security)
    log.get().info("worker_serving", address=bound)
    return server


async def serve(
    settings: Settings, worker_id: str, address: str, metrics_addr: str, security: ServerSecurity
) -> None:
    startup = metrics.Startup("worker")
    await ensure_topics(settings)
    run_dir = settings.var_dir / "run"
    log_dir = settings.var_dir / "log"
    run_dir.mkdir(parents=True, exist_ok=True)
    log_dir.mkdir(parents=True, exist_ok=True)
    worker = build_worker(
        settings,
        worker_id,
        installed(settings.plugin_path, settings.var_dir / JVM_PLUGINS),
        run_dir,
        log_dir,
    )
    plugin_metrics: Path | None = None
    served: Collector = REGISTRY
    if metrics_addr:
        # Before any plugin process starts: each inherits it (see headrace.worker.metrics).
        plugin_metrics = worker_metrics.plugin_metrics_folder(run_dir, worker_id)
        os.environ[metrics.MULTIPROCESS_ENV] = str(plugin_metrics)
        served = worker_metrics.registry(
            worker_metrics.WorkerCollector(lambda: worker.states, lambda: len(worker.processes)),
            worker_metrics.PluginFiles(plugin_metrics),
        )
    try:
        async with metrics.serving(metrics_addr, served):
            await run(worker, address, startup, security)
    finally:
        if plugin_metrics is not None:
            shutil.rmtree(plugin_metrics, ignore_errors=True)


async def run(
    worker: Worker, address: str, startup: metrics.Startup, security: ServerSecurity
) -> None:
    """Runs the worker until signalled, serving health from when it is ready."""
    main = asyncio.create_task(worker.run(), name="worker")
    signalled = asyncio.create_task(runner.until_signalled())
    ready = asyncio.create_task(worker.ready.wait())
    health = Health([])  # the server's own name ("") is the only one: a worker has no API
    server: grpc.aio.Server | None = None
    done, _ = await asyncio.wait({main, signalled, ready}, return_when=asyncio.FIRST_COMPLETED)
    if ready in done and not done & {main, signalled}:
        server = await serve_health(address, health, security)
        startup.ready()
        done, _ = await asyncio.wait({main, signalled}, return_when=asyncio.FIRST_COMPLETED)
    await runner.cancel(ready)
    if server is not None:
        await health.shutting_down()  # probes stop before the units do
    if signalled in done:
        worker.shutdown()
    try:
        await main
    finally:
        await runner.cancel(signalled)
        if server is not None:
            await server.stop(grace=1)


def main() -> None:
    settings = settings_or_exit("headrace-worker")
    parser = argparse.ArgumentParser(prog="headrace-worker", description=__doc__)
    parser.add_argument("--worker-id", default=socket.gethostname())
    parser.add_argument(
        "--address",
        default=os.environ.get(ADDRESS_ENV, DEFAULT_ADDRESS),
        help="host:port to serve gRPC health on once ready (port 0 picks a free one). "
        f"Default: ${ADDRESS_ENV}, else {DEFAULT_ADDRESS}",
    )
    metrics.add_flag(parser)
    args = parser.parse_args()
    security = security_or_exit(parser, settings)
    log.configure("worker", worker=args.worker_id)
    runner.run(lambda: serve(settings, args.worker_id, args.address, args.metrics_addr, security))


if __name__ == "__main__":
    main()
