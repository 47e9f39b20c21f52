"""What a migration would do with each connector, and whether it can: pure, from what the two
sides answered.

A connector can move when the side it goes to validates its config and runs its plugin, when
no connector of that name is already there doing something else, and when every value the side
it comes from hid (``[hidden]``) is supplied with ``--set``. A config provider's reference
(``${file:...}``) is a value like any other: it moves as written, and the side it goes to
resolves it.

Nothing here ever holds a secret for printing: a row names keys, never their values, and any
message a side answered is cleaned of every value given with ``--set`` before it is shown.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from headrace.core.model.workerconfig import with_worker_converters

HIDDEN = "[hidden]"
VERSION_KEY = "connector.plugin.version"
CONVERTER_ROLES = ("key.converter", "value.converter")
"""The converters a connector config may leave to its worker, which change how bytes are read."""
CONNECT_JSON = "org.apache.kafka.connect.json.JsonConverter"
HEADRACE_DEFAULT_SUB_CONFIG = {"schemas.enable": "false"}
"""headrace's converter for a role its config and worker config name none for: Connect's
JsonConverter without schemas (``headrace.components.converters``' default)."""


@dataclass(frozen=True)
class Move:
    """One connector's move: its config as it will be created (with ``--set`` applied), its
    offsets where the side it comes from stands now, and why it cannot move, if it cannot."""

    name: str
    kind: str
    plugin: str
    version: str
    config: Mapping[str, str]
    offsets: Sequence[Mapping[str, Any]]
    blockers: Sequence[str] = field(default_factory=tuple)
    next: str = ""  # what a cutover does first
    secrets: Sequence[str] = field(default_factory=tuple, repr=False)  # never to be shown
    from_version: str = ""  # what the side it comes from runs
    install: str = ""  # the Maven coordinate of the plugin the side it goes to lacks, if known

    @property
    def movable(self) -> bool:
        return not self.blockers


def hidden_keys(config: Mapping[str, str]) -> list[str]:
    return sorted(k for k, v in config.items() if v == HIDDEN)


def with_supplied(
    config: Mapping[str, str], supplied: Mapping[str, str]
) -> tuple[dict[str, str], list[str]]:
    """The config with ``supplied`` values set, and the hidden keys still missing a value."""
    merged = {**config, **supplied}
    return merged, hidden_keys(merged)


def with_implicit_converters(
    config: Mapping[str, str], worker: Mapping[str, str] | None, *, from_connect: bool
) -> tuple[dict[str, str], list[str]]:
    """The config with the converters its worker gave it written out, and the roles whose
    converter cannot be known. From Kafka Connect: the worker's (its properties file, None when
    not given), for each role the config names none for; a role neither names is unknown. From
    headrace: its worker config's, else headrace's default, written out so that Kafka
    Connect's worker does not put its own in their place. Either way, bytes are read after the
    move as they were before it."""
    given = dict(with_worker_converters(config, worker or {}))
    missing = [role for role in CONVERTER_ROLES if not given.get(role, "").strip()]
    if from_connect:
        return given, missing
    for role in missing:
        given[role] = CONNECT_JSON
        for key, value in HEADRACE_DEFAULT_SUB_CONFIG.items():
            given.setdefault(f"{role}.{key}", value)
    return given, []


CONNECTION_KEYS = frozenset({"bootstrap.servers", "security.protocol", "client.id"})
"""Client keys that say how a worker reaches Kafka, not how a connector's clients behave: the
cluster's own, never carried from one side's workers to a connector's config."""
CONNECTION_PREFIXES = ("sasl.", "ssl.")


def implicit_clients(kind: str, worker: Mapping[str, str]) -> dict[str, str]:
    """What a worker's properties give a connector of ``kind``'s clients (a source's producer,
    a sink's consumer, and both one's admin), as the connector's own overrides
    (``producer.override.acks``); the keys of reaching Kafka aside."""
    roles = ("producer", "admin") if kind == "source" else ("consumer", "admin")
    found = {}
    for key, value in worker.items():
        role, _, client_key = key.partition(".")
        if role not in roles or not client_key or client_key in CONNECTION_KEYS:
            continue
        if client_key.startswith(CONNECTION_PREFIXES):
            continue
        found[f"{role}.override.{client_key}"] = value
    return found


def with_implicit(
    config: Mapping[str, str],
    kind: str,
    *,
    connect_worker: Mapping[str, str] | None,
    our_worker: Mapping[str, str] | None,
    from_connect: bool,
) -> tuple[dict[str, str], list[str]]:
    """:func:`with_implicit_converters`, and the client settings the worker it comes from gave
    it written out as its own overrides where the side it goes to would not give the same: from
    Kafka Connect, each of its worker's that headrace's worker config does not set alike; from
    headrace, each of its worker config's (Kafka Connect's worker is not known). The side it
    goes to checks them as any override (headrace: its override policy, naming the key)."""
    worker = connect_worker if from_connect else our_worker
    given, missing = with_implicit_converters(config, worker, from_connect=from_connect)
    theirs = implicit_clients(kind, worker or {})
    if from_connect:
        ours = implicit_clients(kind, our_worker or {})
        theirs = {k: v for k, v in theirs.items() if ours.get(k) != v}
    for key, value in theirs.items():
        given.setdefault(key, value)
    return given, missing


def validation_problems(answer: Mapping[str, Any]) -> list[str]:
    """``key: error`` for each error of a validation answer (Connect's ``ConfigInfos``)."""
    problems = []
    for entry in answer.get("configs", []):
        value = entry.get("value", {})
        key = value.get("name", "?")
        for error in value.get("errors", []):
            problems.append(error if error.startswith(f"{key}:") else f"{key}: {error}")
    if not problems and answer.get("error_count"):
        problems.append(f"{answer['error_count']} error(s) in its config")
    return problems


def version_to_run(plugins: Sequence[Mapping[str, Any]], config: Mapping[str, str]) -> str:
    """The version of the connector's plugin the side it goes to will run: the one the config
    pins (KIP-891), else the latest installed; empty when the side has no such plugin."""
    cls = config.get("connector.class", "")
    versions = [str(p.get("version", "")) for p in plugins if cls and _names(cls, p)]
    pinned = config.get(VERSION_KEY, "").strip()
    if pinned and pinned != "latest":
        if pinned[0] in "[(":  # a Maven range (KIP-891): the side's validation judges it
            return pinned if versions else ""
        return pinned if pinned in versions else ""
    return max(versions, key=_version_order) if versions else ""


def full_class(plugins: Sequence[Mapping[str, Any]], config: Mapping[str, str]) -> str:
    """The full class name of the connector ``config`` names (it may name an alias), as the
    side that lists ``plugins`` knows it; as named when that side has none."""
    cls = config.get("connector.class", "")
    found = [str(p.get("class", "")) for p in plugins if cls and _names(cls, p)]
    return found[0] if found else cls


ARTIFACTS = (
    ("org.apache.kafka.connect.file.", "org.apache.kafka:connect-file"),
    ("org.apache.kafka.connect.mirror.", "org.apache.kafka:connect-mirror"),
)
"""The Maven artifact of the connectors a package holds, where it is known."""
DEBEZIUM = "io.debezium.connector."
DEBEZIUM_ARTIFACT_NAMES = {"postgresql": "postgres"}
"""Debezium's connectors are ``io.debezium:debezium-connector-<package>``, but for these."""


def install_coordinate(class_name: str, version: str) -> str:
    """The Maven coordinate that installs ``class_name`` at ``version`` (what the side it comes
    from runs), where it is known: Kafka's own connectors and Debezium's; empty otherwise."""
    if not version or version.upper() in ("", "UNKNOWN"):
        return ""
    for package, artifact in ARTIFACTS:
        if class_name.startswith(package):
            return f"{artifact}:{version}"
    if class_name.startswith(DEBEZIUM):
        package = class_name.removeprefix(DEBEZIUM).split(".", 1)[0]
        if package:
            name = DEBEZIUM_ARTIFACT_NAMES.get(package, package)
            return f"io.debezium:debezium-connector-{name}:{version}"
    return ""


def _names(cls: str, plugin: Mapping[str, Any]) -> bool:
    """Whether ``cls`` names ``plugin``: its class, or an alias as Connect takes them (the
    simple name, with or without its ``Connector`` suffix)."""
    full = str(plugin.get("class", ""))
    simple = full.rsplit(".", 1)[-1]
    return cls in (full, simple, simple.removesuffix("Connector"))


def _version_order(version: str) -> tuple[tuple[int, str], ...]:
    return tuple((int(p), "") if p.isdigit() else (-1, p) for p in version.split("."))


def plan_move(
    name: str,
    kind: str,
    config: Mapping[str, str],
    offsets: Sequence[Mapping[str, Any]],
    *,
    supplied: Mapping[str, str],
    plugins: Sequence[Mapping[str, Any]],
    validation: Mapping[str, Any] | None,
    refused: str | None,
    target: str,
    next_step: str,
    creating: bool = True,
    conflict: str | None = None,
    from_version: str = "",
    unknown_converters: Sequence[str] = (),
    install: str = "",
) -> Move:
    """A connector's move to ``target``, from what both sides answered: ``validation`` is the
    target's answer to its config (None when it was not asked: a hidden value is missing, or
    an earlier cutover created it there already, ``creating`` False), ``refused`` the message
    the target refused the validation with, if it did; ``next_step`` what a cutover does
    first, or ``conflict`` why it would not go on; ``install`` the Maven coordinate that
    installs its plugin where the target lacks it, if known."""
    merged, missing = with_supplied(config, supplied)
    secrets = secret_values(merged, supplied, validation)
    blockers = []
    lacks = ""
    version = version_to_run(plugins, merged)
    if creating:
        blockers += [
            f"{key}: hidden by the side it comes from; supply it with --set {key}=... "
            '(over the API, in "set")'
            for key in missing
        ]
        blockers += [
            f"{role}: its config names none, so Kafka Connect's worker gives it, and it says "
            "how the bytes are read: give the worker's properties file (--worker-properties; "
            f'over the API, "worker"), or --set {role}=...'
            for role in unknown_converters
            if role not in merged
        ]
        blockers += relative_files(merged)
        problems = [] if validation is None else validation_problems(validation)
        if not version and install:  # said below, with the command that installs it
            problems = [p for p in problems if not p.startswith("connector.class:")]
        if refused is not None:
            blockers.append(refused)
        blockers += problems
        if not version and (install or (refused is None and not problems)):
            # Said even when the validation refused the config: it refuses it for that.
            plugin = merged.get("connector.class", "?")
            lacking = f"{target} has no plugin {plugin!r} at the version the config asks for"
            hint = f": install it with headrace plugins install {install}" if install else ""
            blockers.append(lacking + hint)
            lacks = install
    if conflict is not None:
        blockers.append(conflict)
    return Move(
        name,
        kind,
        merged.get("connector.class", ""),
        version,
        merged,
        list(offsets),
        tuple(clean(b, secrets) for b in blockers),
        next_step,
        secrets,
        from_version,
        lacks,
    )


FILE_KEY = "file"
"""The key Kafka's FileStream connectors (and headrace's) read as the file they copy."""


def relative_files(config: Mapping[str, str]) -> list[str]:
    """Why a relative ``file`` cannot move: each side finds it from a folder of its own (Kafka
    Connect from its worker's working folder, headrace under its first file root), so it would
    name another file, and a FileStream source keeps its position under the name its JVM
    opened."""
    path = config.get(FILE_KEY, "").strip()
    if not path or path.startswith("/") or path.startswith("${"):
        return []
    return [
        f"{FILE_KEY}: {path!r} is relative, and each side finds it from a folder of its own "
        "(Kafka Connect from its worker's working folder, headrace under HEADRACE_FILE_ROOTS), "
        "so it would name another file and its offsets would not apply: give the connector "
        "an absolute path on the side it comes from"
    ]


def secret_values(
    config: Mapping[str, str], supplied: Mapping[str, str], validation: Mapping[str, Any] | None
) -> tuple[str, ...]:
    """The values never to show: every one the operator supplied, and every value of a key the
    side it goes to defines as a PASSWORD (the side it comes from may show them in clear)."""
    passwords = {
        str(entry.get("definition", {}).get("name", ""))
        for entry in (validation or {}).get("configs", [])
        if str(entry.get("definition", {}).get("type", "")).upper() == "PASSWORD"
    }
    found = [*supplied.values(), *(config[k] for k in passwords if k in config)]
    return tuple(v for v in found if v and v != HIDDEN)


MIN_MASKED = 4
"""Shorter values are not looked for in messages, nor numbers and words any config is full of:
masking every "1" or "true" would mangle them, and such a value is no secret."""
PLAIN_WORDS = frozenset({"true", "false", "none", "null", "all"})


def clean(message: str, secrets: Sequence[str] | Mapping[str, str]) -> str:
    """``message`` without any of ``secrets`` (a mapping: its values)."""
    values = secrets.values() if isinstance(secrets, Mapping) else secrets
    for value in sorted(values, key=len, reverse=True):
        if len(value) >= MIN_MASKED and not value.isdigit() and value not in PLAIN_WORDS:
            message = message.replace(value, HIDDEN)
    return message


def move_json(move: Move) -> dict[str, Any]:
    """A move as JSON, as ``--plan -o json`` and the API show it: no secret in it."""
    return {
        "name": move.name,
        "type": move.kind,
        "plugin": move.plugin,
        "version": move.version,
        "from_version": move.from_version,
        "offsets": [dict(entry) for entry in move.offsets],
        "movable": move.movable,
        "next": move.next,
        "blockers": list(move.blockers),
    }


def offsets_summary(kind: str, offsets: Sequence[Mapping[str, Any]]) -> str:
    """A short line for a table: a sink's positions by topic-partition, a source's offsets."""
    if not offsets:
        return "none"
    if kind == "sink":
        parts = [
            f"{e['partition'].get('kafka_topic')}-{e['partition'].get('kafka_partition')}"
            f"@{e['offset'].get('kafka_offset') if e.get('offset') else None}"
            for e in offsets
        ]
    else:
        parts = [f"{_compact(e.get('partition'))}: {_compact(e.get('offset'))}" for e in offsets]
    shown = ", ".join(parts[:3])
    return shown if len(parts) <= 3 else f"{shown} (+{len(parts) - 3} more)"


def _compact(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))
