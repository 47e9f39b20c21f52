"""The plugin path as it is now: plugins installed for the whole cluster, and plugins copied
into a plugin path entry by hand, taken into use without a restart.

Every config service and worker holds one :class:`LivePlugins`. It installs the Java plugins the
cluster recorded (``headrace plugins install``: an event of the configs topic, which the config
service reads and the coordinator hands to each worker) into its own plugin path's first entry,
checking each artifact's SHA-512, and removes those a later list drops. It looks at the plugin
path every few seconds, and when a folder or jar came, went or changed there, reads the plugin
path again (the JVM scan of a new location included) and hands the new catalog on. Discovery
and Maven run in a thread: the service goes on answering meanwhile.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

from headrace.core.model.errors import PluginError
from headrace.core.model.plugins import PluginCatalog
from headrace.core.observability import log
from headrace.core.settings import BUILTIN_PLUGINS
from headrace.isolation import jvm
from headrace.isolation.plugins import installed

WATCH_EVERY_S = 3.0
"""How often the plugin path is looked at for plugins copied in or removed by hand."""

Listing = tuple[tuple[str, int, int], ...]


def listing(plugin_path: Iterable[Path]) -> Listing:
    """What changes when a plugin is added to, changed in or removed from the plugin path:
    each folder, and each file with its size and time, up to three levels down in each entry
    (a jar copied into the entry, a folder of jars, a version folder made, a manifest
    rewritten); nothing hidden (a lock, an install being written beside)."""
    found: list[tuple[str, int, int]] = []
    for entry in (Path(e) for e in plugin_path if e != BUILTIN_PLUGINS):
        for pattern in ("*", "*/*", "*/*/*"):
            for path in sorted(entry.glob(pattern)):
                if any(part.startswith(".") for part in path.relative_to(entry).parts):
                    continue  # a lock, or a folder being written beside, not a plugin yet
                try:
                    stat = path.stat()
                except OSError:
                    continue  # gone while listed: the next look sees it gone
                if path.is_dir():  # its name: its time changes with what is written in it
                    found.append((str(path), -1, 0))
                else:
                    found.append((str(path), stat.st_size, stat.st_mtime_ns))
    return tuple(found)


def install_entry(plugin_path: Sequence[Path]) -> Path | None:
    """Where plugins installed for the cluster go: the first plugin path entry that is not the
    built-in plugins'; None when there is none."""
    return next((p for p in plugin_path if p != BUILTIN_PLUGINS), None)


class LivePlugins:
    """The catalog of one service's plugin path, kept current; each listener (:meth:`listen`)
    is told of each new catalog."""

    def __init__(
        self, plugin_path: Sequence[Path], java_cache: Path, catalog: PluginCatalog | None = None
    ) -> None:
        """``catalog``: the plugin path as read already (else it is read now)."""
        self.plugin_path = tuple(plugin_path)
        self.entry = install_entry(self.plugin_path)
        self._java_cache = java_cache
        self._listeners: list[Callable[[PluginCatalog], None]] = []
        self._listing = listing(self.plugin_path)
        self.catalog = catalog or installed(self.plugin_path, java_cache)
        self._lock = asyncio.Lock()  # one install, removal or read of the plugin path at once
        self._wanted: dict[str, str] | None = None  # the cluster's list, as last applied
        self._applying: asyncio.Task[None] | None = None
        self.failed: dict[str, str] = {}  # coordinate -> why it could not be installed here
        self._log = log.get()

    def listen(self, on_change: Callable[[PluginCatalog], None]) -> None:
        """Tells ``on_change`` of each catalog read from now on that differs from the one
        before."""
        self._listeners.append(on_change)

    def want(self, plugins: Mapping[str, str]) -> asyncio.Task[None]:
        """The cluster's installed plugins are now ``plugins`` (coordinate -> SHA-512): installs
        those missing here and removes those a list before had and this one drops, in the
        background; :meth:`settled` waits for it."""
        previous = self._applying
        self._applying = asyncio.create_task(
            self._apply(dict(plugins), previous), name="plugins-apply"
        )
        return self._applying

    async def settled(self) -> None:
        """Returns once the cluster's plugins last handed to :meth:`want` are installed here
        (or failed to be, logged), and the catalog holds them."""
        while self._applying is not None and not self._applying.done():
            await asyncio.wait([self._applying])

    async def _apply(self, plugins: dict[str, str], previous: asyncio.Task[None] | None) -> None:
        if previous is not None and not previous.done():
            await asyncio.wait([previous])
        try:
            await self._install_all(plugins)
        except Exception:  # noqa: BLE001 - logged: the next list tries again
            self._log.exception("plugins_apply_failed")

    async def _install_all(self, plugins: dict[str, str]) -> None:
        dropped = [] if self._wanted is None else sorted(set(self._wanted) - set(plugins))
        self._wanted = plugins
        if self.entry is None:
            if plugins:
                self._log.error("plugins_not_installed", reason="no plugin path entry")
            return
        async with self._lock:
            for coordinate in dropped:
                await asyncio.to_thread(jvm.remove, coordinate, self.entry)
                self._log.info("plugin_uninstalled", coordinate=coordinate)
            for coordinate, sha512 in sorted(plugins.items()):
                try:
                    folder, _ = await asyncio.to_thread(
                        jvm.ensure, coordinate, self.entry, sha512 or None
                    )
                except PluginError as exc:
                    self.failed[coordinate] = str(exc)
                    self._log.error("plugin_install_failed", coordinate=coordinate, reason=str(exc))
                    continue
                self.failed.pop(coordinate, None)
                self._log.debug("plugin_present", coordinate=coordinate, folder=str(folder))
            if listing(self.plugin_path) != self._listing:  # a worker's every rejoin lands here
                await self._read()

    async def install(self, coordinate: str, sha512: str | None) -> tuple[Path, str]:
        """Installs one plugin here now (the config service's, before it records it): its
        folder and its artifact's SHA-512; PluginError when it cannot be."""
        if self.entry is None:
            raise PluginError(
                "the plugin path has no folder to install in: set HEADRACE_PLUGIN_PATH"
            )
        async with self._lock:
            found = await asyncio.to_thread(jvm.ensure, coordinate, self.entry, sha512)
            await self._read()
        return found

    async def remove(self, coordinate: str) -> None:
        """Removes one plugin here now, and reads the plugin path again."""
        if self.entry is None:
            return
        async with self._lock:
            await asyncio.to_thread(jvm.remove, coordinate, self.entry)
            await self._read()

    async def refresh(self) -> bool:
        """Reads the plugin path now if what it holds changed since it was last read (a plugin
        copied in since the last look): whether it did."""
        if listing(self.plugin_path) == self._listing:
            return False
        async with self._lock:
            await self._read()
        return True

    async def watch(self, every_s: float = WATCH_EVERY_S) -> None:
        """Reads the plugin path again whenever what it holds changed, until cancelled."""
        while True:
            await asyncio.sleep(every_s)
            try:
                if listing(self.plugin_path) != self._listing and not self._lock.locked():
                    async with self._lock:
                        await self._read()
            except Exception:  # noqa: BLE001 - logged: the next look tries again
                self._log.exception("plugin_path_read_failed")

    async def _read(self) -> None:
        """Reads the plugin path (in a thread: a new Java location is scanned by a JVM) and
        hands the catalog on when it differs."""
        now = listing(self.plugin_path)
        catalog = await asyncio.to_thread(installed, self.plugin_path, self._java_cache)
        self._listing = now
        if (
            catalog.plugins != self.catalog.plugins
            or catalog.broken != self.catalog.broken
            or (catalog.java_components != self.catalog.java_components)
        ):
            self.catalog = catalog
            self._log.info("plugins_changed", plugins=len(catalog.plugins))
            for listener in self._listeners:
                listener(catalog)
