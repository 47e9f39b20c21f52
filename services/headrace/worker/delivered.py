"""The deletions a worker has delivered, kept on disk across its restarts.

A deleted unit hears of its deletion once. The worker writes each delivery here as soon as its
plugin has returned from ``stop(deleted=True)`` (its plugin process says so before it closes the
unit's clients, and then answers the stop), before it acknowledges it to the coordinator.
Without it, an acknowledgement lost with the worker (killed, stopped, or cut off before the
message left) has the coordinator hand the deletion back to the worker when it returns, and
the plugin, started again only to hear of it, hears it twice. With it, the worker acknowledges a
deletion handed back at once, without starting the plugin.

One file per worker id in the run folder: a JSON line per delivered unit (connector, task and
incarnation), flushed to disk before the acknowledgement. It keeps the newest ``most``; when it
holds twice that, it is rewritten with those (written aside, then renamed over).

The file speaks only when the worker comes back. ``core.storage.told`` puts each delivery where
the next leading coordinator reads it without this worker: a ``told-`` record on the assignments
topic, written as the acknowledgement is sent.
"""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path

from headrace.core.model.structs import Instance, WorkUnit

REMEMBERED = 100_000


class Delivered:
    def __init__(self, path: Path, most: int = REMEMBERED) -> None:
        self._path = path
        self._most = most
        self._seen: dict[Instance, None] = {}  # insertion-ordered, oldest forgotten first
        self._lines = 0
        self._torn = False  # the file ends in a line a crash cut short
        if path.exists():
            text = path.read_text(errors="replace")
            self._torn = bool(text) and not text.endswith("\n")
            for line in text.splitlines():
                try:
                    entry = json.loads(line)
                    instance = (WorkUnit(entry["connector"], entry["task"]), entry["incarnation"])
                except (json.JSONDecodeError, KeyError, TypeError):
                    continue  # a last line cut short by a crash mid-write
                self._seen[instance] = None
                self._lines += 1
            self._trim()

    def __contains__(self, instance: Instance) -> bool:
        return instance in self._seen

    def newest(self, count: int) -> list[Instance]:
        """The ``count`` deliveries recorded last, oldest first."""
        return list(itertools.islice(reversed(self._seen), count))[::-1]

    def add(self, instance: Instance) -> None:
        """Records a delivery, on disk before it returns; one recorded already is left as it
        is (a plugin process says its plugin heard it, then the stop's answer comes)."""
        if instance in self._seen:
            return
        self._seen[instance] = None
        self._path.parent.mkdir(parents=True, exist_ok=True)
        with self._path.open("a") as out:
            out.write(("\n" if self._torn else "") + _line(instance))
            out.flush()
            os.fsync(out.fileno())
        self._torn = False
        self._lines += 1
        if self._lines >= 2 * self._most:
            self._rewrite()

    def _trim(self) -> None:
        while len(self._seen) > self._most:
            del self._seen[next(iter(self._seen))]

    def _rewrite(self) -> None:
        self._trim()
        aside = self._path.with_suffix(".tmp")
        with aside.open("w") as out:
            out.write("".join(_line(i) for i in self._seen))
            out.flush()
            os.fsync(out.fileno())
        aside.replace(self._path)
        self._lines = len(self._seen)


def _line(instance: Instance) -> str:
    unit, incarnation = instance
    return (
        json.dumps({"connector": unit.connector, "task": unit.task, "incarnation": incarnation})
        + "\n"
    )
