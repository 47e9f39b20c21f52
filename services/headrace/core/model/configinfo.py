"""A config's validation, key by key, in the shape of Kafka Connect's validate answer.

``ConfigInfos`` is what ``PUT /connector-plugins/{plugin}/config/validate`` answers: for each key
its definition (type, default, importance, documentation, group, order, width, display name,
dependents) and its value (as given, its errors, recommended values, visibility), with the count
of errors. The plugin process builds the plugin's own keys from its ``ConfigDef``; the config
service adds the framework's (``headrace.config.framework``) and merges the two.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from headrace.sdk.config import NO_DEFAULT, ConfigKey, ConfigValue, Type


@dataclass(frozen=True)
class KeyInfo:
    name: str
    type: str = "STRING"
    required: bool = False
    default_value: str | None = None
    importance: str = "MEDIUM"
    documentation: str = ""
    group: str = ""
    order_in_group: int = -1
    width: str = "NONE"
    display_name: str = ""
    dependents: tuple[str, ...] = ()


@dataclass(frozen=True)
class ValueInfo:
    name: str
    value: str | None = None
    recommended_values: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()
    visible: bool = True


@dataclass(frozen=True)
class ConfigInfo:
    definition: KeyInfo
    value: ValueInfo


@dataclass(frozen=True)
class ComponentKeys:
    """A component version from the plugin path (KIP-891) and the keys of its definition;
    ``keys`` None when it gives none, or it could not be read."""

    class_name: str
    version: str
    type: str
    keys: tuple[KeyInfo, ...] | None

    @property
    def password_keys(self) -> frozenset[str] | None:
        """Its PASSWORD keys; None when its definition could not be had."""
        if self.keys is None:
            return None
        return frozenset(k.name for k in self.keys if k.type == Type.PASSWORD.value)


@dataclass(frozen=True)
class ConfigInfos:
    name: str
    configs: tuple[ConfigInfo, ...] = ()
    groups: tuple[str, ...] = field(default=())

    @property
    def error_count(self) -> int:
        return sum(len(c.value.errors) for c in self.configs)

    def errors(self) -> list[str]:
        """Every error, each naming its key."""
        return [
            e if e.startswith(c.value.name) else f"{c.value.name}: {e}"
            for c in self.configs
            for e in c.value.errors
        ]


def text(value: Any) -> str | None:
    """A config value as Connect shows it: text, a list joined by commas; None for none."""
    if value is None or value is NO_DEFAULT:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    return str(value)


def key_info(key: ConfigKey) -> KeyInfo:
    default = None if key.type is Type.PASSWORD and key.default else text(key.default)
    return KeyInfo(
        name=key.name,
        type=key.type.value,
        required=key.required,
        default_value=default,
        importance=key.importance.value,
        documentation=key.doc,
        group=key.group,
        order_in_group=key.order_in_group,
        width=key.width.value,
        display_name=key.display_name or key.name,
        dependents=tuple(key.dependents),
    )


def value_info(value: ConfigValue, secret: bool = False) -> ValueInfo:
    shown = "[hidden]" if secret and value.value is not None else text(value.value)
    return ValueInfo(
        name=value.name,
        value=shown,
        recommended_values=tuple(t for v in value.recommended_values if (t := text(v)) is not None),
        errors=tuple(value.errors),
        visible=value.visible,
    )


def merge(name: str, *parts: Iterable[ConfigInfo]) -> ConfigInfos:
    """One answer from several: a key named twice keeps its first definition and gathers the
    errors of both (the framework's and the plugin's); groups in the order they first appear."""
    by_name: dict[str, ConfigInfo] = {}
    for info in (i for part in parts for i in part):
        known = by_name.get(info.value.name)
        if known is None:
            by_name[info.value.name] = info
            continue
        errors = tuple(dict.fromkeys([*known.value.errors, *info.value.errors]))
        by_name[info.value.name] = replace(known, value=replace(known.value, errors=errors))
    configs = tuple(by_name.values())
    groups = tuple(dict.fromkeys(c.definition.group for c in configs if c.definition.group))
    return ConfigInfos(name, configs, groups)


def definitions(infos: ConfigInfos) -> Sequence[KeyInfo]:
    return [c.definition for c in infos.configs]


def key_of(message: str, fallback: str, keys: Collection[str]) -> str:
    """The key an error message names at its start (``"<key>: ..."``), when it is one of
    ``keys``; else ``fallback``, the key the check that raised it is about."""
    named = message.split(":", 1)[0].strip()
    return named if named in keys else fallback


# -- In Kafka Connect's REST JSON shapes (ConfigKeyInfo, ConfigValueInfo, ConfigInfos): what the
# REST API answers and the headrace command prints, from one place.


def _present(fields: dict[str, Any]) -> dict[str, Any]:
    """The fields that have a value: Kafka's description types each as a string, not null."""
    return {k: v for k, v in fields.items() if v is not None}


def key_json(key: KeyInfo) -> dict[str, Any]:
    """Connect's ConfigKeyInfo; no ``default_value`` for a key without one."""
    return _present(
        {
            "name": key.name,
            "type": key.type,
            "required": key.required,
            "default_value": key.default_value,
            "importance": key.importance,
            "documentation": key.documentation,
            "group": key.group or None,
            "order": key.order_in_group,
            "width": key.width,
            "display_name": key.display_name,
            "dependents": list(key.dependents),
        }
    )


def value_json(value: ValueInfo) -> dict[str, Any]:
    """Connect's ConfigValueInfo; no ``value`` for a key neither set nor defaulted."""
    return _present(
        {
            "name": value.name,
            "value": value.value,
            "recommended_values": list(value.recommended_values),
            "errors": list(value.errors),
            "visible": value.visible,
        }
    )


def config_infos_json(infos: ConfigInfos) -> dict[str, Any]:
    """Connect's answer to ``PUT /connector-plugins/{plugin}/config/validate``."""
    return {
        "name": infos.name,
        "error_count": infos.error_count,
        "groups": list(infos.groups),
        "configs": [
            {"definition": key_json(c.definition), "value": value_json(c.value)}
            for c in infos.configs
        ],
    }
