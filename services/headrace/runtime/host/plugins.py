"""The plugins one plugin process hosts, and which of them a call is for.

A Python plugin version has a process of its own: one ``HostedPlugin``. A Java plugin location
has one process per version, and one JVM, for every connector of that version the location holds
(``isolation.plugins.location_connectors``): FileStream's source and sink, MirrorMaker's three.
Each connector class gets its ``HostedPlugin`` when a call first names it; they share the
process's event bus, so one ``Watch`` stream carries every unit's events.

A validation or an offsets alteration goes to the class its caller resolved (its request names
it); a start or a clean-up, to the plugin its config's ``connector.class`` names (an alias as the
catalog takes it); a stop, to the plugin that started the unit. A class this process does not
host is a ``ConfigException`` naming it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence

from headrace.core.model.configinfo import ComponentKeys
from headrace.core.model.plugins import PluginDescriptor
from headrace.runtime.host.events import EventBus
from headrace.runtime.host.hosted import HostedPlugin
from headrace.sdk.errors import ConfigException


class HostedPlugins:
    """The connector versions this process may run, each made into a ``HostedPlugin`` by
    ``make`` (with the shared bus) when a call first names it; ``connectors[0]`` is the one
    the process was started for."""

    def __init__(
        self,
        connectors: Sequence[PluginDescriptor],
        make: Callable[[PluginDescriptor, EventBus], HostedPlugin],
    ) -> None:
        assert connectors, "a plugin process hosts at least the plugin it was started for"
        self.connectors = tuple(connectors)
        self.bus = EventBus()
        self._make = make
        self._made: dict[str, HostedPlugin] = {}
        self._owners: dict[str, HostedPlugin] = {}  # connector name -> the plugin running it

    @property
    def descriptor(self) -> PluginDescriptor:
        return self.connectors[0]

    def plugin(self, descriptor: PluginDescriptor) -> HostedPlugin:
        made = self._made.get(descriptor.class_name)
        if made is None:
            made = self._made[descriptor.class_name] = self._make(descriptor, self.bus)
        return made

    def for_config(self, config: Mapping[str, str]) -> HostedPlugin:
        """The plugin that ``config``'s ``connector.class`` names; one process of one plugin
        version takes any config (the worker chose it), as it always has."""
        if len(self.connectors) == 1:
            return self.plugin(self.connectors[0])
        name = config.get("connector.class", "")
        for descriptor in self.connectors:
            if descriptor.named(name):
                return self.plugin(descriptor)
        hosted = ", ".join(d.class_name for d in self.connectors)
        raise ConfigException(
            f"connector.class: {name!r} is not run by this plugin process (it runs {hosted})"
        )

    def for_call(self, plugin_class: str, config: Mapping[str, str]) -> HostedPlugin:
        """The plugin a call names by its resolved class (a validation of no config at all,
        which asks only for the definition), else the one its config names."""
        return self.for_config({"connector.class": plugin_class} if plugin_class else config)

    def for_unit(self, connector: str, config: Mapping[str, str]) -> HostedPlugin:
        """The plugin for a connector's unit about to start: the one its config names, which
        from now on takes the connector's stops."""
        plugin = self.for_config(config)
        self._owners[connector] = plugin
        return plugin

    def of_connector(self, connector: str) -> HostedPlugin | None:
        """The plugin that started a unit of ``connector`` here, if any did."""
        if len(self.connectors) == 1:
            return self.plugin(self.connectors[0])
        return self._owners.get(connector)

    def component_keys(self) -> list[ComponentKeys]:
        return self.plugin(self.descriptor).component_keys()

    async def shutdown(self) -> None:
        """Stops every unit of every plugin, all with ``deleted=False``, then the bus."""
        await asyncio.gather(*(p.shutdown() for p in list(self._made.values())))
        self.bus.close()
