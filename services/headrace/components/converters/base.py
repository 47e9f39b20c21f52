"""The converter contract: Connect data (schema, value) <-> the bytes stored in Kafka, and how a
connector config names a converter.

The contracts are the SDK's (``headrace.sdk.components``), since a plugin on the plugin path may
be a converter too; named here for the runtime's own modules.
"""

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from headrace.components import extensions
from headrace.core.model.plugins import VERSION_KEY
from headrace.sdk.components import NULL, Converter, SchemaAndValue
from headrace.sdk.errors import ConfigException

F = TypeVar("F", bound=Callable[..., object])


def named_factory(kind: str, prefix: str, name: str, builtins: Mapping[str, F]) -> F:
    """The factory ``name`` gives for ``kind``: a plugin's this process loaded, else the
    built-in one; ConfigException naming ``prefix`` and what exists when there is none."""
    found: Any = extensions.find(kind, name) or builtins.get(name)
    if found is None:
        known = ", ".join(k for k in builtins if "." in k or k.islower())
        label = kind.replace("_", " ")
        raise ConfigException(f"{prefix}: unknown {label} {name!r} (known: {known})")
    factory: F = found
    return factory


def sub_config(config: Mapping[str, str], prefix: str) -> dict[str, str]:
    """The keys under ``<prefix>.``, prefix removed: the converter's own (not its version)."""
    return {
        k[len(prefix) + 1 :]: v
        for k, v in config.items()
        if k.startswith(prefix + ".") and k != f"{prefix}.{VERSION_KEY}"
    }


__all__ = ["NULL", "Converter", "SchemaAndValue", "named_factory", "sub_config"]
