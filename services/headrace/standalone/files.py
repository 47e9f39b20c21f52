"""The files standalone mode starts from, as Kafka Connect's ``connect-standalone.sh`` takes
them: a worker properties file, then connector configs as properties or JSON. Pure but for
reading the files.

The worker file's keys:

| key | default | |
| --- | --- | --- |
| ``bootstrap.servers`` | ``localhost:9092`` | the Kafka cluster |
| ``offset.storage.file.filename`` | required | the file that keeps source offsets |
| ``offset.flush.interval.ms`` | 60000 | how often source offsets are stored, at most |
| ``plugin.path`` | none | where plugins are, comma-separated |
| ``listeners`` | ``http://127.0.0.1:8083`` | the REST API's address (``rest.host.name`` and |
| | | ``rest.port`` as Connect's older releases took it); loopback |
| | | when it names no host: another address needs auth on |
| ``exactly.once.source.support`` | disabled | ``enabled``: sources write in transactions, and |
| | | their offsets reach the file in two phases (``OffsetStore``) |
| the rest | | as a distributed worker's config file (``headrace.core.model.workerconfig``) |

A connector file is, as Connect 3.5 and later read one, a JSON object of string values (with
``name``), a JSON create request (``{"name": ..., "config": {...}, "initial_state": ...}``), or
a properties file. A key that belongs to distributed mode only is refused with the reason, as is
any key headrace does not honour, naming the file.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from headrace.core.model import workerconfig
from headrace.core.model.properties import parse_properties
from headrace.sdk.errors import ConfigException

OFFSETS_FILE = "offset.storage.file.filename"
FLUSH_INTERVAL = "offset.flush.interval.ms"
DEFAULT_FLUSH_INTERVAL_MS = 60_000
DEFAULT_PORT = 8083
# A listener that names no host: this machine only. (Connect binds every interface, with its
# REST API open; headrace serves beyond this machine only where the worker file names an
# address, and then with auth on unless HEADRACE_REST_OPEN says otherwise.)
UNNAMED_HOST = "127.0.0.1"
INITIAL_STATES = ("RUNNING", "PAUSED", "STOPPED")

_DISTRIBUTED_ONLY = (
    "group.id",
    "config.storage.topic",
    "offset.storage.topic",
    "status.storage.topic",
    "config.storage.replication.factor",
    "offset.storage.replication.factor",
    "status.storage.replication.factor",
    "offset.storage.partitions",
    "status.storage.partitions",
)


class StandaloneConfigError(ConfigException):
    """A file standalone mode cannot start from: the message names the file and the key."""


@dataclass(frozen=True)
class StandaloneWorker:
    """A standalone worker's properties, as headrace honours them."""

    bootstrap_servers: str
    offsets_file: Path
    offset_flush_interval_ms: int
    plugin_path: tuple[Path, ...]
    rest_host: str
    rest_port: int
    worker_config: Mapping[str, str]  # the keys a distributed worker's file takes too


@dataclass(frozen=True)
class ConnectorFile:
    """One connector to create, as its file gives it."""

    name: str
    config: Mapping[str, str]
    initial_state: str | None = None


def read_worker(path: Path, cwd: Path | None = None) -> StandaloneWorker:
    """The worker properties file at ``path``; relative paths in it are taken from ``cwd`` (the
    working folder, as Connect takes them). StandaloneConfigError naming the file and key."""
    props = parse_properties(_read(path))
    return worker_from(props, str(path), cwd or Path.cwd())


def worker_from(props: Mapping[str, str], where: str, cwd: Path) -> StandaloneWorker:
    """A standalone worker from its properties (``where``: the file they came from)."""
    rest = dict(props)
    for key in _DISTRIBUTED_ONLY:
        if key in rest:
            raise StandaloneConfigError(
                f"{where}: {key}: distributed mode's; a standalone worker keeps source offsets "
                f"in {OFFSETS_FILE} and needs no group or internal topics"
            )
    offsets = rest.pop(OFFSETS_FILE, "").strip()
    if not offsets:
        raise StandaloneConfigError(f"{where}: {OFFSETS_FILE}: required, the file for offsets")
    raw_interval = rest.pop(FLUSH_INTERVAL, str(DEFAULT_FLUSH_INTERVAL_MS)).strip()
    if not raw_interval.isdecimal():
        raise StandaloneConfigError(
            f"{where}: {FLUSH_INTERVAL}: {raw_interval!r} is not a whole number of milliseconds"
        )
    bootstrap = rest.pop("bootstrap.servers", "localhost:9092").strip()
    if not bootstrap:
        raise StandaloneConfigError(f"{where}: bootstrap.servers: empty")
    plugin_path = tuple(
        cwd / entry.strip() for entry in rest.pop("plugin.path", "").split(",") if entry.strip()
    )
    host, port = _rest_address(rest, where)
    # Connect's standalone worker has no exactly-once sources: off unless asked for.
    rest.setdefault(workerconfig.EXACTLY_ONCE_SOURCE, "disabled")
    try:
        workerconfig.check(rest)
    except ConfigException as exc:
        raise StandaloneConfigError(f"{where}: {exc}") from None
    return StandaloneWorker(
        bootstrap_servers=bootstrap,
        offsets_file=cwd / offsets,
        offset_flush_interval_ms=int(raw_interval),
        plugin_path=plugin_path,
        rest_host=host,
        rest_port=port,
        worker_config=rest,
    )


def _rest_address(rest: dict[str, str], where: str) -> tuple[str, int]:
    """The REST API's host and port: the first of ``listeners``, else ``rest.host.name`` and
    ``rest.port`` (removed from Connect in 4.0, still in older files), else 127.0.0.1:8083."""
    listeners = rest.pop("listeners", "").strip()
    host_name = rest.pop("rest.host.name", "").strip()
    raw_port = rest.pop("rest.port", "").strip()
    if listeners:
        if host_name or raw_port:
            raise StandaloneConfigError(
                f"{where}: listeners: set, and so is rest.host.name or rest.port: name the "
                "address once, with listeners"
            )
        first = listeners.split(",")[0].strip()
        url = urlsplit(first)
        if url.scheme.lower() != "http":
            raise StandaloneConfigError(
                f"{where}: listeners: {first!r}: only http:// is served here; the REST API's "
                "TLS is HEADRACE_TLS_CERT and HEADRACE_TLS_KEY"
            )
        try:
            port = url.port if url.port is not None else DEFAULT_PORT
        except ValueError:
            raise StandaloneConfigError(
                f"{where}: listeners: {first!r} has no valid port"
            ) from None
        return url.hostname or UNNAMED_HOST, port
    if raw_port and not (raw_port.isdecimal() and 0 < int(raw_port) < 65536):
        raise StandaloneConfigError(f"{where}: rest.port: {raw_port!r} is not a port")
    return host_name or UNNAMED_HOST, int(raw_port) if raw_port else DEFAULT_PORT


def read_connector(path: Path) -> ConnectorFile:
    """The connector config file at ``path``: JSON (a flat object of strings, or a create
    request), else properties; StandaloneConfigError naming the file and what is wrong."""
    return connector_from(_read(path), str(path))


def connector_from(text: str, where: str) -> ConnectorFile:
    try:
        document: Any = json.loads(text)
    except json.JSONDecodeError:
        document = None
    if isinstance(document, dict) and isinstance(document.get("config"), dict):
        return _create_request(document, where)
    if isinstance(document, dict):
        return _named(_strings(document, where), where)
    if document is not None:
        raise StandaloneConfigError(f"{where}: a JSON connector config is an object")
    return _named(parse_properties(text), where)


def _create_request(document: dict[str, Any], where: str) -> ConnectorFile:
    unknown = sorted(set(document) - {"name", "config", "initial_state"})
    if unknown:
        raise StandaloneConfigError(
            f"{where}: {', '.join(unknown)}: not a field of a create request (name, config, "
            "initial_state)"
        )
    name = document.get("name")
    if not isinstance(name, str) or not name.strip():
        raise StandaloneConfigError(f"{where}: name: required, a string")
    config = _strings(document["config"], where)
    if config.setdefault("name", name) != name:
        raise StandaloneConfigError(
            f"{where}: name: {config['name']!r} in config is not {name!r}, the request's name"
        )
    state = document.get("initial_state")
    if state is not None and (not isinstance(state, str) or state.upper() not in INITIAL_STATES):
        raise StandaloneConfigError(
            f"{where}: initial_state: {state!r} is not one of {', '.join(INITIAL_STATES)}"
        )
    return ConnectorFile(name, config, state.upper() if state is not None else None)


def _strings(values: dict[str, Any], where: str) -> dict[str, str]:
    """A JSON object's values as a config's strings; numbers and booleans as Connect's JSON
    reader turns them into strings, anything else refused naming the key."""
    out = {}
    for key, value in values.items():
        if isinstance(value, bool):
            out[key] = "true" if value else "false"
        elif isinstance(value, str | int | float):
            out[key] = str(value)
        else:
            raise StandaloneConfigError(f"{where}: {key}: a config value is a string")
    return out


def _named(config: dict[str, str], where: str) -> ConnectorFile:
    name = config.get("name", "").strip()
    if not name:
        raise StandaloneConfigError(f"{where}: name: required, the connector's name")
    return ConnectorFile(name, config)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise StandaloneConfigError(f"{path}: cannot be read: {exc}") from None
