"""Java plugins installed for the whole cluster: ``headrace plugins install`` and ``uninstall``
(the CLI, ``POST /admin/plugins`` and gRPC's ``InstallPlugin``, admin only).

An install is resolved here first, into this service's own plugin path, so that a coordinate
Maven cannot resolve, a digest that does not match or a location that holds no connector is
refused with the reason and records nothing. Then the install is recorded on the configs topic
(``plugin-<coordinate>``, with the SHA-512 of the artifact's jar), from where every config
service and, through the coordinator, every worker installs the same bytes into its own plugin
path, and takes it into use without a restart (``headrace.isolation.live``). An uninstall is
refused while a connector runs or pins a version only that install holds, and while the
coordinator still owes a deleted connector of such a version its deletion stop (which needs its
plugin: removed, it would never be told)."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from headrace.config.commands import Commands
from headrace.config.console.cluster import coordinators
from headrace.config.validation import ConfigRejected, Problem
from headrace.core.model import configlog
from headrace.core.model.configstate import ConfigState, InstalledPlugin
from headrace.core.model.connectorconfig import requested_version
from headrace.core.model.errors import PluginError
from headrace.core.model.plugins import PluginDescriptor
from headrace.core.settings import Settings
from headrace.isolation import jvm
from headrace.isolation.live import LivePlugins

OwedDeletions = Callable[[], Awaitable[Sequence[tuple[str, str, str]]]]
"""The deletion stops the coordinator still owes: (connector, the connector class its config
named, the version it asked for, empty for the latest). ConfigRejected when it cannot be asked."""


async def owed_by_coordinator(settings: Settings) -> list[tuple[str, str, str]]:
    """The deletion stops the leading coordinator owes, from its last generation."""
    found = await coordinators(settings, None, 1)
    if not any(r["role"] == "leader" for r in found["replicas"]):
        raise ConfigRejected(
            Problem.UNAVAILABLE,
            "no coordinator answered, so whether a deleted connector still needs the plugin "
            "for its deletion stop cannot be known: ask again once one leads",
        )
    return [
        (p["connector"], p["connector_class"], p["plugin_version"])
        for generation in found["generations"]
        for p in generation["pending_deletions"]
    ]


@dataclass(frozen=True)
class Install:
    """One plugin installed for the cluster, with the plugins its location holds here."""

    coordinate: str
    plugin: InstalledPlugin
    holds: Sequence[PluginDescriptor]


class PluginInstalls:
    """Installs and uninstalls of Java plugins for the cluster, over ``commands``' store and
    this service's ``live`` plugin path."""

    def __init__(self, commands: Commands, live: LivePlugins, owed: OwedDeletions) -> None:
        """``owed`` asks the leading coordinator which deletion stops it still owes."""
        self._commands = commands
        self._live = live
        self._owed = owed

    def listed(self) -> list[Install]:
        """Every plugin installed for the cluster, oldest first."""
        recorded = self._commands.store.configs.plugins
        return sorted(
            (Install(c, p, self._holds(c)) for c, p in recorded.items()),
            key=lambda i: (i.plugin.at_ms, i.coordinate),
        )

    async def install(self, coordinate: str, sha512: str | None) -> Install:
        """Resolves ``coordinate`` here and records it for the cluster; ConfigRejected with
        the reason when it cannot be (nothing is recorded then)."""
        folder = self._folder(coordinate)
        if coordinate in self._commands.store.configs.plugins:
            raise ConfigRejected(Problem.CONFLICT, f"{coordinate} is installed already")
        existed = folder.exists()
        try:
            _, digest = await self._live.install(coordinate, sha512 or None)
        except PluginError as exc:
            raise ConfigRejected(Problem.INVALID, str(exc)) from None
        broken = [b.reason for b in self._live.catalog.broken if _same(b.folder, folder)]
        if broken or not self._holds(coordinate):
            if not existed:
                await self._live.remove(coordinate)
            reason = broken[0] if broken else "no connector or component was found in it"
            raise ConfigRejected(Problem.INVALID, f"{coordinate}: {reason}")
        plugin = InstalledPlugin(digest, int(time.time() * 1000))

        async def plan(state: ConfigState) -> list[configlog.Record]:
            if coordinate in state.plugins:
                raise ConfigRejected(Problem.CONFLICT, f"{coordinate} is installed already")
            return [configlog.plugin_installed(coordinate, plugin)]

        await self._commands.store.transact(plan)
        return Install(coordinate, plugin, self._holds(coordinate))

    async def uninstall(self, coordinate: str) -> None:
        """Forgets ``coordinate`` for the cluster and removes it here (every other service
        removes its own copy as it hears); ConfigRejected when it was not installed for the
        cluster, or while a connector runs or pins a version only it holds."""
        folder = self._folder(coordinate)
        owed = sorted({name for name, *plugin in await self._owed() if self._in(folder, *plugin)})
        if owed:
            raise ConfigRejected(
                Problem.CONFLICT,
                f"{coordinate} is still needed: connectors {', '.join(owed)} were deleted and "
                "have not yet been told (their deletion stop runs in their plugin); ask again "
                "once they have",
            )

        async def plan(state: ConfigState) -> list[configlog.Record]:
            if coordinate not in state.plugins:
                raise ConfigRejected(
                    Problem.NOT_FOUND,
                    f"{coordinate} was not installed with plugins install (a plugin copied "
                    "into the plugin path by hand is removed from there by hand)",
                )
            users = self._users(state, folder)
            if users:
                raise ConfigRejected(
                    Problem.CONFLICT,
                    f"{coordinate} is in use: connectors {', '.join(users)} run a version only "
                    "it holds; delete them or pin another version (connector.plugin.version) "
                    "first",
                )
            return [configlog.plugin_uninstalled(coordinate)]

        await self._commands.store.transact(plan)
        await self._live.remove(coordinate)

    def _users(self, state: ConfigState, folder: Path) -> list[str]:
        """The connectors whose config runs a version from ``folder``."""
        return sorted(
            name
            for name, config in state.connectors.items()
            if self._in(folder, config.get("connector.class", ""), requested_version(config))
        )

    def _in(self, folder: Path, connector_class: str, version: str | None) -> bool:
        """Whether the plugin a config names resolves to a version from ``folder``."""
        try:
            plugin = self._live.catalog.resolve(connector_class, version or None)
        except PluginError:
            return False
        return _same(plugin.folder, folder)

    def _holds(self, coordinate: str) -> list[PluginDescriptor]:
        if self._live.entry is None:
            return []
        folder = jvm.version_folder(coordinate, self._live.entry)
        return [p for p in self._live.catalog.plugins if _same(p.folder, folder)]

    def _folder(self, coordinate: str) -> Path:
        if self._live.entry is None:
            raise ConfigRejected(
                Problem.PRECONDITION,
                "the plugin path has no folder to install in: set HEADRACE_PLUGIN_PATH",
            )
        try:
            return jvm.version_folder(coordinate, self._live.entry)
        except PluginError as exc:
            raise ConfigRejected(Problem.INVALID, str(exc)) from None

    def recorded(self) -> Mapping[str, str]:
        """The cluster's installs as :meth:`LivePlugins.want` takes them."""
        return {c: p.sha512 for c, p in self._commands.store.configs.plugins.items()}


def _same(a: Path, b: Path) -> bool:
    return a.resolve() == b.resolve()
