"""The installed plugins as Connect's API answers them: every version listed (with why one
cannot be used), a plugin's own configuration keys, and a config validated as a config of the
plugin named.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence

from headrace.config.builtins import builtin_plugins
from headrace.config.pluginchecks import PluginChecks
from headrace.config.validation import ConfigRejected, Problem
from headrace.core.model.configinfo import ConfigInfos, KeyInfo, definitions
from headrace.core.model.errors import PluginError
from headrace.core.model.plugins import PluginCatalog, PluginInfo
from headrace.isolation.supervisor import plugin_key


class PluginCommands:
    def __init__(
        self,
        catalog: Callable[[], PluginCatalog],
        checks: PluginChecks,
        validate: Callable[[str, Mapping[str, str]], Awaitable[ConfigInfos]],
    ) -> None:
        """``catalog``: the installed plugins as they are now; ``validate``, a connector
        config's validation (``Commands.validate``)."""
        self._catalog = catalog
        self._checks = checks
        self._validate = validate

    async def validate(self, plugin_name: str, config: Mapping[str, str]) -> ConfigInfos:
        """Connect's validate call: ``config`` checked as a config of the plugin named."""
        named = config.get("connector.class", "").strip()
        if named and not self._same_plugin(named, plugin_name):
            raise ConfigRejected(
                Problem.INVALID,
                f"connector.class: {named!r} does not match the plugin validated, {plugin_name!r}",
            )
        full = {**config, "connector.class": named or plugin_name}
        # As in Connect, a config validated without its name has that error: a connector
        # cannot be created from it as it stands.
        return await self._validate(config.get("name", ""), full)

    def _same_plugin(self, a: str, b: str) -> bool:
        found = {p.class_name for p in self._catalog().versions_of(a)}
        return bool(found & {p.class_name for p in self._catalog().versions_of(b)}) or a == b

    async def config_keys(self, plugin_name: str, version: str | None) -> list[KeyInfo]:
        """A plugin's own configuration keys (Connect's ``GET .../config``)."""
        try:
            plugin = self._catalog().resolve(plugin_name, version)
        except PluginError as exc:
            raise ConfigRejected(Problem.NO_PLUGIN, str(exc)) from None
        infos = await self._checks.validate(plugin, {}, definition_only=True)
        return list(definitions(infos))

    def listed(self, *, connectors_only: bool) -> Sequence[PluginInfo]:
        """Every installed connector version, and unless ``connectors_only`` every version of
        the converters, header converters, transformations and predicates, built-in, from the
        plugin path, or in a Java plugin's location (for its Java connectors).
        A plugin that cannot be used is listed with why: a manifest that could not be read (its
        folder for a name), or a plugin whose process failed to load it when a config of it was
        validated."""
        unloadable = self._checks.broken
        listed = [
            PluginInfo(p.class_name, p.type, p.version, unloadable.get(plugin_key(p), ""))
            for p in self._catalog().plugins
            if p.is_connector or not connectors_only
        ]
        listed += [
            PluginInfo(str(b.folder), "unknown", b.folder.name, b.reason)
            for b in self._catalog().broken
        ]
        if connectors_only:
            return listed
        java = {(c.class_name, c.type, c.version) for c in self._catalog().java_components}
        return [*listed, *(PluginInfo(*c) for c in sorted(java)), *builtin_plugins()]
