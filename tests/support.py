"""Helpers for tests that watch real processes: waiting on a condition, reading JSON logs."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from headrace.core.plugins import read_manifest
from headrace.core.settings import BUILTIN_PLUGINS
from headrace.runtime.loader import load_module


def wait_for(what: str, check: Callable[[], Any], timeout: float = 90.0) -> Any:
    """Polls ``check`` until it returns something truthy; fails naming ``what`` at the deadline."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}; last saw {last!r}")


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
