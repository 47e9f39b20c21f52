"""Which keys of a connector config the config service hides in its answers.

A config's secret keys are its connector's PASSWORD keys and its components' (converters,
transformations, predicates: ``headrace.components.secretkeys``), each as the definition of the
version the config selects says. The definitions of plugins are plugin code's to give, so they
are asked of a plugin process (``PluginChecks``), once per version: a connector's by its
``Validate`` (definition only), the plugin-path components' by ``Describe`` of the process that
loads them beside the connector, the one that validates the config. The built-in components'
are read here: they are the runtime's own code.

A definition that cannot be had is not asked again at every answer, and hides more rather than
less: every key of a connector but the framework's, every key of a component of its own.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from headrace.components import secretkeys, versions
from headrace.components.versions import Named
from headrace.config import framework
from headrace.config.pluginchecks import PluginChecks
from headrace.config.validation import ConfigRejected
from headrace.core.model.connectorconfig import requested_version
from headrace.core.model.errors import PluginError
from headrace.core.model.plugins import PluginCatalog, PluginDescriptor
from headrace.isolation.supervisor import plugin_key


class HiddenKeys:
    """The secret keys of configs, from definitions asked once per plugin version."""

    def __init__(self, catalog: PluginCatalog, checks: PluginChecks) -> None:
        self.catalog = catalog
        self.checks = checks
        # Per connector version (its process's key), its PASSWORD keys; per component version
        # (class, version), its own. None when the definition could not be had.
        self._connectors: dict[str, frozenset[str] | None] = {}
        self._components: dict[tuple[str, str], frozenset[str] | None] = {}
        # Per Java connector version and the component names its config gives, what its JVM
        # said of their keys; None when it could not say.
        self._java: dict[tuple[str, frozenset[tuple[str, str]]], secretkeys.JavaKeys | None] = {}
        # Per connector, its stored config last asked about, how many definitions were known
        # then (``_learned``) and that config's keys.
        self._stored: dict[str, tuple[Mapping[str, str], int, frozenset[str]]] = {}
        self._learned = 0

    async def of_stored(
        self, name: str, config: Mapping[str, str], alive: Mapping[str, object]
    ) -> frozenset[str]:
        """``of`` the config stored for connector ``name``, worked out again only when that
        config changes (it is the same object until then) or a definition was learned since
        (a component's, described for another config when this one's could not be: the answer
        hides less now). Every answer and every ``[hidden]`` sent back go by it. A list of
        connectors with their status spent most of its time working it out again. ``alive``:
        the connectors that exist, to forget the others' once there are many."""
        known = self._stored.get(name)
        if known is not None and known[0] is config and known[1] == self._learned:
            return known[2]
        learned = self._learned
        keys = await self.of(config)
        if len(self._stored) > 2 * len(alive) + 64:
            self._stored = {n: entry for n, entry in self._stored.items() if n in alive}
        self._stored[name] = (config, learned, keys)
        return keys

    async def of(self, config: Mapping[str, str]) -> frozenset[str]:
        """The keys of ``config`` whose values are hidden: its connector's PASSWORD keys, or,
        when its connector's definition cannot be had, every key but the framework's; and its
        components' secret keys."""
        plugin = self._connector(config)
        if plugin is not None and plugin.is_java:
            return await self._java_keys(plugin, config)
        keys = await self.connector_keys(config)
        if keys is None:
            framework_keys = framework.framework_keys(None)
            keys = frozenset(k for k in config if k not in framework_keys)
        return keys | await self.component_keys(config)

    async def connector_keys(self, config: Mapping[str, str]) -> frozenset[str] | None:
        """The PASSWORD keys of the connector version ``config`` runs, as its definition says;
        None when it cannot be had."""
        plugin = self._connector(config)
        if plugin is None:
            return None
        key = plugin_key(plugin)
        if key not in self._connectors:
            try:
                infos = await self.checks.validate(plugin, {}, definition_only=True)
            except ConfigRejected:
                self._connectors[key] = None
                self._learned += 1
                return None
            self._connectors[key] = frozenset(
                c.definition.name for c in infos.configs if c.definition.type == "PASSWORD"
            )
            self._learned += 1
        return self._connectors[key]

    async def component_keys(self, config: Mapping[str, str]) -> frozenset[str]:
        """The secret keys of the components ``config`` names, under their prefixes
        (``transforms.mask.secret``), with the client overrides' password keys."""
        resolution = versions.resolve(config, self.catalog)
        if any((c.class_name, c.version) not in self._components for c in resolution.components):
            await self._describe(config, resolution)

        def password_keys(use: Named) -> frozenset[str] | None:
            try:
                picked = versions.pick(use, config, self.catalog)
            except PluginError:
                return None
            if isinstance(picked, PluginDescriptor):
                return self._components.get((picked.class_name, picked.version))
            if picked is None:
                return secretkeys.local_password_keys(use)
            return None  # nothing answers to the name: its keys are not known

        return secretkeys.secret_keys(config, password_keys)

    async def _describe(self, config: Mapping[str, str], resolution: versions.Resolution) -> None:
        """Learns the definitions of the config's plugin-path components from the process that
        loads them with its connector; not when that process cannot be (the connector, or a
        component version, cannot be had: the config's validation says why), so their keys
        stay hidden."""
        plugin = self._connector(config)
        if plugin is None or resolution.problems:
            return
        hosting = dataclasses.replace(plugin, components=resolution.components)
        try:
            described = await self.checks.describe(hosting)
        except ConfigRejected:
            described = []
        answered = {(c.class_name, c.version): c.password_keys for c in described}
        for component in resolution.components:
            key = (component.class_name, component.version)
            self._components[key] = answered.get(key)
        self._learned += 1

    async def _java_keys(
        self, plugin: PluginDescriptor, config: Mapping[str, str]
    ) -> frozenset[str]:
        """A Java connector's secret keys: its JVM gives the PASSWORD keys of the connector
        and of the Java components the config names (Connect's classes, made there), asked
        once per connector version and set of component names; a component it cannot make
        has every key of its own hidden, and so has all but the framework's when the JVM
        cannot answer."""
        naming = secretkeys.naming_keys(config)
        key = (plugin_key(plugin), frozenset(naming.items()))
        if key not in self._java:
            try:
                infos = await self.checks.validate(plugin, naming, definition_only=True)
            except ConfigRejected:
                self._java[key] = None
            else:
                self._java[key] = secretkeys.JavaKeys.of(infos)
            self._learned += 1
        known = self._java[key]
        if known is None:
            framework_keys = framework.framework_keys(None)
            return frozenset(k for k in config if k not in framework_keys)
        return known.connector | secretkeys.secret_keys(config, known.component_keys)

    def _connector(self, config: Mapping[str, str]) -> PluginDescriptor | None:
        try:
            return self.catalog.resolve(
                config.get("connector.class", ""), requested_version(config)
            )
        except PluginError:
            return None
