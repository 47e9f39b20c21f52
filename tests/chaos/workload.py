"""What runs while the nemesis strikes: the pipelines whose output is checked, and connectors
created, reconfigured, paused, resumed and deleted throughout (the churn), all through the REST
API as Connect's own tools drive it.

- ``feed``: datagen (exactly once) into ``chaos-feed``, which ``audit`` (the recording sink)
  reads at least once, and which every churn connector (recording sinks too) reads.
- ``rows``: datagen (exactly once) into ``chaos-rows``, which ``delta`` and ``jdbc`` write
  exactly once and ``parquet`` at least once, through the executor.
- ``lines``: the file source over a file the runner keeps appending to, into ``chaos-lines``,
  which ``lines-out`` (the file sink) writes to another file.
"""

from __future__ import annotations

import random
import time
import urllib.error
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.chaos.history import History, Repeating
from tests.postgres import Postgres
from tests.support import Rest

FEED, ROWS, LINES = "chaos-feed", "chaos-rows", "chaos-lines"
TOPICS = {FEED: 3, ROWS: 2, LINES: 1}
GENERATOR_TASKS = 2
RECORDING = "recording_sink.RecordingSinkConnector"
AUTO_RESTART = {
    "auto.restart.enable": "true",
    "auto.restart.backoff.ms": "500",
    "auto.restart.max.attempts": "100",
}
SOURCES = ("feed", "rows", "lines")
EXACTLY_ONCE_SINKS = ("delta", "jdbc")
MOST_CHURN = 4  # churn connectors alive at once, at most
REST_TIMEOUT_S = 10.0


def generator(topic: str) -> dict[str, str]:
    return {
        "connector.class": "DatagenSource",
        "tasks.max": str(GENERATOR_TASKS),
        "topic": topic,
        "batch.size": "5",
        "interval.ms": "100",
        "exactly.once.support": "required",
        **AUTO_RESTART,
    }


def pipelines(outputs: Path, postgres: Postgres) -> dict[str, dict[str, str]]:
    """Every checked pipeline's connectors, by name: sinks first, so no record comes before
    its sink's group exists (they read from the earliest offset anyway)."""

    def executor_sink(cls: str, where: dict[str, str]) -> dict[str, str]:
        return {
            "connector.class": cls,
            "tasks.max": "2",
            "topics": ROWS,
            "flush.max.records": "100",
            "offset.flush.interval.ms": "500",
            **where,
            **AUTO_RESTART,
        }

    return {
        "audit": {
            "connector.class": RECORDING,
            "tasks.max": "2",
            "topics": FEED,
            "path": str(outputs / "audit"),
            **AUTO_RESTART,
        },
        "delta": executor_sink(
            "headrace_delta.DeltaSinkConnector", {"path": str(outputs / "delta")}
        ),
        "jdbc": executor_sink(
            "headrace_jdbc.JdbcSinkConnector",
            {"connection.url": postgres.jdbc_url, "table.name.format": "chaos_rows"},
        ),
        "parquet": executor_sink(
            "headrace_parquet.ParquetSinkConnector", {"path": str(outputs / "parquet")}
        ),
        "lines-out": {
            "connector.class": "headrace_file_sink.FileStreamSinkConnector",
            "tasks.max": "1",
            "topics": LINES,
            "file": str(outputs / "lines-out.txt"),
            **AUTO_RESTART,
        },
        "feed": generator(FEED),
        "rows": generator(ROWS),
        "lines": {
            "connector.class": "headrace_file_source.FileStreamSourceConnector",
            "tasks.max": "1",
            "topic": LINES,
            "file": str(outputs / "lines.txt"),
            "batch.size": "50",
            **AUTO_RESTART,
        },
    }


class Api:
    """The REST calls the runner makes; each is written to the history with its outcome:
    ``ok``, ``refused`` (an HTTP error: not applied) or ``unknown`` (no answer: it may have
    been applied)."""

    def __init__(self, rest_addr: str, history: History) -> None:
        self._rest = Rest(f"http://{rest_addr}")
        self._history = history

    def call(self, op: str, method: str, path: str, body: Any = None, **fields: Any) -> Any:
        began = time.time_ns() // 1_000_000
        try:
            status, answer = self._rest(method, path, body, timeout=REST_TIMEOUT_S)
        except (urllib.error.URLError, OSError) as error:
            self._history.write(
                "op", op=op, outcome="unknown", began_ms=began, error=str(error), **fields
            )
            return None
        outcome = "ok" if status < 300 else "refused"
        entry = {"status": status} if status < 300 else {"status": status, "error": answer}
        self._history.write("op", op=op, outcome=outcome, began_ms=began, **entry, **fields)
        if status >= 300:
            return None
        return True if answer is None else answer  # 202 and 204 answer nothing

    def read(self, path: str) -> Any:
        """A GET not worth a line in the history; None when it fails."""
        try:
            status, answer = self._rest("GET", path, timeout=REST_TIMEOUT_S)
        except (urllib.error.URLError, OSError):
            return None
        return answer if status < 300 else None


@dataclass
class Churn:
    """Connectors made and unmade at random: each a recording sink of its own name and folder
    (names are never reused, so each one's lifecycle log is its alone)."""

    api: Api
    outputs: Path
    rng: random.Random
    made: int = 0
    alive: dict[str, str] = field(default_factory=dict)  # name -> "running" or "paused"
    deleted: list[str] = field(default_factory=list)  # every name a delete was sent for

    def folder(self, name: str) -> Path:
        return self.outputs / "churn" / name

    def config(self, name: str, tasks: int) -> dict[str, str]:
        return {
            "connector.class": RECORDING,
            "tasks.max": str(tasks),
            "topics": FEED,
            "path": str(self.folder(name)),
        }

    def step(self) -> None:
        choices = ["create"] if len(self.alive) < MOST_CHURN else []
        if self.alive:
            choices += ["reconfigure", "pause", "resume", "delete", "delete"]
        op = self.rng.choice(choices)
        if op == "create":
            self.made += 1
            name = f"churn-{self.made}"
            config = self.config(name, self.rng.randint(1, 3))
            self.api.call(
                "create",
                "POST",
                "/connectors",
                {"name": name, "config": config},
                connector=name,
                tasks=config["tasks.max"],
            )
            self.alive[name] = "running"  # or perhaps: a later delete settles it either way
            return
        name = self.rng.choice(sorted(self.alive))
        if op == "reconfigure":
            tasks = self.rng.randint(1, 3)
            self.api.call(
                "reconfigure",
                "PUT",
                f"/connectors/{name}/config",
                self.config(name, tasks),
                connector=name,
                tasks=tasks,
            )
        elif op in ("pause", "resume"):
            self.api.call(op, "PUT", f"/connectors/{name}/{op}", connector=name)
        else:
            self.delete(name)

    def delete(self, name: str) -> None:
        # What was stored just before: what the deletion applies to (the checker's
        # ``stored_task_counts``); None when the read failed.
        tasks = self.api.read(f"/connectors/{name}/tasks")
        stored = {"stored_tasks": len(tasks)} if isinstance(tasks, list) else {}
        self.api.call("delete", "DELETE", f"/connectors/{name}", connector=name, **stored)
        self.alive.pop(name, None)
        self.deleted.append(name)


class Appender:
    """Appends numbered lines to the file source's file, a few at a time, until stopped."""

    def __init__(
        self, path: Path, history: History, every_s: float = 0.2, per_step: int = 5
    ) -> None:
        self.path = path
        self.written = 0
        self._history = history
        self._per_step = per_step
        self._repeating = Repeating("appender", self._append, lambda: every_s)

    def start(self) -> None:
        self._repeating.start()

    def stop(self) -> None:
        self._repeating.stop()
        self._history.write("note", what="lines appended", lines=self.written)

    def _append(self) -> None:
        lines = range(self.written, self.written + self._per_step)
        with self.path.open("a") as out:
            out.write("".join(f"line-{n}\n" for n in lines))
        self.written += self._per_step
