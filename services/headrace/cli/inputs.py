"""What the user hands the ``headrace`` command, read into plain values: connector files for
``apply`` and ``create``, ``--set`` / ``--unset`` / ``-p`` for ``patch``, an offsets body for
``offsets alter``, and durations. Pure: text in, values out, an :class:`InputError` naming the
file or flag at fault; reading files is the commands' business.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from headrace.core.model.structs import Target

# The top-level keys of Connect's create body; anything else is a typo worth refusing.
BODY_KEYS = frozenset({"name", "config", "initial_state"})


class InputError(ValueError):
    """Input the command cannot use; the message says where it is and what is wrong."""


@dataclass(frozen=True)
class ConnectorSpec:
    """One connector as a file declares it: its config carries its ``name``, as stored."""

    name: str
    config: dict[str, str]
    source: str
    initial_state: str = ""


def config_values(raw: Any, where: str, *, nulls: bool = False) -> dict[str, str | None]:
    """A config object's values as text, as Connect takes them (numbers and booleans too);
    with ``nulls``, a null is kept as None (a key to remove)."""
    if not isinstance(raw, dict):
        raise InputError(f"{where}: expected a JSON object of config keys and values")
    out: dict[str, str | None] = {}
    for key, value in raw.items():
        if value is None and nulls:
            out[key] = None
        elif isinstance(value, bool):
            out[key] = "true" if value else "false"
        elif isinstance(value, str | int | float):
            out[key] = str(value)
        else:
            kind = "null" if value is None else type(value).__name__
            raise InputError(f"{where}: the value of {key!r} must be a string, not {kind}")
    return out


def _strings(config: Mapping[str, str | None]) -> dict[str, str]:
    return {k: v for k, v in config.items() if v is not None}


def _parse_json(text: str, source: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{source}: not valid JSON: {exc}") from None


def _initial_state(body: Mapping[str, Any], source: str) -> str:
    raw = body.get("initial_state")
    if raw is None:
        return ""
    state = str(raw).strip().upper()
    if state not in {t.value for t in Target}:
        choices = ", ".join(t.value for t in Target)
        raise InputError(f"{source}: initial_state {raw!r} is not one of {choices}")
    return state


def _body(body: Any, source: str) -> tuple[str | None, dict[str, str], str]:
    """One body's name (None when it has none), config and initial state: Connect's
    ``{"name", "config"}`` (POST /connectors) or a bare config with its ``name`` inside
    (PUT /connectors/{name}/config). A name given twice must be one name."""
    if not isinstance(body, dict):
        raise InputError(
            f'{source}: expected {{"name": ..., "config": {{...}}}} or a config object'
        )
    if isinstance(body.get("config"), dict):
        unknown = sorted(set(body) - BODY_KEYS)
        if unknown:
            raise InputError(f"{source}: unknown key(s) {', '.join(unknown)} beside config")
        config = _strings(config_values(body["config"], f"{source}: config"))
        outer, initial = body.get("name"), _initial_state(body, source)
    else:
        config, outer, initial = _strings(config_values(body, source)), None, ""
    if outer is not None and not isinstance(outer, str):
        raise InputError(f"{source}: name must be a string")
    inner = config.get("name")
    name = (outer if outer is not None else inner or "").strip() or None  # as Connect trims it
    if name is not None and inner is not None and inner.strip() != name:
        raise InputError(f"{source}: config name {inner!r} is not the connector's name {name!r}")
    return name, config, initial


def config_body(text: str, source: str) -> tuple[str | None, dict[str, str], str]:
    """A file holding one connector's body, its name optional (``create NAME -f``, ``validate``)."""
    return _body(_parse_json(text, source), source)


def _spec(body: Any, source: str) -> ConnectorSpec:
    name, config, initial = _body(body, source)
    if name is None:
        raise InputError(f"{source}: the connector's name is missing (a name key)")
    return ConnectorSpec(name, {**config, "name": name}, source, initial)


def connector_specs(text: str, source: str) -> list[ConnectorSpec]:
    """The connectors a file declares: one body, or a JSON array of them."""
    body = _parse_json(text, source)
    if not isinstance(body, list):
        return [_spec(body, source)]
    if not body:
        raise InputError(f"{source}: an empty array declares no connector")
    return [_spec(b, f"{source}[{i}]") for i, b in enumerate(body)]


def no_duplicates(specs: Iterable[ConnectorSpec]) -> None:
    """Refuses two declarations of one connector: which one should win is not the CLI's guess."""
    seen: dict[str, str] = {}
    for spec in specs:
        if spec.name in seen:
            raise InputError(
                f"connector {spec.name!r} is declared in {seen[spec.name]} and {spec.source}"
            )
        seen[spec.name] = spec.source


def pairs(values: Iterable[str], flag: str) -> dict[str, str]:
    """``key=value`` arguments; the value may hold ``=`` and be empty, the key may not."""
    out = {}
    for pair in values:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise InputError(f"{flag} takes key=value, got {pair!r}")
        out[key.strip()] = value
    return out


def patch_changes(
    sets: Iterable[str], unsets: Iterable[str], merge_patch: str | None
) -> dict[str, str | None]:
    """Connect's PATCH body from ``--set``, ``--unset`` and a JSON merge patch (``-p``): each key
    to its new value, None for a key to remove. One key changed two ways is refused."""
    changes: dict[str, str | None] = {}
    sources: dict[str, str] = {}

    def add(key: str, value: str | None, flag: str) -> None:
        if key in changes and changes[key] != value:
            raise InputError(f"{key!r} is changed two ways, by {sources[key]} and {flag}")
        changes[key], sources[key] = value, flag

    if merge_patch is not None:
        for key, value in config_values(_parse_json(merge_patch, "-p"), "-p", nulls=True).items():
            add(key, value, "-p")
    for key, value in pairs(sets, "--set").items():
        add(key, value, "--set")
    for key in unsets:
        if not key.strip():
            raise InputError("--unset takes a key")
        add(key.strip(), None, "--unset")
    if not changes:
        raise InputError("nothing to change: give --set KEY=VALUE, --unset KEY or -p JSON")
    return changes


def offsets_body(text: str, source: str) -> list[dict[str, Any]]:
    """Connect's ``PATCH /connectors/{name}/offsets`` body (KIP-875):
    ``{"offsets": [{"partition": {...}, "offset": {...} or null}]}``."""
    body = _parse_json(text, source)
    entries = body.get("offsets") if isinstance(body, dict) else None
    if not isinstance(entries, list):
        raise InputError(
            f'{source}: expected {{"offsets": [{{"partition": {{...}}, "offset": {{...}}}}]}}'
        )
    parsed = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or not isinstance(entry.get("partition"), dict):
            raise InputError(f"{source}: offsets[{i}] needs a partition object")
        offset = entry.get("offset")
        if offset is not None and not isinstance(offset, dict):
            raise InputError(f"{source}: offsets[{i}].offset must be an object or null")
        parsed.append({"partition": entry["partition"], "offset": offset})
    return parsed


_DURATION = re.compile(r"^\s*(\d+(?:\.\d*)?)\s*(ms|s|m|h)?\s*$")
_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def duration(text: str) -> float:
    """Seconds from ``90``, ``90s``, ``1.5m``, ``500ms`` or ``1h`` (kubectl's ``--timeout``)."""
    match = _DURATION.match(text)
    if match is None:
        raise InputError(f"{text!r} is not a duration (like 60, 60s, 2m or 500ms)")
    return float(match[1]) * _SECONDS[match[2] or "s"]
