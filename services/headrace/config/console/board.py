"""The connectors' board: one row per connector, as the console's first page lists them. Pure:
made from the folded configs and statuses, the sinks' lag, and each connector's secret values
(hidden in every trace shown)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from headrace.core.model.configstate import ConfigState
from headrace.core.model.plugins import PluginDescriptor
from headrace.core.model.status import StatusState
from headrace.core.model.structs import State, WorkUnit
from headrace.core.security.secrets import mask_text

VERSION_KEY = "connector.plugin.version"


def first_line(trace: str) -> str:
    """What a trace says, without its stack: a Java trace's first line, a Python traceback's
    last unindented one (the exception and its message)."""
    lines = [line for line in trace.strip().splitlines() if line.strip()]
    if not lines:
        return ""
    if lines[0].startswith("Traceback"):
        said = [
            line for line in lines if not line[0].isspace() and not line.startswith("Traceback")
        ]
        return said[-1] if said else lines[-1]
    return lines[0]


def connector_row(
    name: str,
    configs: ConfigState,
    statuses: StatusState,
    kind: str,
    plugin: PluginDescriptor | None,
    lag: int | None,
    secret_values: Sequence[str],
) -> dict[str, Any]:
    """One connector's row; ``plugin``: the installed version its config resolves to (None:
    none it can run); ``secret_values`` are hidden in the trace it shows."""
    config = configs.connectors[name]
    own = statuses.get(WorkUnit.of(name))
    tasks = [statuses.get(WorkUnit(name, i)) for i in range(len(configs.tasks_of(name)))]
    error = ""
    for status in (own, *tasks):
        if status is not None and status.state is State.FAILED and status.trace:
            where = "connector" if status.unit.is_connector else f"task {status.unit.task}"
            error = f"{where}: {mask_text(first_line(status.trace), secret_values)}"
            break
    return {
        "name": name,
        "type": kind,
        "state": own.state.value if own is not None else State.UNASSIGNED.value,
        "target": configs.target_of(name).value,
        "tasks": {
            "total": len(tasks),
            "running": sum(1 for t in tasks if t is not None and t.state is State.RUNNING),
            "failed": sum(1 for t in tasks if t is not None and t.state is State.FAILED),
        },
        "plugin": config.get("connector.class", ""),
        # The class an alias names, and the version that runs (or would, before one reports).
        "plugin_class": plugin.class_name if plugin is not None else "",
        "version": (own.plugin_version if own is not None else "")
        or (plugin.version if plugin is not None else config.get(VERSION_KEY, "")),
        "worker": own.worker_id if own is not None else "",
        "lag": lag,
        "error": error,
    }


def connector_rows(
    configs: ConfigState,
    statuses: StatusState,
    type_of: Callable[[Mapping[str, str]], str],
    plugin_of: Callable[[Mapping[str, str]], PluginDescriptor | None],
    lags: Mapping[str, int],
    secret_values: Mapping[str, Sequence[str]],
) -> list[dict[str, Any]]:
    """Every connector's row, by name; ``secret_values`` of those that show a trace
    (:func:`failing`)."""
    return [
        connector_row(
            name,
            configs,
            statuses,
            type_of(configs.connectors[name]),
            plugin_of(configs.connectors[name]),
            lags.get(name),
            secret_values.get(name, ()),
        )
        for name in sorted(configs.connectors)
    ]


def failing(configs: ConfigState, statuses: StatusState) -> set[str]:
    """The connectors one of whose units failed with a trace: their rows show it."""
    return {
        status.unit.connector
        for status in statuses.values()
        if status.state is State.FAILED
        and status.trace
        and status.unit.connector in configs.connectors
    }


def workers(statuses: StatusState) -> dict[str, list[str]]:
    """The units each worker reports running or failed, by worker: what runs where now."""
    placed: dict[str, list[str]] = {}
    for unit, status in statuses.items():
        if status.worker_id and status.state not in (State.UNASSIGNED, State.STOPPED):
            placed.setdefault(status.worker_id, []).append(unit_name(unit))
    return {w: sorted(units) for w, units in sorted(placed.items())}


def unit_name(unit: WorkUnit) -> str:
    """A unit as the console shows it: ``name`` or ``name/3``."""
    return unit.connector if unit.is_connector else f"{unit.connector}/{unit.task}"
