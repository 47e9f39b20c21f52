"""The framework's own keys of a connector config, read the same way by every service.

The config service checks them before anything is written; the worker and the plugin host read
them again when they run the connector. Each reader raises ``ConfigException`` naming the key,
so a value is refused with one message wherever it is found wrong.
"""

from __future__ import annotations

from collections.abc import Mapping

from headrace.sdk.errors import ConfigException

TASKS_MAX = "tasks.max"
PLUGIN_VERSION = "connector.plugin.version"
PLUGIN_VERSION_ALIAS = "connector.version"  # KIP-891's first name for the key


def tasks_max(config: Mapping[str, str]) -> int:
    """``tasks.max`` (default 1) as a whole number of at least 1."""
    raw = config.get(TASKS_MAX, "1")
    try:
        value = int(raw)
    except ValueError:
        raise ConfigException(f"{TASKS_MAX}: {raw!r} is not a whole number") from None
    if value < 1:
        raise ConfigException(f"{TASKS_MAX}: must be at least 1, got {value}")
    return value


def requested_version(config: Mapping[str, str]) -> str | None:
    """The plugin version a config asks for; None means the latest installed."""
    return config.get(PLUGIN_VERSION) or config.get(PLUGIN_VERSION_ALIAS) or None
