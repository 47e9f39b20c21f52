"""structlog set-up: one JSON object per line, with the service and its context bound.

Every line, the service's own and its libraries', has the secrets this process holds hidden
(``headrace.core.security.secrets``).

Events are static names with fields (``log.info("task_started", connector=..., task=...)``).
Their level is the ``headrace`` logger's in the stdlib logging tree, read at each event, so that
changing it at run time (Kafka Connect's ``/admin/loggers``) takes effect at once, as it does for
the libraries' own loggers (``aiokafka``, ``grpc``...).
"""

from __future__ import annotations

import logging
import re
import sys
import time
from collections.abc import Collection, Mapping
from typing import Any, TextIO

import structlog
from aiokafka.protocol.struct import Struct

from headrace.core.security import secrets

OWN = "headrace"
"""The stdlib logger whose level the service's own events follow."""

# Connect's level names, to the stdlib's.
LEVELS = {
    "TRACE": logging.DEBUG,
    "DEBUG": logging.DEBUG,
    "INFO": logging.INFO,
    "WARN": logging.WARNING,
    "WARNING": logging.WARNING,
    "ERROR": logging.ERROR,
    "FATAL": logging.CRITICAL,
    "OFF": logging.CRITICAL + 10,
}


def log4j_name(level: str) -> str:
    """A level as Connect and log4j name it (``WARNING`` is ``WARN``): how the cluster's levels
    are recorded, since JVMs (a Java plugin's, Spark's) apply them too."""
    upper = level.strip().upper()
    return "WARN" if upper == "WARNING" else upper


_NAMES = {
    logging.DEBUG: "DEBUG",
    logging.INFO: "INFO",
    logging.WARNING: "WARN",
    logging.ERROR: "ERROR",
    logging.CRITICAL: "FATAL",
    logging.CRITICAL + 10: "OFF",
}
_modified: dict[str, int] = {}  # logger name -> when its level was last set, in ms


def _by_own_level(_: Any, method: str, event: dict[str, Any]) -> dict[str, Any]:
    level = logging.getLevelNamesMapping().get(method.upper(), logging.INFO)
    if level < logging.getLogger(OWN).getEffectiveLevel():
        raise structlog.DropEvent
    return event


def configure(
    service: str, stream: TextIO | None = None, level: str = "INFO", **bound: Any
) -> None:
    """Routes structlog (and the stdlib loggers of our libraries) to JSON lines on ``stream``."""
    out = stream or sys.stderr
    processors: list[Any] = [
        _by_own_level,
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.format_exc_info,
        secrets.log_processor,  # the secrets this process holds never reach its log
        structlog.processors.JSONRenderer(),
        secrets.rendered_processor,
    ]
    structlog.configure(
        processors=processors,
        wrapper_class=structlog.make_filtering_bound_logger(logging.DEBUG),
        logger_factory=structlog.PrintLoggerFactory(out),
        cache_logger_on_first_use=False,
    )
    structlog.contextvars.clear_contextvars()
    structlog.contextvars.bind_contextvars(service=service, **bound)
    handler = logging.StreamHandler(out)
    handler.addFilter(without_payloads)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                secrets.log_processor,
                structlog.processors.JSONRenderer(),
                secrets.rendered_processor,
            ],
            foreign_pre_chain=[
                structlog.contextvars.merge_contextvars,
                structlog.processors.add_log_level,
                structlog.processors.TimeStamper(fmt="iso", utc=True),
                structlog.stdlib.add_logger_name,
            ],
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)
    logging.getLogger(OWN).setLevel(level)


PROTOCOL_LOGGERS = ("aiokafka",)
"""The loggers of the Kafka client's wire protocol: at DEBUG they write every request and
answer they send, a produce request's records and a SASL login's bytes among them."""


def without_payloads(record: logging.LogRecord) -> bool:
    """A log record of the Kafka client with what it would write of a protocol message (a
    request or answer, bytes) replaced by its kind: a level set for the whole cluster, DEBUG
    on ``aiokafka`` say, never writes records or a login's password to every process's log."""
    if record.name.startswith(PROTOCOL_LOGGERS) and record.args:
        args = record.args if isinstance(record.args, tuple) else (record.args,)
        record.args = tuple(_kind_only(a) for a in args)
    return True


def _kind_only(value: Any) -> Any:
    if isinstance(value, Struct | bytes | bytearray | memoryview):
        return f"<{type(value).__name__}>"
    return value


MAX_LOGGER_NAME = 255
# No control character (C0, DEL, C1), no space at either end: the REST API's description says
# the same (``config/openapi.yaml``).
_LOGGER_NAME = re.compile(r"[^\x00-\x20\x7f-\x9f](?:[^\x00-\x1f\x7f-\x9f]*[^\x00-\x20\x7f-\x9f])?")
MAX_SET_LOGGERS = 256
"""Loggers whose level the API may set, at most, besides those that exist already: each one
set is kept for good (in every process, for a cluster-wide one, and sent with every
keep-alive)."""


def name_refusal(name: str) -> str | None:
    """Why no logger's level may be set by that name; None when it may."""
    if len(name) > MAX_LOGGER_NAME or _LOGGER_NAME.fullmatch(name) is None:
        return (
            f"{name[:80]!r} is not a logger's name: at most {MAX_LOGGER_NAME} characters, no "
            "control characters, no spaces at either end"
        )
    return None


def kept_refusal(name: str, kept: Collection[str]) -> str | None:
    """Why a level may not be kept for ``name`` besides those ``kept`` already: it is a new
    name, no logger has it here, and ``MAX_SET_LOGGERS`` are kept. None when it may."""
    if name in kept or exists(name) or len(kept) < MAX_SET_LOGGERS:
        return None
    return (
        f"{name}: levels are kept for {len(kept)} loggers already, the most there may be; set "
        "one of those, or a logger that exists"
    )


_asked: set[str] = set()  # the loggers whose level this process's own API set


def set_asked(name: str, level: str) -> list[str]:
    """:func:`set_level`, asked of this process alone (the REST API's ``scope=worker``):
    ValueError when ``name`` may not be set (``name_refusal``), LookupError when no more new
    names may be (``kept_refusal``)."""
    refused = name_refusal(name)
    if refused is not None:
        raise ValueError(refused)
    refused = kept_refusal(name, _asked)
    if refused is not None:
        raise LookupError(refused)
    _asked.add(name)
    return set_level(name, level)


def exists(name: str) -> bool:
    """Whether a logger of that name has been made (``root`` always has)."""
    found = logging.Logger.manager.loggerDict.get(name)
    return name == "root" or isinstance(found, logging.Logger)


def level_of(name: str) -> dict[str, Any]:
    """A logger's effective level in Connect's words, and when it was set (None: never)."""
    logger = logging.getLogger(name) if name != "root" else logging.getLogger()
    level = logger.getEffectiveLevel()
    return {
        "level": _NAMES.get(level, logging.getLevelName(level)),
        "last_modified": _modified.get(name),
    }


def levels() -> dict[str, dict[str, Any]]:
    """Every logger whose level is set, with the root's."""
    named = [
        n
        for n, lg in logging.Logger.manager.loggerDict.items()
        if isinstance(lg, logging.Logger) and lg.level
    ]
    return {name: level_of(name) for name in sorted({"root", *named})}


def set_level(name: str, level: str) -> list[str]:
    """Sets a logger's level (Connect's names); the loggers whose level it changed: the named
    one and those below it that had no level of their own."""
    value = LEVELS[level.upper()]
    logger = logging.getLogger(name) if name != "root" else logging.getLogger()
    prefix = "" if name == "root" else name + "."
    below = [
        n
        for n, lg in logging.Logger.manager.loggerDict.items()
        if isinstance(lg, logging.Logger) and n.startswith(prefix) and not lg.level
    ]
    logger.setLevel(value)
    now = int(time.time() * 1000)
    for changed in (name, *below):
        _modified[changed] = now
    return sorted({name, *below})


def get(name: str | None = None, **bound: Any) -> Any:
    """A bound structlog logger."""
    return structlog.get_logger(name).bind(**bound)


class ClusterLevels:
    """The log levels set for the whole cluster (KIP-976), as one process applies them: each
    set after the process started (``started_ms``), once, oldest first. A level set before it
    started is not its to take: it started with its own configured levels, as a Connect worker
    joining later does."""

    def __init__(self, started_ms: int | None = None) -> None:
        self.started_ms = int(time.time() * 1000) if started_ms is None else started_ms
        self.applied: dict[str, tuple[str, int]] = {}  # logger -> (level, when it was set)

    def apply(self, levels: Mapping[str, tuple[str, int]]) -> list[str]:
        """Sets what is new in ``levels`` (logger -> (level, when set, ms)); the loggers set."""
        changed = []
        for logger, (level, at_ms) in sorted(levels.items(), key=lambda item: item[1][1]):
            if at_ms < self.started_ms or self.applied.get(logger, ("", -1))[1] >= at_ms:
                continue
            if level.upper() not in LEVELS:
                continue  # a level this version does not know: the logger keeps its own
            set_level(logger, level)
            self.applied[logger] = (level.upper(), at_ms)
            changed.append(logger)
            get().info("log_level_set", logger=logger, to=level.upper(), scope="cluster")
        return changed

    def current(self) -> dict[str, str]:
        """The levels applied, by logger: what this process hands its plugin processes."""
        return {logger: level for logger, (level, _) in self.applied.items()}


def hold(levels: Mapping[str, str]) -> list[str]:
    """Sets each logger to the level given where it is not at it already (a plugin process,
    told its worker's cluster levels with every keep-alive); the loggers set."""
    changed = []
    for logger, level in sorted(levels.items()):
        value = LEVELS.get(level.upper())
        target = logging.getLogger(logger) if logger != "root" else logging.getLogger()
        if value is not None and target.level != value:
            set_level(logger, level)
            changed.append(logger)
    return changed


cluster_levels = ClusterLevels()
"""This process's: log levels are the process's, and so is when it started (about when this
module was first imported)."""
