"""Plugin processes: one OS process per plugin version, spoken to over gRPC on a Unix socket.

Workers run their units in them; the config service starts them too, only to ask a plugin
about its configuration keys (``Validate``), so that no plugin code ever runs in a service.

Each event a plugin process sends is handed to its owner (``on_event``) as a ``HostEvent``
(``UnitStateChanged`` or ``ReconfigurationRequested``). A crash in a plugin process is reported
(``on_exit``) and fails only the units it hosted; the owner itself goes on. Plugin processes
watch their owner's pid and exit when it is gone, so a worker killed with SIGKILL leaves no
orphan running its tasks twice.

The socket is the plugin host's whole API, with nothing checked on it: it lives in a folder
only the owner's user may enter (0700, made so here), and the host makes the socket itself
0600 (``headrace.runtime.host``). No other user of the machine can reach a plugin process.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import itertools
import json
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Collection, Mapping
from pathlib import Path

import grpc

from headrace.clients.pluginhost import PluginCallError, PluginClient, UnknownEvent
from headrace.core.model.plugins import PluginDescriptor
from headrace.core.model.structs import HostEvent
from headrace.core.observability import log
from headrace.core.rpc import CHILD_GRPC_OPTIONS, MAX_SOCKET_PATH
from headrace.core.runner import cancel
from headrace.core.security.guard import HOST_KEY_ENV, new_host_key, with_host_key
from headrace.core.settings import Settings
from headrace.isolation import sandbox
from headrace.isolation.hostfolder import OVERRUN_FILE, private_folder
from headrace.isolation.pluginenv import prepare_environments

LEASE_EVERY_S = 0.5
SOCKET_POLL_S = 0.005
_OVERRUN_BYTES = 2000  # of the host's note of an overrun call read into a trace


def idle(
    key: str, in_use: Collection[str], asked: float | None, now: float, settings: Settings
) -> bool:
    """Whether the plugin process for ``key`` may be stopped as idle at ``now``: nothing runs
    in it (``in_use``: a worker's units, the config service's calls under way), and nothing
    asked for it (a validation, a description) in the last ``plugin_idle_stop_s``. ``asked``
    is when it was last asked for, if ever."""
    if key in in_use:
        return False
    return asked is None or now - asked >= settings.plugin_idle_stop_s


START_S = 30.0
"""How long a plugin process has to serve once started."""
JAVA_START_S = 90.0
"""The same for a Java plugin's, which starts a JVM that loads its location (Debezium's JDBC
sink: 35 jars, 42 MB) first; under load, past 30 s."""


def plugin_key(plugin: PluginDescriptor) -> str:
    """The name of a plugin version's process, by its whole class name (two plugins may share
    a simple one); a connector whose config names component versions from the plugin path runs
    in a process of its own, named with their digest. Every Java connector of one location and
    version shares one process, and its one JVM (``location_connectors``): named by the
    location, and its path's digest (two locations may share a name)."""
    if plugin.is_java and not plugin.components:
        where = plugin.folder.resolve()
        digest = hashlib.sha256(str(where).encode()).hexdigest()[:10]
        name = where.name.removesuffix(".jar")
        if name == plugin.version:  # <artifact>/<version>, as plugins install makes it
            return f"{where.parent.name}-{plugin.version}+{digest}"
        return f"{name}-{plugin.version}+{digest}"
    key = f"{plugin.class_name}-{plugin.version}"
    if not plugin.components:
        return key
    named = "\n".join(f"{c.class_name} {c.version} {c.folder}" for c in plugin.components)
    return f"{key}+{hashlib.sha256(named.encode()).hexdigest()[:10]}"


def host_env(
    settings: Settings, worker_id: str, environ: Mapping[str, str] = os.environ
) -> dict[str, str]:
    """The environment of a plugin process, made afresh, not inherited: what
    ``sandbox.PASSED_ENV`` names of its owner's (and ``LC_*``), the variables the ``env``
    config provider may read, and the settings made for plugins (``Settings.for_plugins``: the
    executor's address, the file roots, and as credentials only the data plane's). The
    owner's token, tokens file, private key and Kafka login stay with it."""
    pattern = re.compile(settings.config_provider_env_pattern or "(?!)")
    provided = {name: value for name, value in environ.items() if pattern.fullmatch(name)}
    return {
        **sandbox.passed_env(environ),
        **provided,
        **settings.for_plugins().to_env(),
        "HEADRACE_WORKER_ID": worker_id,
    }


_MAX_FAILURE = 500  # characters of a host's own start failure shown
_STARTED = itertools.count(1)  # the processes made in this process, numbered
HOST_COMMAND = (sys.executable, "-m", "headrace.runtime.host")


class Spare:
    """A plugin host started before any plugin needs it (``headrace.runtime.host --spare``):
    Python and the host's own modules (gRPC, aiokafka, pyarrow) loaded, which is most of a
    host's start (0.35 of 0.5 s), waiting on its stdin to be told which plugin version to
    serve. The first plugin process its owner needs then starts in a fraction of that.

    It runs no plugin code until it is claimed, and ends when its stdin closes: when its owner
    stops it or is gone. Its owner keeps one only while it runs no plugin process
    (``HEADRACE_PLUGIN_SPARE``), so that a busy owner holds no more memory than before, and an
    idle one (a worker that just joined, or whose units all went) takes its first units
    sooner."""

    def __init__(self, settings: Settings, owner: str, log_dir: Path) -> None:
        self._settings = settings
        self._owner = owner
        self._log_file = log_dir / f"{owner}-plugin-spare.log"
        self._proc: asyncio.subprocess.Process | None = None
        self._starting = asyncio.Lock()
        self._stopped = False

    async def keep(self) -> None:
        """Starts a spare, unless one is held, the settings want none, or it was stopped."""
        async with self._starting:
            if self._settings.plugin_spare == "off" or self._stopped:
                return
            if self._proc is not None and self._proc.returncode is None:
                return
            self._log_file.parent.mkdir(parents=True, exist_ok=True)
            with self._log_file.open("ab") as out:
                self._proc = await asyncio.create_subprocess_exec(
                    *HOST_COMMAND,
                    "--spare",
                    # Named as a host's is, for whoever looks for its owner's hosts (ps).
                    "--parent-pid",
                    str(os.getpid()),
                    env=host_env(self._settings, self._owner),
                    stdin=asyncio.subprocess.PIPE,
                    stdout=out,
                    stderr=out,
                )

    async def claim(
        self, argv: list[str], log_file: Path, key: str
    ) -> asyncio.subprocess.Process | None:
        """The spare, told to serve as ``argv`` says, with ``key`` (``HostKeyCheck``), and write
        to ``log_file``; None when none is held, or it is gone: the caller starts a process of
        its own. It is not held after."""
        proc, self._proc = self._proc, None
        if proc is None or proc.returncode is not None or proc.stdin is None:
            return None
        claim = json.dumps({"argv": argv, "log": str(log_file), "key": key}).encode() + b"\n"
        try:
            proc.stdin.write(claim)
            await proc.stdin.drain()
            proc.stdin.close()
        except ConnectionError:  # it ended meanwhile
            await proc.wait()
            return None
        return proc

    async def stop(self, wait_s: float = 5.0) -> None:
        """Ends the spare held, if any (its stdin closed, it exits by itself), and keeps none
        from then on."""
        self._stopped = True
        async with self._starting:
            proc, self._proc = self._proc, None
        if proc is None or proc.returncode is not None:
            return
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), wait_s)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()


BeforeStart = Callable[[PluginDescriptor], Awaitable[None]]
"""What is done before a plugin process starts: standalone mode starts the Spark executor for a
plugin that writes through it. PluginError (or OSError, RuntimeError) when it cannot be done."""


class PluginProcess:
    """One running plugin host; ``client`` is its API once :meth:`start` returned."""

    def __init__(
        self,
        plugin: PluginDescriptor,
        settings: Settings,
        worker_id: str,
        run_dir: Path,
        log_dir: Path,
        on_event: Callable[[PluginProcess, HostEvent], None],
        on_exit: Callable[[PluginProcess, int, str], None],
        lease: Callable[[], tuple[float, float]] | None = None,
        before_start: BeforeStart | None = None,
    ) -> None:
        self.plugin = plugin
        self._before_start = before_start
        self.key = plugin_key(plugin)
        self._settings = settings
        self._worker_id = worker_id
        # The worker's pid keeps the name apart from a socket a previous run of this worker
        # may still be cleaning up.
        # A folder of its own: a confined plugin process may write there and nowhere near its
        # siblings' sockets (headrace.isolation.sandbox).
        # Its own number keeps it apart from an earlier process of the same plugin version
        # that is still being cleared away (its folder removed as it goes).
        named = f"{worker_id}-{os.getpid()}-{next(_STARTED)}-{self.key}"
        self._socket = run_dir / named / "host.sock"
        if len(str(self._socket.resolve())) > MAX_SOCKET_PATH:
            # A socket's path is short: in a deep run folder, the same name, digested; in a
            # deeper one, a private folder of the system's temporary ones (made at start).
            self._socket = run_dir / hashlib.sha256(named.encode()).hexdigest()[:16] / "host.sock"
        self._in_run_dir = len(str(self._socket.resolve())) <= MAX_SOCKET_PATH
        self.log_file = log_dir / f"{worker_id}-plugin-{self.key}.log"
        self._on_event = on_event
        self._on_exit = on_exit
        # (seconds the host may run on unheard, seconds it then has to stop): renewed every
        # LEASE_EVERY_S, so a frozen worker's plugins stop by themselves.
        self._lease = lease
        self._keepalive: asyncio.Task[None] | None = None
        self._proc: asyncio.subprocess.Process | None = None
        self._channel: grpc.aio.Channel | None = None
        self.client: PluginClient | None = None
        self._watch: asyncio.Task[None] | None = None
        self._waiter: asyncio.Task[None] | None = None
        self._stopping = False
        # What every call to it carries: only this worker can call its host (HostKeyCheck).
        self._key = new_host_key()

    async def start(self, wait_s: float | None = None, spare: Spare | None = None) -> None:
        """Starts the process and waits ``wait_s`` for it to serve (``START_S``, or for a Java
        plugin ``JAVA_START_S``): ``spare``'s, when it holds one. The environments its
        plugins' requirements call for are built first, off the event loop and outside that
        wait: the process then finds them ready. PluginError when
        one cannot be built. What ``before_start`` does for the plugin (start a service it
        needs) is done before that."""
        if wait_s is None:
            wait_s = JAVA_START_S if self.plugin.is_java else START_S
        if self._before_start is not None:
            await self._before_start(self.plugin)
        await asyncio.to_thread(prepare_environments, self.plugin, self._settings)
        if self._in_run_dir:
            private_folder(self._socket.parent.parent)
            shutil.rmtree(self._socket.parent, ignore_errors=True)  # a killed predecessor's
            private_folder(self._socket.parent)
        else:
            self._socket = Path(tempfile.mkdtemp(prefix="headrace-plugin-")) / "host.sock"
        argv = [
            "--manifest",
            str(self.plugin.manifest),
            *(a for c in self.plugin.components for a in ("--component", str(c.manifest))),
            "--socket",
            str(self._socket),
            # The host exits when this worker is gone, even after a SIGKILL, so no orphan
            # runs its tasks a second time.
            "--parent-pid",
            str(os.getpid()),
        ]
        claimed = await spare.claim(argv, self.log_file, self._key) if spare is not None else None
        self._proc = claimed or await self._exec(argv)
        deadline = time.monotonic() + wait_s
        await self._socket_made(deadline)
        if claimed is not None and claimed.returncode is not None and claimed.returncode < 0:
            # The spare was killed before it served: a signal's doing, not its plugin's.
            self._proc = await self._exec(argv)
            await self._socket_made(deadline)
        self._channel = grpc.aio.insecure_channel(
            f"unix:{self._socket}",
            options=CHILD_GRPC_OPTIONS,
            interceptors=with_host_key(self._key),
        )
        while True:
            if self._proc.returncode is not None:
                raise RuntimeError(
                    f"plugin process exited with {self._proc.returncode} before it served: "
                    f"{self.start_failure()}"
                )
            try:
                await asyncio.wait_for(self._channel.channel_ready(), timeout=0.5)
                break
            except TimeoutError:
                if time.monotonic() > deadline:
                    await self.stop()
                    raise TimeoutError(f"plugin {self.key} did not start in {wait_s}s") from None
        self.client = PluginClient(self._channel)
        self._watch = asyncio.create_task(self._watch_events(), name=f"watch-{self.key}")
        self._waiter = asyncio.create_task(self._wait_exit(), name=f"wait-{self.key}")
        if self._lease is not None:
            self._keepalive = asyncio.create_task(self._keep_alive(), name=f"lease-{self.key}")
        log.get().info("plugin_process_started", plugin=self.key, pid=self._proc.pid)

    async def _exec(self, argv: list[str]) -> asyncio.subprocess.Process:
        with self.log_file.open("ab") as out:
            return await asyncio.create_subprocess_exec(
                *HOST_COMMAND,
                *argv,
                env={**host_env(self._settings, self._worker_id), HOST_KEY_ENV: self._key},
                stdin=asyncio.subprocess.DEVNULL,
                stdout=out,
                stderr=out,
            )

    async def _socket_made(self, deadline: float) -> None:
        """Waits for the host's socket, until ``deadline`` or the host's end. A channel made
        before it is there waits out a reconnect backoff (50 ms and more) once the host
        listens: a third of a spare's start."""
        assert self._proc is not None
        while not self._socket.exists() and self._proc.returncode is None:
            if time.monotonic() > deadline:
                return
            await asyncio.sleep(SOCKET_POLL_S)

    async def _keep_alive(self) -> None:
        assert self.client is not None and self._lease is not None
        while True:
            lease_s, stop_s = self._lease()
            with contextlib.suppress(PluginCallError):
                await self.client.keep_alive(
                    lease_s,
                    stop_s,
                    deadline_s=LEASE_EVERY_S * 2,
                    log_levels=log.cluster_levels.current(),
                )
            await asyncio.sleep(LEASE_EVERY_S)

    async def _watch_events(self) -> None:
        assert self.client is not None
        try:
            async for event in self.client.watch(self._unknown):
                self._on_event(self, event)
        except PluginCallError:
            pass  # the process went away; _wait_exit reports it

    def _unknown(self, event: UnknownEvent) -> None:
        # A state this owner does not know says nothing it could act on: skipped, as the
        # worker skips the states it has no use for.
        log.get().warning("plugin_event_unknown", plugin=self.key, state=event.state)

    async def _wait_exit(self) -> None:
        assert self._proc is not None
        code = await self._proc.wait()
        if not self._stopping:
            log.get().warning("plugin_process_exited", plugin=self.key, code=code)
            self._on_exit(self, code, self.overrun())

    def overrun(self) -> str:
        """Why the host ended itself, if its watchdog did (the call that overran its bound);
        empty otherwise. Never what the plugin wrote: that stays in the process's log."""
        try:
            with (self._socket.parent / OVERRUN_FILE).open("rb") as found:
                head = found.read(_OVERRUN_BYTES)
        except OSError:
            return ""
        lines = head.decode(errors="replace").splitlines()
        return lines[0] if lines else ""

    def start_failure(self) -> str:
        """Why the process ended as it started, as the host itself said it (the error of its
        last ``plugin_*`` error event, masked by the process as it logged it); never the rest
        of what it wrote, which only the operator reads: it may be anything a plugin printed,
        and a status or a validation's error is read by whoever may read connectors."""
        said = ""
        try:
            lines = self.log_file.read_text(errors="replace").splitlines()[-200:]
        except OSError:
            lines = []
        for line in lines:
            with contextlib.suppress(ValueError, AttributeError):
                entry = json.loads(line)
                event = str(entry.get("event", ""))
                if entry.get("level") == "error" and event.startswith("plugin_"):
                    said = f"{event}: {str(entry.get('error', ''))[:_MAX_FAILURE]}"
        where = f"its log, {self.log_file.name}, in the {self._worker_id} log folder"
        return f"{said} (the rest is in {where})" if said else f"what it wrote is in {where}"

    async def stop(self, wait_s: float = 15.0) -> None:
        """Asks the process to stop (SIGTERM), then kills it if it does not go in time."""
        self._stopping = True
        await cancel(self._keepalive)
        await cancel(self._watch)
        if self._proc is not None and self._proc.returncode is None:
            self._proc.terminate()
            try:
                await asyncio.wait_for(self._proc.wait(), wait_s)
            except TimeoutError:
                self._proc.kill()
                await self._proc.wait()
        await cancel(self._waiter)
        if self._channel is not None:
            await self._channel.close()
        shutil.rmtree(self._socket.parent, ignore_errors=True)
