"""How the ``headrace`` command prints: ``-o json`` and ``-o yaml`` for scripts, plain tables
(kubectl's look: no borders, two spaces between columns) for people.

Every function here takes the Connect-shaped dicts of :mod:`headrace.cli.shapes` and returns
text; nothing prints, so all of it is tested without a terminal or a service.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import yaml
from rich.console import Console
from rich.table import Table
from rich.text import Text

FORMATS = ("table", "json", "yaml")
NONE = "<none>"  # what kubectl shows for an empty cell

# Wide enough that no cell is ever folded when the output is not a terminal: a pipe into grep
# or awk wants one row per line.
UNBOUNDED = 100_000


def serialize(data: Any, fmt: str) -> str:
    """``data`` as JSON or YAML text, keys in the order given (Connect's order)."""
    if fmt == "json":
        return json.dumps(data, indent=2) + "\n"
    if fmt == "yaml":
        return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, default_flow_style=False)
    raise ValueError(f"no serialization {fmt!r}")


def table(headers: Sequence[str], rows: Iterable[Sequence[str]], width: int | None = None) -> str:
    """Rows under their headers; with a ``width`` (a terminal's) long cells fold to fit."""
    grid = Table(box=None, show_edge=False, pad_edge=False, header_style="", expand=False)
    for header in headers:
        grid.add_column(header, no_wrap=width is None, overflow="fold")
    for row in rows:
        # Text, not str: a value like "[bold]" is data, not rich's markup.
        grid.add_row(*(Text(cell) for cell in row))
    out = io.StringIO()
    console = Console(file=out, width=width or UNBOUNDED, color_system=None, soft_wrap=False)
    console.print(grid)
    return "".join(line.rstrip() + "\n" for line in out.getvalue().splitlines())


def compact(value: Any) -> str:
    """A JSON value on one line, keys sorted: a partition or offset in a table cell."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def trace_headline(trace: str) -> str:
    """The line of a failure's trace that says what went wrong: a Python traceback's last line
    (the exception), else the first (a Java trace, or a plain message)."""
    lines = [line for line in trace.splitlines() if line.strip()]
    if not lines:
        return ""
    if lines[0].startswith("Traceback (most recent call last)"):
        unindented = [line for line in lines if not line.startswith((" ", "\t"))]
        return unindented[-1].strip()
    return lines[0].strip()


def _or_none(value: Any) -> str:
    return str(value) if value not in (None, "") else NONE


def task_count(status: Mapping[str, Any]) -> str:
    """``running/total`` of a connector's tasks."""
    tasks = status.get("tasks", [])
    running = sum(1 for t in tasks if t.get("state") == "RUNNING")
    return f"{running}/{len(tasks)}"


CONNECTOR_HEADERS = ("NAME", "TYPE", "STATE", "TASKS", "PLUGIN VERSION", "WORKER")


def connectors_table(expanded: Mapping[str, Mapping[str, Any]], width: int | None = None) -> str:
    """``get connectors``: one row per connector of Connect's expanded listing."""
    rows = []
    for name, entry in expanded.items():
        status = entry["status"]
        connector = status["connector"]
        rows.append(
            [
                name,
                _or_none(status.get("type")),
                connector["state"],
                task_count(status),
                _or_none(connector.get("version")),
                _or_none(connector.get("worker_id")),
            ]
        )
    return table(CONNECTOR_HEADERS, rows, width)


def tasks_table(tasks: Sequence[Mapping[str, Any]], width: int | None = None) -> str:
    """``get tasks``: each task's state, worker, version, and what failed it."""
    rows = [
        [
            str(t["id"]),
            t["state"] + auto_restart_note(t),
            _or_none(t.get("worker_id")),
            _or_none(t.get("version")),
            trace_headline(t.get("trace", "")),
        ]
        for t in tasks
    ]
    return table(("ID", "STATE", "WORKER", "VERSION", "TRACE"), rows, width)


def plugins_table(plugins: Sequence[Mapping[str, Any]], width: int | None = None) -> str:
    rows = [[p["class"], p["type"], _or_none(p.get("version"))] for p in plugins]
    if not any(p.get("error") for p in plugins):
        return table(("CLASS", "TYPE", "VERSION"), rows, width)
    broken = [[*row, p.get("error", "")] for row, p in zip(rows, plugins, strict=True)]
    return table(("CLASS", "TYPE", "VERSION", "ERROR"), broken, width)


def installs_table(installs: Sequence[Mapping[str, Any]], width: int | None = None) -> str:
    rows = [
        [
            i["coordinate"],
            ", ".join(p["class"].rsplit(".", 1)[-1] for p in i["plugins"]) or "(none here)",
            i["sha512"][:16],
        ]
        for i in installs
    ]
    return table(("COORDINATE", "PLUGINS", "SHA-512"), rows, width)


def offsets_table(offsets: Mapping[str, Any], width: int | None = None) -> str:
    rows = [
        [compact(o["partition"]), NONE if o["offset"] is None else compact(o["offset"])]
        for o in offsets["offsets"]
    ]
    return table(("PARTITION", "OFFSET"), rows, width)


def _default(key: Mapping[str, Any]) -> str:
    """A key's default: an empty string shown as one, told apart from no default at all."""
    return '""' if key.get("default_value") == "" else _or_none(key.get("default_value"))


def keys_table(keys: Sequence[Mapping[str, Any]], width: int | None = None) -> str:
    """``plugins config``: a plugin's keys as Connect's ConfigKeyInfo describes them."""
    rows = [
        [
            k["name"],
            k["type"],
            "yes" if k.get("required") else "no",
            _default(k),
            k.get("importance", ""),
            k.get("documentation", ""),
        ]
        for k in keys
    ]
    headers = ("NAME", "TYPE", "REQUIRED", "DEFAULT", "IMPORTANCE", "DOCUMENTATION")
    return table(headers, rows, width)


def validation_errors(infos: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """(key, value, error) for every error of a validate answer, in the answer's order."""
    return [
        (c["value"]["name"], c["value"].get("value", NONE), error)
        for c in infos["configs"]
        for error in c["value"].get("errors", [])
    ]


def validation_table(infos: Mapping[str, Any], width: int | None = None) -> str:
    """``validate``: the keys with errors; a line saying so when there are none."""
    errors = validation_errors(infos)
    if not errors:
        return f"{infos['name']}: no errors in {len(infos['configs'])} keys\n"
    return table(("KEY", "VALUE", "ERROR"), errors, width)


def _indent(text: str, by: str = "  ") -> str:
    return "".join(by + line + "\n" for line in text.splitlines())


def _unit_line(unit: Mapping[str, Any]) -> str:
    where = f" on {unit['worker_id']}" if unit.get("worker_id") else ""
    version = f", version {unit['version']}" if unit.get("version") else ""
    return f"{unit['state']}{where}{version}{auto_restart_note(unit)}"


def auto_restart_note(unit: Mapping[str, Any]) -> str:
    """What a unit's status says of its automatic restarts, as a clause; none without them."""
    auto = unit.get("auto_restart")
    if not auto:
        return ""
    if auto["given_up"]:
        return f", automatic restarts given up after {auto['attempts']}"
    if auto["next_ms"]:
        when = datetime.fromtimestamp(auto["next_ms"] / 1000, UTC).strftime("%H:%M:%S")
        return f", automatic restart {auto['attempts'] + 1} at {when} UTC"
    return f", {auto['attempts']} automatic restarts so far"


def _traces(status: Mapping[str, Any]) -> str:
    units = [("connector", status["connector"])]
    units += [(f"task {t['id']}", t) for t in status["tasks"]]
    out = ""
    for label, unit in units:
        if unit.get("trace"):
            out += f"  {label}:\n" + _indent(unit["trace"].rstrip(), "    ")
    return out


def describe_text(described: Mapping[str, Any], width: int | None = None) -> str:
    """``describe connector``: kubectl-like sections, from :func:`shapes.describe_json`."""
    info, status = described["info"], described["status"]
    inner = width - 2 if width else None  # the sections' tables are indented by two
    config = sorted(info["config"].items())
    text = (
        f"Name:          {info['name']}\n"
        f"Type:          {_or_none(info['type'])}\n"
        f"Target state:  {described['target_state']}\n"
        f"Connector:     {_unit_line(status['connector'])}\n"
        f"Tasks:         {task_count(status)} running\n"
    )
    text += "Config:\n" + _indent(table(("KEY", "VALUE"), config, inner))
    if status["tasks"]:
        text += "Task status:\n" + _indent(tasks_table(status["tasks"], inner))
    if described["offsets"]:
        text += "Offsets:\n" + _indent(offsets_table(described, inner))
    else:
        text += f"Offsets:       {NONE}\n"
    traces = _traces(status)
    if traces:
        text += "Traces:\n" + traces
    return text
