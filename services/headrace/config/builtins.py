"""The plugins that ship inside headrace besides connectors: converters, transformations and
predicates, named as Connect names its own, for Connect's ``connectorsOnly=false`` listing.

They are pure code of the runtime, so the config service can name them without running any
plugin. They carry headrace's own version.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib.metadata import PackageNotFoundError, version

from headrace.runtime.converters import CONVERTERS
from headrace.runtime.transforms.registry import PREDICATES, TRANSFORMS


@dataclass(frozen=True)
class PluginInfo:
    class_name: str
    type: str  # source, sink, converter, transformation, predicate
    version: str
    error: str = ""  # why it cannot be used; empty when it can


@cache
def headrace_version() -> str:
    try:
        return version("headrace")
    except PackageNotFoundError:  # run from a checkout that is not installed
        return "unknown"


def builtin_plugins() -> list[PluginInfo]:
    """Every built-in converter, transformation and predicate, by its full class name."""
    kinds = (("converter", CONVERTERS), ("transformation", TRANSFORMS), ("predicate", PREDICATES))
    return [
        PluginInfo(name, kind, headrace_version())
        for kind, names in kinds
        for name in sorted(names)
        if name.startswith("org.apache.kafka.")
    ]
