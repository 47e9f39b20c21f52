"""Secrets kept out of answers, logs and status traces.

Two kinds of secret, two ways of hiding them:

- By key: a PASSWORD-typed key of the plugin's ``ConfigDef`` is shown ``[hidden]`` wherever a
  config is answered (get, list, tasks, validate). A value made of config provider references
  alone is shown as written: ``${env:DB_PASSWORD}`` says where the secret is, not what it is.
- By value: the values a process holds that are secret (what its references resolved to, its
  connectors' PASSWORD values) are registered here, and every text it logs or reports as a
  trace has them replaced by ``[hidden]`` (``mask``; ``log_processor`` for structlog), so a
  plugin's exception message or log line that quotes one does not leak it.

The registry is per process, as its logger is; references are never hidden, and values
shorter than ``MIN_MASKED`` are not registered (masking ``1`` or ``on`` would blank every log
line, and they are no secrets).
"""

from __future__ import annotations

import ctypes
import sys
import threading
from collections.abc import Collection, Iterable, Mapping, MutableMapping
from typing import Any

from headrace.core.security import references

HIDDEN = "[hidden]"
MIN_MASKED = references.MIN_MATCHED

_lock = threading.Lock()
# Replaced, never mutated, so readers need no lock; the longest first, as ``_replaced`` wants.
_registered: frozenset[str] = frozenset()
_in_order: tuple[str, ...] = ()


def shown(value: str, secret: bool) -> str:
    """A config value as answered: a secret one hidden, unless it is references alone."""
    if not secret or references.only_references(value):
        return value
    return HIDDEN


def mask_config(config: Mapping[str, str], secret_keys: Collection[str]) -> dict[str, str]:
    """The config with the values of ``secret_keys`` hidden (see ``shown``)."""
    return {k: shown(v, k in secret_keys) for k, v in config.items()}


def mask_text(text: str, values: Iterable[str]) -> str:
    """``text`` with every one of ``values`` (the long enough ones) replaced by ``[hidden]``,
    the longest first so that one secret inside another is hidden whole."""
    return _replaced(text, sorted(_maskable(values), key=len, reverse=True))


def _replaced(text: str, longest_first: Iterable[str]) -> str:
    for value in longest_first:
        if value in text:
            text = text.replace(value, HIDDEN)
    return text


def _maskable(values: Iterable[str]) -> set[str]:
    """The values worth hiding: long enough, and not references alone (which are shown)."""
    return {v for v in values if len(v) >= MIN_MASKED and not references.only_references(v)}


def register(values: Iterable[str]) -> None:
    """Makes ``values`` masked in everything this process logs or reports from now on."""
    global _registered, _in_order
    new = _maskable(values)
    if new - _registered:
        with _lock:
            _registered = _registered | new
            _in_order = tuple(sorted(_registered, key=len, reverse=True))


def registered() -> frozenset[str]:
    return _registered


def mask(text: str) -> str:
    """``text`` with every registered value hidden."""
    return _replaced(text, _in_order)


def _masked(value: Any) -> Any:
    if isinstance(value, str):
        return mask(value)
    if isinstance(value, Mapping):
        return {k: _masked(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_masked(v) for v in value]
    return value


def log_processor(_: Any, __: str, event: MutableMapping[str, Any]) -> Mapping[str, Any]:
    """A structlog processor hiding registered values in every field of an event (place it
    after the exception is formatted, before rendering)."""
    if not _in_order:
        return event
    return {k: _masked(v) for k, v in event.items()}


def rendered_processor(_: Any, __: str, line: Any) -> Any:
    """The last structlog processor: hides registered values in the rendered line too, where
    a field that was no text (an object's repr) may have brought one."""
    return mask(line) if isinstance(line, str) else line


_PR_SET_DUMPABLE = 4


def keep_to_self() -> None:
    """Makes this process's memory, environment and open files unreadable by other processes
    of its user (``/proc/<pid>/environ``, ptrace, core dumps): a service's credentials stay its
    own, even where a plugin process it starts could not be confined. A no-op off Linux."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
