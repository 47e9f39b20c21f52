"""The config service's answers in Kafka Connect's REST JSON shapes: what ``-o json`` and
``-o yaml`` print, and what the tables are built from.

Each function turns one of the config service's answers (``headrace.clients.config``) into the
JSON Connect's REST API gives for the same thing (``GET /connectors/{name}``, ``.../status``,
``.../offsets``, ``/connector-plugins``, ``.../config/validate``), so a script written against
Connect reads these unchanged. They mirror the config service's own REST edge, which works on
its domain types and cannot be imported here. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from headrace.clients.config import ConnectorInfo, ConnectorStatus, UnitState
from headrace.core.model import configinfo
from headrace.core.model.configinfo import ConfigInfos, KeyInfo
from headrace.core.model.plugins import PluginInfo


def info_json(info: ConnectorInfo) -> dict[str, Any]:
    """The shape Kafka Connect's REST API gives a connector."""
    return {
        "name": info.name,
        "config": dict(info.config),
        "tasks": [{"connector": info.name, "task": t.task} for t in info.tasks],
        "type": info.type,
    }


def unit_json(unit: UnitState) -> dict[str, Any]:
    """One connector's or task's status; a task's carries its ``id`` (Connect's task status)."""
    out: dict[str, Any] = {"state": unit.state.value, "worker_id": unit.worker_id}
    if unit.task >= 0:
        out["id"] = unit.task
    if unit.plugin_version:
        out["version"] = unit.plugin_version
    if unit.trace:
        out["trace"] = unit.trace
    if unit.auto_restart_attempts or unit.auto_restart_next_ms or unit.auto_restart_given_up:
        out["auto_restart"] = {
            "attempts": unit.auto_restart_attempts,
            "next_ms": unit.auto_restart_next_ms or None,
            "given_up": unit.auto_restart_given_up,
        }
    return out


def status_json(status: ConnectorStatus) -> dict[str, Any]:
    """The shape of Kafka Connect's status endpoint, with the version each unit runs."""
    return {
        "name": status.name,
        "connector": unit_json(status.connector),
        "tasks": [unit_json(t) for t in status.tasks],
        "type": status.type,
    }


def expanded_json(
    found: Iterable[tuple[ConnectorInfo, ConnectorStatus]],
) -> dict[str, Any]:
    """Connect's ``GET /connectors?expand=info&expand=status``: per name its info and status."""
    return {
        info.name: {"info": info_json(info), "status": status_json(status)}
        for info, status in found
    }


def offsets_json(offsets: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Connect's ``GET /connectors/{name}/offsets`` (KIP-875)."""
    return {"offsets": [dict(o) for o in offsets]}


def describe_json(
    info: ConnectorInfo,
    status: ConnectorStatus,
    offsets: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    """Everything ``describe`` shows: Connect's expanded info and status, the target state
    (desired, where the status is observed) and the offsets."""
    return {
        "info": info_json(info),
        "target_state": info.target_state.value,
        "status": status_json(status),
        **offsets_json(offsets),
    }


def plugin_json(plugin: PluginInfo) -> dict[str, Any]:
    """One entry of Connect's ``GET /connector-plugins``; with ``error``, one that cannot be
    used, and why."""
    out = {"class": plugin.class_name, "type": plugin.type, "version": plugin.version}
    return {**out, "error": plugin.error} if plugin.error else out


def key_json(key: KeyInfo) -> dict[str, Any]:
    """Connect's ConfigKeyInfo; no ``default_value`` for a key without one."""
    return configinfo.key_json(key)


def config_infos_json(infos: ConfigInfos) -> dict[str, Any]:
    """Connect's answer to ``PUT /connector-plugins/{plugin}/config/validate``."""
    return configinfo.config_infos_json(infos)
