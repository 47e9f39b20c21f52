"""The plugins as the plugin list shows them: connectors, and unless Connect's
``connectorsOnly=true`` the converters, header converters, transformations and predicates,
built in (named as Connect names its own, at headrace's version) or from the plugin path.

Built-ins are pure code of the runtime, so the config service names them without running any
plugin.
"""

from __future__ import annotations

from headrace.components import versions
from headrace.core.model.plugins import PluginInfo


def builtin_plugins() -> list[PluginInfo]:
    """Every built-in component, by its full class name."""
    return [PluginInfo(name, kind, version) for name, kind, version in versions.listed()]
