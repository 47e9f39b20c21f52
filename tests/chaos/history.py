"""The run's history: every operation, fault and note, one JSON object per line, in the order
they happened, with the wall-clock time in milliseconds (``at_ms``), the clock the recording
plugin's lines carry too."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


class History:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        path.parent.mkdir(parents=True, exist_ok=True)

    def write(self, type_: str, **fields: Any) -> None:
        entry = {"at_ms": time.time_ns() // 1_000_000, "type": type_, **fields}
        line = json.dumps(entry, default=str) + "\n"
        with self._lock, self.path.open("a") as out:
            out.write(line)

    def entries(self) -> list[dict[str, Any]]:
        """Every entry so far (read under the writers' lock: a line is never read half written)."""
        with self._lock:
            text = self.path.read_text()
        return [json.loads(line) for line in text.splitlines() if line.strip()]


class Repeating:
    """Calls ``step`` in a thread of its own, each ``pause()`` seconds, until stopped (the
    step under way then ends first)."""

    def __init__(self, name: str, step: Callable[[], None], pause: Callable[[], float]) -> None:
        self._step = step
        self._pause = pause
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stopping.wait(self._pause()):
            self._step()
