"""The operator's bounds on what a Java connector's config names, applied before its JVM sees it.

headrace's own connectors resolve every path their config names through the file roots
(``sdk.paths``) and check every address through the address guard (``sdk.network``); Kafka
Connect's connectors run unchanged and do neither. So the keys Connect's common connectors read
as a file or as a place to connect to are checked here, by name, for every Java connector:

- ``file`` (FileStreamSource, FileStreamSink): a path inside the file roots; the JVM gets it
  resolved, absolute;
- ``connection.url`` (JDBC sources and sinks): a URL, ``jdbc:`` ones too, whose host may be
  reached;
- ``database.hostname``, ``hostname`` (Debezium's): a host that may be reached;
- ``bootstrap.servers`` under any prefix (MirrorMaker's clusters): each ``host:port``'s host.

A key that breaks a bound is refused with the reason, at validation and when a unit starts. An
empty ``file`` is FileStreamSource's standard input and FileStreamSink's standard output: the
plugin process's own, which reach no file.
"""

from __future__ import annotations

from collections.abc import Mapping

from headrace.sdk.errors import ConfigException
from headrace.sdk.network import safe_url, unsafe_host
from headrace.sdk.paths import Paths

FILE_KEYS = ("file",)
URL_KEYS = ("connection.url",)
HOST_KEYS = ("database.hostname", "hostname")
SERVERS_KEY = "bootstrap.servers"


def problems(config: Mapping[str, str], paths: Paths) -> dict[str, str]:
    """What is wrong with each guarded key of ``config``, by key (empty when nothing)."""
    found = {}
    for key, value in sorted(config.items()):
        try:
            _check(key, value, paths)
        except ConfigException as exc:
            found[key] = str(exc)
    return found


def checked(config: Mapping[str, str], paths: Paths) -> dict[str, str]:
    """``config`` with its guarded keys checked and its ``file`` resolved (absolute); the first
    key's ConfigException when one breaks a bound."""
    for key, message in problems(config, paths).items():
        raise ConfigException(message if message.startswith(key) else f"{key}: {message}")
    out = dict(config)
    for key in FILE_KEYS:
        if out.get(key, "").strip():
            out[key] = str(paths.resolve(out[key], key))
    return out


def _check(key: str, value: str, paths: Paths) -> None:
    if key in FILE_KEYS and value.strip():
        paths.resolve(value, key)
    elif key in URL_KEYS and value.strip():
        safe_url(key, value)
    elif key in HOST_KEYS and value.strip():
        _reachable(key, value.strip())
    elif (key == SERVERS_KEY or key.endswith("." + SERVERS_KEY)) and value.strip():
        for server in (s.strip() for s in value.split(",") if s.strip()):
            host = server.rpartition(":")[0] if ":" in server.strip("[]") else server
            _reachable(key, host or server)


def _reachable(key: str, host: str) -> None:
    reason = unsafe_host(host)
    if reason is not None:
        raise ConfigException(f"Invalid value {host} for configuration {key}: {reason}")
