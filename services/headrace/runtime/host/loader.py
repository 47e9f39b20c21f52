"""Imports a plugin version the way its manifest says (see ``headrace.isolation.plugins``).

The version folder goes first on ``sys.path`` and the manifest's module is imported from it; the
connector class is the attribute after the module in the manifest's ``class``. The plugin host
loads one plugin version per process; tests load built-in plugins through the same function, so
a plugin's module has one name everywhere.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterable
from types import ModuleType
from typing import Any

from headrace.components import extensions
from headrace.core.model.errors import PluginError
from headrace.core.model.plugins import PluginDescriptor
from headrace.sdk.connector import Connector, SinkConnector, SourceConnector


def load_module(descriptor: PluginDescriptor) -> ModuleType:
    """The plugin version's module, imported with its version folder first on ``sys.path``."""
    folder = str(descriptor.folder)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    return importlib.import_module(descriptor.module)


def load_connector_class(descriptor: PluginDescriptor) -> type[Connector]:
    """The connector class of one plugin version; PluginError when it is not a fitting one."""
    found: Any = getattr(load_module(descriptor), descriptor.attribute, None)
    expected = SourceConnector if descriptor.type == "source" else SinkConnector
    if not (isinstance(found, type) and issubclass(found, expected)):
        raise PluginError(
            f"{descriptor.manifest}: {descriptor.module}.{descriptor.attribute} is not a "
            f"{expected.__name__} subclass"
        )
    return found


def load_components(components: Iterable[PluginDescriptor]) -> None:
    """Imports each component version this process runs with and registers its class with the
    component library (``headrace.components.extensions``), where the converters' and the
    transforms' registries find it first."""
    for descriptor in components:
        extensions.register(
            descriptor, getattr(load_module(descriptor), descriptor.attribute, None)
        )
