"""Helpers for tests that watch real processes: waiting on a condition, reading JSON logs."""

from __future__ import annotations

import asyncio
import inspect
import json
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar, overload

from headrace.core.plugins import read_manifest
from headrace.core.settings import BUILTIN_PLUGINS
from headrace.runtime.loader import load_module

T = TypeVar("T")


class Deadline:
    """How long a wait may take, and the failure that names what was awaited: every wait in the
    suite polls a condition under one of these, never a fixed sleep."""

    def __init__(self, what: str, seconds: float) -> None:
        self.what = what
        self.seconds = seconds
        self._end = time.monotonic() + seconds

    def remaining(self) -> float:
        return max(0.0, self._end - time.monotonic())

    def check(self, last: Any = None) -> None:
        """Fails the test once the deadline has passed, saying what was last seen."""
        if time.monotonic() > self._end:
            raise AssertionError(
                f"timed out after {self.seconds}s waiting for {self.what}; last saw {last!r}"
            )


def wait_for(what: str, check: Callable[[], T | None], timeout: float = 90.0) -> T:
    """The first truthy result of ``check``, polled until the deadline."""
    deadline = Deadline(what, timeout)
    while not (last := check()):
        deadline.check(last)
        time.sleep(0.2)
    return last


@overload
async def eventually(
    what: str, check: Callable[[], Awaitable[T | None]], within: float = ...
) -> T: ...
@overload
async def eventually(what: str, check: Callable[[], T | None], within: float = ...) -> T: ...
async def eventually(what: str, check: Callable[[], Any], within: float = 60.0) -> Any:
    """:func:`wait_for` for a test on the event loop; ``check`` may be a coroutine function."""
    deadline = Deadline(what, within)
    while True:
        found = check()
        last = await found if inspect.isawaitable(found) else found
        if last:
            return last
        deadline.check(last)
        await asyncio.sleep(0.05)


def json_lines(path: Path) -> list[dict[str, Any]]:
    """The JSON objects of a JSON-lines file, none when it does not exist yet."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def log_events(log_dir: Path, event: str, **fields: Any) -> list[dict[str, Any]]:
    """Every JSON log line under ``log_dir`` with this event and these field values."""
    found = []
    for path in sorted(log_dir.glob("*.log")):
        for line in path.read_text(errors="replace").splitlines():
            if f'"{event}"' not in line:
                continue
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                continue
            if entry.get("event") == event and all(entry.get(k) == v for k, v in fields.items()):
                found.append(entry)
    return found


def lifecycle(folder: Path) -> list[dict[str, Any]]:
    """What the recording test plugin wrote of its lifecycle calls under ``folder``, in order."""
    return json_lines(folder / "lifecycle.jsonl")


def stops(folder: Path) -> list[tuple[str, int | None, bool]]:
    """Every ``stop`` the recording plugin saw, as (connector or task, task number, deleted),
    sorted (units stop concurrently, so their order says nothing)."""
    return sorted(
        (
            (e["unit"], e.get("task"), e["deleted"])
            for e in lifecycle(folder)
            if e["event"] == "stop"
        ),
        key=str,
    )


def install_manifest(root: Path, plugin: str, version: str, kind: str) -> None:
    """Writes a plugin version under ``root`` as the config service reads it: a manifest and an
    empty module (discovery never imports plugin code)."""
    folder = root / plugin / version
    folder.mkdir(parents=True)
    manifest = {"class": f"com.example.{plugin}Connector", "version": version, "type": kind}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    (folder / "com").mkdir()
    (folder / "com" / "example.py").write_text("")


def builtin_plugin_module(plugin: str, version: str) -> ModuleType:
    """A built-in plugin's module, loaded the way the plugin host loads it."""
    return load_module(read_manifest(BUILTIN_PLUGINS / plugin / version / "manifest.json"))
