"""The component classes this process loaded from the plugin path: converters, header
converters, transformations and predicates a connector config names (KIP-891).

A plugin process hosts one connector version with one set of component versions
(``PluginDescriptor.components``, chosen by the worker from the config), so within a process a
component's name means one class: the one loaded here, else the built-in of that name. The
runtime's registries look here first (``find``).
"""

from __future__ import annotations

from headrace.core.model.errors import PluginError
from headrace.core.model.plugins import PluginDescriptor

# What a class of each kind must have, so that a wrong one fails at load with the reason, not
# on the first record.
REQUIRED_METHODS = {
    "converter": ("from_connect_data", "to_connect_data"),
    "header_converter": ("from_header", "to_header"),
    "transformation": ("config_def", "configure", "apply"),
    "predicate": ("config_def", "configure", "test"),
}

_loaded: dict[str, dict[str, type]] = {kind: {} for kind in REQUIRED_METHODS}


def register(descriptor: PluginDescriptor, found: object) -> None:
    """Registers the class a component version's module gave (``found``: the attribute its
    manifest names) by class name and aliases; PluginError naming the manifest when it is not
    a fitting class. The plugin host imports the module (``headrace.runtime.host.loader``)."""
    required = REQUIRED_METHODS.get(descriptor.type, ())
    missing = [m for m in required if not callable(getattr(found, m, None))]
    if not isinstance(found, type) or missing:
        lacks = f"; it lacks {', '.join(missing)}" if isinstance(found, type) else ""
        raise PluginError(
            f"{descriptor.manifest}: {descriptor.module}.{descriptor.attribute} is not a "
            f"{descriptor.type} class{lacks}"
        )
    for name in (descriptor.class_name, *descriptor.aliases):
        _loaded[descriptor.type][name] = found


def find(kind: str, name: str) -> type | None:
    """The class loaded here for ``name`` (class name or alias) of ``kind``, if any."""
    return _loaded[kind].get(name.strip())
