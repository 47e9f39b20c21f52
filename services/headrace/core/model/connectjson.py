"""Config definitions and validation results in Kafka Connect's REST JSON shapes
(``ConfigKeyInfo``, ``ConfigValueInfo``, ``ConfigInfos``): what the REST API answers and the
``headrace`` command prints, from one place. Pure: no I/O.
"""

from __future__ import annotations

from typing import Any

from headrace.core.model.configinfo import ConfigInfos, KeyInfo, ValueInfo


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
