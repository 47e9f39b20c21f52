"""structlog set-up: one JSON object per line, with the service and its context bound.

Events are static names with fields (``log.info("task_started", connector=..., task=...)``).
"""

from __future__ import annotations

import logging
import sys
from typing import Any, TextIO

import structlog


def configure(
    service: str, stream: TextIO | None = None, level: str = "INFO", **bound: Any
) -> None:
    """Routes structlog (and the stdlib loggers of our libraries) to JSON lines on ``stream``."""
    out = stream or sys.stderr
    processors: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.format_exc_info,
        structlog.processors.JSONRenderer(),
    ]
    structlog.configure(
        processors=processors,
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level)),
        logger_factory=structlog.PrintLoggerFactory(out),
        cache_logger_on_first_use=False,
    )
    structlog.contextvars.clear_contextvars()
    structlog.contextvars.bind_contextvars(service=service, **bound)
    handler = logging.StreamHandler(out)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            processor=structlog.processors.JSONRenderer(),
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


def get(name: str | None = None, **bound: Any) -> Any:
    """A bound structlog logger."""
    return structlog.get_logger(name).bind(**bound)
