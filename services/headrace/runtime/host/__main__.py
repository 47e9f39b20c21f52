"""The plugin host: one OS process per plugin version, serving ``PluginHost`` on a Unix socket;
for a Java plugin, one per location and version, running every connector of that version the
location holds in its one JVM (``plugins``).

    python -m headrace.runtime.host --manifest PATH --socket PATH [--stop-timeout 10]
                                    [--parent-pid PID] [--component PATH ...]
    python -m headrace.runtime.host --spare [--parent-pid PID]

``--component`` names the manifest of a converter, header converter, transformation or predicate
version from the plugin path that the connectors hosted here use (KIP-891); each is imported
beside the connector's plugin (``headrace.components.extensions``). A plugin version whose manifest
lists ``requirements`` is imported with an environment holding them (``pluginenv``), built the
first time a process needs it.

Reads Kafka settings from the environment (``KAFKA_BOOTSTRAP_SERVERS``, the clients' security
``KAFKA_SECURITY_PROTOCOL``, ``KAFKA_SASL_*`` and ``KAFKA_SSL_*``, ``HEADRACE_CLUSTER``,
``HEADRACE_EXECUTOR_ADDR``, and ``HEADRACE_FILE_ROOTS``, the folders its plugins' configs may name
files in; see ``headrace.core.settings``) and tags its JSON logs on stderr with
``HEADRACE_WORKER_ID``. Logs ``plugin_host_ready`` once serving. On SIGTERM or SIGINT (or when
``--parent-pid`` is gone) it stops every task and connector with ``deleted=False`` and exits 0.
So it does, within the time the worker said, once the lease its worker renews (``KeepAlive``)
runs out: a frozen worker cannot fence its units itself, and they may soon run elsewhere.
Its task metrics go to the folder in ``PROMETHEUS_MULTIPROC_DIR``, when its worker serves metrics
(``headrace.core.observability.metrics``); its gauges leave it as the process exits.
``--spare`` starts one before its plugin is known (``headrace.isolation.supervisor.Spare``): it
loads its own modules, which is most of a host's start, then waits for one line of JSON on its
stdin, ``{"argv": [...], "log": PATH}``, the arguments above and the file its output then goes
to, and serves as they say. It exits 0 when its stdin closes first.
It exits 2 when the plugin cannot be loaded (``plugin_load_failed`` with the trace), and 75 when
a call into plugin code overran ``HEADRACE_PLUGIN_CALL_TIMEOUT`` (see ``watchdog``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import functools
import importlib
import json
import os
import signal
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import grpc
import setproctitle

from headrace.core.model.errors import PluginError
from headrace.core.model.plugins import COMPONENT_TYPES, PluginDescriptor
from headrace.core.observability import log, metrics
from headrace.core.observability.health import Health, full_name
from headrace.core.rpc import GRPC_OPTIONS, MAX_SOCKET_PATH
from headrace.core.runner import quiet_fenced_futures, watch_parent
from headrace.core.security import secrets
from headrace.core.security.guard import HOST_KEY_ENV, HostKeyCheck
from headrace.core.settings import Settings, settings_or_exit
from headrace.isolation import jvm, sandbox
from headrace.isolation.hostfolder import OVERRUN_FILE, PRIVATE_SOCKET
from headrace.isolation.pluginenv import prepare_environments
from headrace.isolation.plugins import location_connectors, read_manifest
from headrace.isolation.sandbox import SandboxError
from headrace.runtime.host.events import EventBus
from headrace.runtime.host.hosted import HostedPlugin
from headrace.runtime.host.java import connector_class as java_connector_class
from headrace.runtime.host.jvm import JvmHost
from headrace.runtime.host.jvm import heap as jvm_heap
from headrace.runtime.host.loader import load_components, load_connector_class
from headrace.runtime.host.plugins import HostedPlugins
from headrace.runtime.host.service import Lease, PluginHostService
from headrace.runtime.lifecycle import bounded, format_trace
from headrace.runtime.watchdog import Watchdog, install, kill
from headrace.v1 import plugin_pb2
from headrace.v1 import plugin_pb2_grpc as pb_grpc

PARENT_CHECK_S = 1.0
LEASE_CHECK_S = 0.1
GRPC_GRACE_S = 2.0
# What a spare imports besides the host's own modules: the SDK's plugins import them when
# loaded (batches are Arrow), and they were nearly all of a spare's load of one (78 of 80 ms).
SPARE_WARMS = ("pyarrow", "pyarrow.compute")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="headrace.runtime.host", description=__doc__)
    parser.add_argument("--manifest", type=Path, help="the plugin version's manifest")
    parser.add_argument("--socket", type=Path, help="the Unix socket to serve on")
    parser.add_argument(
        "--stop-timeout",
        type=float,
        default=10.0,
        help="seconds a plugin's stop (or a task's last batch) may take before it is abandoned",
    )
    parser.add_argument("--parent-pid", type=int, help="exit when this process is gone")
    parser.add_argument(
        "--component",
        action="append",
        type=Path,
        default=[],
        help="the manifest of a component version the connectors use (repeatable)",
    )
    parser.add_argument(
        "--spare",
        action="store_true",
        help="load, then wait for the arguments and the log file as one line of JSON on stdin",
    )
    args = parser.parse_args(argv)
    if not args.spare and (args.manifest is None or args.socket is None):
        parser.error("--manifest and --socket are required, unless --spare")
    return args


class ClaimError(ValueError):
    """A spare's claim that does not say what to serve: its owner's fault, never a plugin's."""


@dataclasses.dataclass(frozen=True)
class Claim:
    """What a spare's owner wrote on its stdin: the arguments it serves with, the log file its
    output goes to, and the title it shows (``ps``) as a host started for its plugin would."""

    args: argparse.Namespace
    log: Path
    title: str
    key: str = ""  # what every call to it must carry (``HostKeyCheck``)


def read_claim(line: bytes) -> Claim:
    """The claim in one line of JSON, ``{"argv": [...], "log": PATH}``; ClaimError naming what
    is wrong with it otherwise."""
    try:
        claim = json.loads(line)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ClaimError(f"a claim is one line of JSON: {exc}") from None
    if not isinstance(claim, dict) or not {"argv", "log"} <= set(claim) <= {"argv", "log", "key"}:
        raise ClaimError("a claim is a JSON object with the keys argv, log and key, and no other")
    argv, log_file, key = claim["argv"], claim["log"], claim.get("key", "")
    if not isinstance(key, str):
        raise ClaimError("key: a claim's key is a string")
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
        raise ClaimError("argv: a claim's arguments are a list of strings")
    if not isinstance(log_file, str) or not log_file:
        raise ClaimError("log: a claim names its log file as a path")
    try:
        args = parse_args(argv)
    except SystemExit:  # argparse said why on stderr: the spare's own log
        raise ClaimError(f"argv: not a plugin host's arguments: {argv}") from None
    if args.spare:
        raise ClaimError("argv: a spare's claim cannot make it a spare again")
    title = " ".join([sys.executable, "-m", "headrace.runtime.host", *argv])
    return Claim(args, Path(log_file), title, key)


def claimed() -> Claim | None:
    """A spare's wait, its modules loaded: the claim its owner wrote on its stdin once it needs
    a plugin host, with its output sent to the log file named there from then on. None when
    stdin closes first: its owner stopped it, or is gone. Exits 2 on a claim it cannot read."""
    for module in SPARE_WARMS:
        importlib.import_module(module)
    line = sys.stdin.buffer.readline()
    if not line:
        return None
    try:
        claim = read_claim(line)
    except ClaimError as exc:
        sys.stderr.write(f"headrace.runtime.host: spare claim refused: {exc}\n")
        sys.exit(2)
    out = os.open(claim.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    os.dup2(out, sys.stdout.fileno())
    os.dup2(out, sys.stderr.fileno())
    os.close(out)
    # Seen as a host started for its plugin is: by ps, and by whatever finds a worker's hosts
    # by their manifest.
    setproctitle.setproctitle(claim.title)
    return claim


async def _watch_lease(lease: Lease, stop: asyncio.Event) -> None:
    while not stop.is_set():
        if lease.expired():
            log.get().warning("plugin_host_fenced", stop_s=lease.stop_s)
            stop.set()
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), LEASE_CHECK_S)


async def _load_java(
    connectors: Sequence[PluginDescriptor], socket: Path, settings: Settings, stop_timeout: float
) -> tuple[JvmHost, HostedPlugins]:
    """Starts the JVM host of a Java plugin location beside this process (confined as it is),
    for ``connectors``, every connector of the plugin's version there, the plugin's own first,
    which is loaded at once."""
    descriptor = connectors[0]
    host = JvmHost(descriptor, socket.parent, jvm_heap(connectors))
    await host.start()

    def make(connector: PluginDescriptor, bus: EventBus) -> HostedPlugin:
        connector_class = java_connector_class(connector, host)
        return HostedPlugin(connector, connector_class, settings, stop_timeout, bus=bus)

    plugins = HostedPlugins(list(connectors), make)
    try:
        plugins.plugin(descriptor)
    except Exception:
        await host.close()
        raise
    return host, plugins


def _load(
    descriptor: PluginDescriptor,
    component_manifests: Sequence[Path],
    settings: Settings,
    stop_timeout: float,
) -> HostedPlugins:
    """Imports the connector's plugin and the components beside it, each with the
    environment its requirements call for; its descriptor lists the components."""
    components = tuple(read_manifest(m) for m in component_manifests)
    for component in components:
        if component.type not in COMPONENT_TYPES:
            raise PluginError(f"{component.manifest}: a {component.type} is not a component")
    full = dataclasses.replace(descriptor, components=components)
    for site in prepare_environments(full, settings):  # built by the worker already, if it ran
        if str(site) not in sys.path:
            sys.path.insert(0, str(site))  # the version folder goes before it when imported
    connector_class = load_connector_class(descriptor)
    load_components(components)
    return HostedPlugins(
        [full],
        lambda d, bus: HostedPlugin(d, connector_class, settings, stop_timeout, bus=bus),
    )


def _confine(
    settings: Settings, descriptor: PluginDescriptor, args: argparse.Namespace, logger: Any
) -> None:
    """Confines this process to what its plugin may touch (``headrace.isolation.sandbox``), before
    any of the plugin's code is imported: its temporary files go in a folder of its own, beside
    its socket. SandboxError when it cannot be and ``HEADRACE_PLUGIN_SANDBOX`` is required."""
    own = args.socket.parent
    temp = own / "tmp"
    temp.mkdir(mode=0o700, exist_ok=True)
    os.environ["TMPDIR"] = tempfile.tempdir = str(temp)
    if settings.plugin_sandbox == "off":
        logger.warning("plugin_sandbox_off")
        return
    writable = [own, *(Path(p) for p in [os.environ.get("PROMETHEUS_MULTIPROC_DIR")] if p)]
    for root in settings.file_roots:  # made now: once confined, a missing one never could be
        root.mkdir(parents=True, exist_ok=True)
    folders = [descriptor.folder, *(read_manifest(c).folder for c in args.component)]
    if descriptor.is_java:
        folders += jvm.readable()
    try:
        abi = sandbox.confine(sandbox.plugin_paths(settings, folders, writable))
    except SandboxError as exc:
        if settings.plugin_sandbox == "required":
            raise
        logger.warning("plugin_sandbox_unavailable", error=str(exc))
        return
    logger.info("plugin_sandboxed", landlock_abi=abi)


async def serve(args: argparse.Namespace) -> int:
    """Loads the plugin, serves until told to stop, stops everything; the exit code."""
    descriptor = read_manifest(args.manifest)
    log.configure(
        "plugin",
        plugin=descriptor.class_name,
        version=descriptor.version,
        worker=os.environ.get("HEADRACE_WORKER_ID"),
    )
    logger = log.get()
    socket_path = str(args.socket.resolve())
    if len(socket_path) > MAX_SOCKET_PATH:
        logger.error("plugin_load_failed", error=f"socket path too long: {socket_path}")
        return 2
    settings = settings_or_exit("headrace.runtime.host")
    # The other connectors of a Java plugin's location are read from its scan now: once
    # confined, this process reads its plugin's location, not the scan's folder.
    hosted = location_connectors(descriptor)
    try:
        _confine(settings, descriptor, args, logger)
    except SandboxError as exc:
        logger.error("plugin_sandbox_failed", error=str(exc), mode=settings.plugin_sandbox)
        return 2
    java: JvmHost | None = None
    try:
        if descriptor.is_java:
            java, plugins = await _load_java(hosted, args.socket, settings, args.stop_timeout)
        else:
            plugins = _load(descriptor, args.component, settings, args.stop_timeout)
    except Exception as exc:  # noqa: BLE001 - reported with its trace, then a clear exit code
        logger.error("plugin_load_failed", error=str(exc), trace=format_trace(exc))
        return 2
    # The reason a call overran goes beside the socket too, for the worker's trace.
    overrun = functools.partial(kill, reason_file=args.socket.parent / OVERRUN_FILE)
    calls = Watchdog(settings.plugin_call_timeout_s, on_overrun=overrun)
    calls.start()
    install(calls)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(socket_path)  # a stale socket from a killed predecessor
    # Only its owner may call it: the key its owner gave it, in its environment or its claim,
    # taken out of the environment (its plugin has no use for it).
    key = os.environ.pop(HOST_KEY_ENV, "")
    server = grpc.aio.server(options=GRPC_OPTIONS, interceptors=[HostKeyCheck(key)] if key else [])
    lease = Lease()
    pb_grpc.add_PluginHostServicer_to_server(
        PluginHostService(plugins, lease, java.hold_levels if java else None), server
    )
    health = Health([full_name(plugin_pb2, "PluginHost")])
    health.register(server)
    server.add_insecure_port(f"unix:{socket_path}")
    await server.start()
    # Only the worker's user may call the host: its folder is private too (core.supervisor).
    os.chmod(socket_path, PRIVATE_SOCKET)
    await health.serving()
    await health.ready()  # the plugin is loaded: nothing to replay

    quiet_fenced_futures()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    watcher = (
        asyncio.create_task(watch_parent(args.parent_pid, stop, PARENT_CHECK_S))
        if args.parent_pid
        else None
    )
    fence = asyncio.create_task(_watch_lease(lease, stop))
    logger.info(
        "plugin_host_ready",
        socket=socket_path,
        pid=os.getpid(),
        type=descriptor.type,
        connectors=[d.class_name for d in plugins.connectors],
    )

    await stop.wait()
    logger.info("plugin_host_stopping")
    if lease.expired():
        # Fenced: what does not stop in time is cut short with the process.
        finished, _ = await bounded(plugins.shutdown(), lease.stop_s)
        if not finished:
            logger.warning("plugin_host_fence_timeout", stop_s=lease.stop_s)
            metrics.process_exiting()
            os._exit(0)
    else:
        await plugins.shutdown()
    await fence
    if java is not None:
        await java.close()
    await health.shutting_down()
    await server.stop(GRPC_GRACE_S)
    if watcher is not None:
        await watcher
    with contextlib.suppress(FileNotFoundError):
        os.unlink(socket_path)
    install(None)
    calls.stop()
    metrics.process_exiting()
    logger.info("plugin_host_stopped")
    return 0


def main(argv: Sequence[str] | None = None) -> None:
    # Its memory and environment (its key among them) are its own: no sibling reads them.
    secrets.keep_to_self()
    args = parse_args(argv)
    if args.spare:
        claim = claimed()
        if claim is None:
            sys.exit(0)  # stopped before it was needed
        args = claim.args
        if claim.key:
            os.environ[HOST_KEY_ENV] = claim.key  # where serve() takes it from
    sys.exit(asyncio.run(serve(args)))


if __name__ == "__main__":
    main()
