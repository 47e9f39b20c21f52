"""The plugins' own say on a config: their ``config()`` keys and ``validate()`` results.

That is plugin code, and plugin code runs only in plugin processes. The config service starts
one per plugin version the first time it needs it, the way a worker does, and keeps it for the
next call: validating a config then costs one call on a Unix socket. One not asked for in
``HEADRACE_PLUGIN_IDLE_STOP`` seconds is stopped, as a worker stops one that runs none of its
units, so that every plugin version ever validated does not hold a process (and a Java plugin's
JVM) for good. A process that exits, or was stopped, is started again when next needed; a
plugin that cannot be loaded, or raises, is an error naming ``connector.class``.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from headrace.clients.pluginhost import PluginCallError
from headrace.config.validation import ConfigRejected, Problem
from headrace.core.model.configinfo import ComponentKeys, ConfigInfos
from headrace.core.model.errors import PluginError
from headrace.core.model.plugins import PluginDescriptor
from headrace.core.observability import log
from headrace.core.settings import Settings
from headrace.isolation.supervisor import BeforeStart, PluginProcess, idle, plugin_key

VALIDATE_TIMEOUT_S = 30.0
OWNER = "config"


class PluginChecks:
    """Plugin processes kept to answer ``Validate``, one per plugin version."""

    def __init__(
        self,
        settings: Settings,
        before_start: BeforeStart | None = None,
        processes: Callable[[PluginDescriptor], Awaitable[PluginProcess]] | None = None,
    ) -> None:
        """``processes``, when given, gives the process to ask (standalone mode's worker's,
        which runs the plugin's units too): it starts, keeps and stops them, not this."""
        self.settings = settings
        self._before_start = before_start
        self._shared = processes
        # Sockets in a folder of their own, readable by this user only, with a path short
        # enough for a Unix socket (108 bytes) wherever the var folder is.
        self._run_dir = Path(tempfile.mkdtemp(prefix="headrace-config-"))
        self._log_dir = settings.var_dir / "log"
        self._processes: dict[str, PluginProcess] = {}
        self._starting: defaultdict[str, asyncio.Lock] = defaultdict(asyncio.Lock)
        self._gone: set[asyncio.Future[None]] = set()  # forgetting a process, or stopping it
        self._asked: dict[str, float] = {}  # when each process was last asked for, monotonic
        self._calls: Counter[str] = Counter()  # calls under way, per process
        self._idle_checks: dict[str, asyncio.TimerHandle] = {}
        self.broken: dict[str, str] = {}  # per plugin version that failed to load, why

    async def validate(
        self,
        plugin: PluginDescriptor,
        config: Mapping[str, str],
        *,
        definition_only: bool = False,
    ) -> ConfigInfos:
        """The plugin's keys, with each one's verdict on ``config`` unless ``definition_only``."""
        async with self._calling(plugin) as process:
            assert process.client is not None
            try:
                return await process.client.validate(
                    config,
                    definition_only=definition_only,
                    deadline_s=VALIDATE_TIMEOUT_S,
                    plugin_class=plugin.class_name,
                )
            except PluginCallError as exc:
                raise await self._failed(process, "validate the config", exc) from None

    async def alter_offsets(
        self,
        plugin: PluginDescriptor,
        name: str,
        config: Mapping[str, str],
        entries: list[dict[str, Any]],
        *,
        reset: bool,
    ) -> bool:
        """KIP-875: asks a new instance of the connector, in its plugin's process, to alter
        its offsets; whether it altered what it keeps itself. ConfigRejected (REFUSED) with
        its reason, worded as Connect words it, when it refused."""
        async with self._calling(plugin) as process:
            assert process.client is not None
            try:
                handled, refusal = await process.client.alter_offsets(
                    name,
                    config,
                    entries,
                    reset=reset,
                    deadline_s=VALIDATE_TIMEOUT_S,
                    plugin_class=plugin.class_name,
                )
            except PluginCallError as exc:
                raise await self._failed(process, "alter its offsets", exc) from None
        if refusal:
            raise ConfigRejected(Problem.REFUSED, refusal)
        return handled

    async def describe(self, plugin: PluginDescriptor) -> list[ComponentKeys]:
        """The components from the plugin path that ``plugin``'s process loads beside it,
        each with the keys of its definition."""
        async with self._calling(plugin) as process:
            assert process.client is not None
            try:
                return await process.client.describe(deadline_s=VALIDATE_TIMEOUT_S)
            except PluginCallError as exc:
                raise await self._failed(process, "describe its components", exc) from None

    @asynccontextmanager
    async def _calling(self, plugin: PluginDescriptor) -> AsyncIterator[PluginProcess]:
        """The process to call, counted as in use while the call runs, and as asked for when
        it ends."""
        process = await self._process(plugin)
        key = process.key
        self._calls[key] += 1
        try:
            yield process
        finally:
            self._calls[key] -= 1
            self._asked[key] = time.monotonic()
            if self._shared is None:
                self._check_idle_later(key)

    def _check_idle_later(self, key: str) -> None:
        """Checks, ``plugin_idle_stop_s`` from now, whether ``key``'s process was asked for
        since; one that was not is stopped."""
        if key in self._idle_checks:
            return
        self._idle_checks[key] = asyncio.get_running_loop().call_later(
            self.settings.plugin_idle_stop_s, lambda: self._in_background(self._stop_if_idle(key))
        )

    def _in_background(self, work: Awaitable[None]) -> None:
        running = asyncio.ensure_future(work)
        self._gone.add(running)
        running.add_done_callback(self._gone.discard)

    async def _stop_if_idle(self, key: str) -> None:
        self._idle_checks.pop(key, None)
        async with self._starting[key]:
            process = self._processes.get(key)
            if process is None:
                return  # gone meanwhile: started again when next needed
            in_use = {k for k, n in self._calls.items() if n}
            if not idle(key, in_use, self._asked.get(key), time.monotonic(), self.settings):
                self._check_idle_later(key)
                return
            del self._processes[key]
            log.get().info("validation_plugin_process_idle_stopped", plugin=key)
        await process.stop(wait_s=2.0)

    async def _failed(
        self, process: PluginProcess, doing: str, exc: PluginCallError
    ) -> ConfigRejected:
        """The error of a call that failed, once a process that is gone is forgotten."""
        if exc.gone and self._shared is None:  # a shared one is its owner's to forget
            await self._forget(process)
        plugin = process.plugin
        if exc.retriable:
            return ConfigRejected(Problem.UNAVAILABLE, exc.details)
        return ConfigRejected(
            Problem.INVALID,
            f"connector.class: {plugin.class_name} {plugin.version} failed to {doing}: "
            f"{exc.details}",
        )

    async def _process(self, plugin: PluginDescriptor) -> PluginProcess:
        key = plugin_key(plugin)
        if self._shared is not None:
            try:
                shared = await self._shared(plugin)
            except (PluginError, OSError, RuntimeError, TimeoutError) as exc:
                raise self._unloadable(key, plugin, exc) from None
            self.broken.pop(key, None)
            return shared
        async with self._starting[key]:
            running = self._processes.get(key)
            if running is not None:
                return running
            self._log_dir.mkdir(parents=True, exist_ok=True)
            process = PluginProcess(
                plugin,
                self.settings,
                OWNER,
                self._run_dir,
                self._log_dir,
                lambda _, event: None,  # it runs no units: nothing it says calls for action
                self._exited,
                before_start=self._before_start,
            )
            try:
                await process.start()
            except (PluginError, OSError, RuntimeError, TimeoutError) as exc:
                raise self._unloadable(key, plugin, exc) from None
            self.broken.pop(key, None)  # loads now: fixed in place, or a passing failure
            self._processes[key] = process
            return process

    def _unloadable(self, key: str, plugin: PluginDescriptor, exc: Exception) -> ConfigRejected:
        """What a config is refused with when its plugin's process cannot start, remembered
        for the plugin list."""
        self.broken[key] = f"could not be loaded: {exc}"
        return ConfigRejected(
            Problem.INVALID,
            f"connector.class: {plugin.class_name} {plugin.version} could not be loaded: {exc}",
        )

    def _exited(self, process: PluginProcess, code: int, overrun: str) -> None:
        self._in_background(self._forget(process))

    async def _forget(self, process: PluginProcess) -> None:
        if self._processes.get(process.key) is process:
            del self._processes[process.key]
            log.get().warning("validation_plugin_process_gone", plugin=process.key)
        await process.stop(wait_s=2.0)

    async def close(self) -> None:
        for check in self._idle_checks.values():
            check.cancel()
        self._idle_checks.clear()
        processes, self._processes = list(self._processes.values()), {}
        await asyncio.gather(*(p.stop(wait_s=5.0) for p in processes))
        shutil.rmtree(self._run_dir, ignore_errors=True)
