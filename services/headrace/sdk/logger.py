"""The logger a connector or task finds on its context: ``self.context.logger``.

Events are static names with fields, as everywhere in headrace::

    self.context.logger.info("batch_written", rows=120, path=self.path)

Inside a plugin process the runtime hands over its own structured logger, bound with the
connector (and task), so a plugin's lines land in the process's JSON log next to the runtime's.
A context built without a runtime (a unit test) logs through the standard ``logging`` module.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

DEFAULT_LOGGER_NAME = "headrace.plugin"


class Logger(Protocol):
    """What a plugin may log with: an event name and keyword fields per call."""

    def debug(self, event: str, **fields: Any) -> Any: ...
    def info(self, event: str, **fields: Any) -> Any: ...
    def warning(self, event: str, **fields: Any) -> Any: ...
    def error(self, event: str, **fields: Any) -> Any: ...
    def exception(self, event: str, **fields: Any) -> Any:
        """As ``error``, with the exception being handled and its traceback."""
        ...


class StdlibLogger:
    """A :class:`Logger` on the standard ``logging`` module: ``event key=value ...`` lines."""

    def __init__(self, name: str = DEFAULT_LOGGER_NAME, **bound: Any) -> None:
        self._logger = logging.getLogger(name)
        self._bound = bound

    def debug(self, event: str, **fields: Any) -> None:
        self._log(logging.DEBUG, event, fields)

    def info(self, event: str, **fields: Any) -> None:
        self._log(logging.INFO, event, fields)

    def warning(self, event: str, **fields: Any) -> None:
        self._log(logging.WARNING, event, fields)

    def error(self, event: str, **fields: Any) -> None:
        self._log(logging.ERROR, event, fields)

    def exception(self, event: str, **fields: Any) -> None:
        self._log(logging.ERROR, event, fields, exc_info=True)

    def _log(self, level: int, event: str, fields: dict[str, Any], exc_info: bool = False) -> None:
        if not self._logger.isEnabledFor(level):
            return
        pairs = [f"{k}={v!r}" for k, v in {**self._bound, **fields}.items()]
        # stacklevel: the line that called debug/info/..., not this helper.
        self._logger.log(level, "%s", " ".join([event, *pairs]), exc_info=exc_info, stacklevel=3)
