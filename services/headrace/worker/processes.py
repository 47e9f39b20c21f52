"""The worker's plugin processes: one per plugin version it runs units of, started once however
many of its units start at a time, kept while in use or asked for lately, and stopped once idle
(its memory, and a Java plugin's JVM, given back). While none runs, a spare plugin host is kept
ready, so that the first units this worker is given start without Python's own start.

The pool only starts, hands out and stops processes; which units run in them is the worker's.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Protocol

from structlog.typing import FilteringBoundLogger

from headrace.clients.pluginhost import PluginCallError
from headrace.components import versions
from headrace.core.model.connectorconfig import requested_version
from headrace.core.model.errors import PluginError
from headrace.core.model.plugins import PluginCatalog, PluginDescriptor
from headrace.core.model.structs import HostEvent
from headrace.core.settings import Settings
from headrace.isolation.supervisor import BeforeStart, PluginProcess, Spare, idle, plugin_key

# Bounds every call to a plugin process: the host bounds a plugin's own start and stop more
# tightly, so this only fires when the process itself is wedged.
CALL_TIMEOUT_S = 60.0
Host = PluginProcess | Exception  # a unit's plugin process, or why it has none

# A start that fails only the units that need the process: the plugin cannot be resolved or its
# process started, or the process or the config service refused or did not answer.
START_ERRORS = (PluginError, PluginCallError, OSError, RuntimeError, TimeoutError)

OnEvent = Callable[[PluginProcess, HostEvent], None]
OnExit = Callable[[PluginProcess, int, str], None]
Lease = Callable[[], tuple[float, float]]


class Launch(Protocol):
    """Makes (not starts) the process of a plugin version, which tells ``on_event`` of its
    units' events and ``on_exit`` of its end, and runs on while ``lease`` says it may."""

    def __call__(
        self, plugin: PluginDescriptor, on_event: OnEvent, on_exit: OnExit, lease: Lease
    ) -> PluginProcess: ...


def launcher(
    settings: Settings,
    worker_id: str,
    run_dir: Path,
    log_dir: Path,
    before_start: BeforeStart | None = None,
) -> Launch:
    """The worker's plugin processes, as the supervisor starts them: sockets in ``run_dir``,
    logs in ``log_dir``, ``before_start`` done before each starts (standalone mode's executor)."""

    def launch(
        plugin: PluginDescriptor, on_event: OnEvent, on_exit: OnExit, lease: Lease
    ) -> PluginProcess:
        return PluginProcess(
            plugin, settings, worker_id, run_dir, log_dir, on_event, on_exit, lease, before_start
        )

    return launch


class PluginProcesses:
    """The worker's processes by plugin key (:func:`plugin_key`), with their spare."""

    def __init__(
        self,
        settings: Settings,
        launch: Launch,
        spare: Spare | None = None,
    ) -> None:
        """``spare`` is kept while no process runs (none, with ``plugin_spare=off``)."""
        self._settings = settings
        self._launch = launch
        self._spare = spare
        self._processes: dict[str, PluginProcess] = {}
        self._spawning: defaultdict[str, asyncio.Lock] = defaultdict(asyncio.Lock)
        self._handed_out: dict[str, float] = {}  # when hand_out last gave each out
        self._idle_checks: dict[str, asyncio.TimerHandle] = {}
        self._callbacks: tuple[OnEvent, OnExit, Lease] | None = None

    def bind(self, on_event: OnEvent, on_exit: OnExit, lease: Lease) -> None:
        """What every process started from now on tells of its units' events and its end, and
        the lease it runs on: the worker's, given once it is built."""
        self._callbacks = (on_event, on_exit, lease)

    def __len__(self) -> int:
        return len(self._processes)

    def get(self, key: str) -> PluginProcess | None:
        return self._processes.get(key)

    def of_each(self) -> list[PluginProcess]:
        """Every process running now, one per plugin key."""
        return list(self._processes.values())

    def of(
        self, plugin: PluginDescriptor | None, started_as: PluginProcess | None
    ) -> PluginProcess | None:
        """The process a unit runs in, if it is still the one it was started in: one started
        since for the same plugin (after the first died) never heard of the unit."""
        process = self._processes.get(plugin_key(plugin)) if plugin else None
        return process if process is started_as else None

    async def for_plugins(self, plugins: Iterable[PluginDescriptor]) -> Mapping[str, Host]:
        """The process of each plugin version, by key; one that is not running yet is started
        once, however many of its units start, and different plugins' start at once."""
        missing = {plugin_key(p): p for p in plugins if plugin_key(p) not in self._processes}
        spawned = await asyncio.gather(*map(self.once, missing.values()))
        return {**self._processes, **dict(zip(missing, spawned, strict=True))}

    async def once(self, plugin: PluginDescriptor) -> Host:
        """The plugin version's process, started unless it runs (or is starting) already; or
        why it did not start."""
        assert self._callbacks is not None, "bind() first: the processes' events go nowhere"
        key = plugin_key(plugin)
        async with self._spawning[key]:
            running = self._processes.get(key)
            if running is not None:
                return running
            process = self._launch(plugin, *self._callbacks)
            try:
                await process.start(spare=self._spare)
            except START_ERRORS as exc:
                return exc
            self._processes[key] = process
            return process

    async def hand_out(self, plugin: PluginDescriptor) -> PluginProcess:
        """The plugin version's process, started if there is none, for work the pool does not
        see (standalone mode's validations): not stopped as idle for a while. Why it cannot
        start one is raised."""
        host = await self.once(plugin)
        if isinstance(host, Exception):
            # Asked outside the worker's event loop: a start that spent the spare does not wait
            # for the next event to have it replaced.
            await self.keep_spare()
            raise host
        self._handed_out[plugin_key(plugin)] = time.monotonic()
        return host

    async def forget_topics(
        self, keys: Iterable[str], connector: str, log: FilteringBoundLogger
    ) -> None:
        """Has the processes of ``keys`` forget the topics the connector's tasks reported
        (KIP-558's reset), so that they report them again as they next use them; one that is
        gone has nothing to forget (its units start afresh, reporting every topic they use)."""
        for key in keys:
            process = self._processes.get(key)
            if process is None or process.client is None:
                continue
            try:
                await process.client.forget_topics(connector, deadline_s=CALL_TIMEOUT_S)
            except PluginCallError as exc:
                log.warning("topics_not_forgotten", connector=connector, error=str(exc))

    async def keep_spare(self) -> None:
        """Keeps a spare plugin host while no plugin process runs here."""
        if not self._processes and self._spare is not None:
            await self._spare.keep()

    async def exited(self, process: PluginProcess) -> bool:
        """Clears a process that exited; whether it was this pool's current one for its key."""
        async with self._spawning[process.key]:  # no new one starts while this one is cleared
            if self._processes.get(process.key) is not process:
                return False
            del self._processes[process.key]
            await process.stop()
            return True

    def check_idle_later(
        self, in_use: Iterable[str], check: Callable[[PluginProcess], None]
    ) -> None:
        """Has ``check`` called, ``plugin_idle_stop_s`` from now, for each process that runs no
        unit (none of ``in_use``), unless one is set already."""
        used = set(in_use)
        loop = asyncio.get_running_loop()
        for key, process in self._processes.items():
            if key not in used and key not in self._idle_checks:
                self._idle_checks[key] = loop.call_later(
                    self._settings.plugin_idle_stop_s, check, process
                )

    async def stop_if_idle(self, process: PluginProcess, in_use: Iterable[str]) -> bool:
        """Stops the process if it is still this pool's and idle; False when it is in use or
        was asked for lately (to be checked again later)."""
        self._idle_checks.pop(process.key, None)
        async with self._spawning[process.key]:
            if self._processes.get(process.key) is not process:
                return True  # stopped or replaced since the check was set
            handed = self._handed_out.get(process.key)
            if not idle(process.key, set(in_use), handed, time.monotonic(), self._settings):
                return False
            del self._processes[process.key]
            await process.stop()
            return True

    async def stop_all(self, wait_s: float | None = None) -> None:
        """Stops every process at once (within ``wait_s`` each, when given); the pool is then
        empty, and starts new ones when asked."""
        processes, self._processes = list(self._processes.values()), {}
        if wait_s is None:
            await asyncio.gather(*(p.stop() for p in processes))
        else:
            await asyncio.gather(*(p.stop(wait_s=wait_s) for p in processes))

    async def close(self) -> None:
        """Stops every process, the spare and the pending idle checks."""
        for handle in self._idle_checks.values():
            handle.cancel()
        await self.stop_all()
        if self._spare is not None:
            await self._spare.stop()


def resolve(
    catalog: PluginCatalog, connector_config: Mapping[str, str]
) -> PluginDescriptor | PluginError:
    """The connector version the config runs, with the component versions its process loads
    beside it; or why the config cannot run here."""
    try:
        plugin = catalog.resolve(
            connector_config.get("connector.class", ""), requested_version(connector_config)
        )
        if plugin.is_java:  # its JVM makes its components, from its location or Connect's
            return plugin
        resolution = versions.resolve(connector_config, catalog)
        resolution.raise_problems()
    except PluginError as exc:
        return exc
    return dataclasses.replace(plugin, components=resolution.components)
