"""``--wait``: polling the config service until connectors reach the state asked for (RUNNING,
PAUSED, STOPPED, or gone), under one deadline, with a single progress line on stderr.

What counts as reached is a pure function of Connect's status JSON (:func:`connector_progress`),
and so is the poll loop (:func:`wait_all`, given its clock and sleep); only :func:`wait_or_fail`
and the checks talk to the service and the terminal.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import click
import grpc
from rich.console import Console
from rich.text import Text

from headrace.cli.context import CliError
from headrace.cli.output import trace_headline
from headrace.cli.shapes import status_json, unit_json
from headrace.clients.config import ConfigClient
from headrace.clients.errors import rpc_code
from headrace.core.model.structs import State

GONE = "gone"  # what ``delete --wait`` waits for
RUNNING = State.RUNNING.value

FIRST_INTERVAL = 0.2  # seconds between polls, growing to MAX_INTERVAL: quick for a fast change,
MAX_INTERVAL = 2.0  # gentle on the service for a slow one


@dataclass(frozen=True)
class Progress:
    """How far one connector (or task) is: whether it is there, and one line saying where."""

    done: bool
    line: str


def _unit(unit: Mapping[str, Any]) -> str:
    text = str(unit["state"])
    if unit.get("worker_id"):
        text += f" on {unit['worker_id']}"
    if unit.get("trace"):
        text += f": {trace_headline(unit['trace'])}"
    return text


def connector_progress(goal: str, status: Mapping[str, Any] | None) -> Progress:
    """Whether the connector and every task is in ``goal`` (None: there is no such connector).
    RUNNING also needs a task: right after a create the connector runs before its tasks exist."""
    if goal == GONE:
        if status is None:
            return Progress(True, "deleted")
        return Progress(False, f"still there, connector {status['connector']['state']}")
    if status is None:
        return Progress(False, "does not exist")
    connector, tasks = status["connector"], status["tasks"]
    there = sum(1 for t in tasks if t["state"] == goal)
    behind = [f"task {t['id']} {_unit(t)}" for t in tasks if t["state"] != goal]
    if goal == RUNNING and not tasks:
        behind.append("no tasks yet")
    line = "; ".join([f"connector {_unit(connector)}, {there}/{len(tasks)} tasks {goal}", *behind])
    return Progress(connector["state"] == goal and not behind, line)


def task_progress(goal: str, task: Mapping[str, Any] | None) -> Progress:
    """Whether one task is in ``goal`` (None: there is no such task)."""
    if task is None:
        return Progress(False, "does not exist")
    return Progress(task["state"] == goal, _unit(task))


def wait_all(
    checks: Mapping[str, Callable[[], Progress]],
    timeout: float,
    show: Callable[[str], None],
    *,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, Progress]:
    """Polls every check until each is done or ``timeout`` seconds have passed; the last
    progress of each. ``show`` gets one line per round about the first one still waited on."""
    deadline = clock() + timeout
    last: dict[str, Progress] = {}
    pending = dict(checks)
    interval = FIRST_INTERVAL
    while True:
        for key, check in list(pending.items()):
            last[key] = check()
            if last[key].done:
                del pending[key]
        if not pending or clock() >= deadline:
            return last
        key = next(iter(pending))
        done = len(checks) - len(pending)
        show(f"waiting for {key} ({done}/{len(checks)} done): {last[key].line}")
        sleep(max(0.0, min(interval, deadline - clock())))
        interval = min(interval * 1.5, MAX_INTERVAL)


def one_line(line: str, width: int) -> str:
    """``line`` cut to ``width`` columns: a progress line that wrapped would scroll instead of
    being redrawn in place."""
    return line if len(line) <= width else line[: max(0, width - 1)] + "…"


def _polled(read: Callable[[], Progress]) -> Callable[[], Progress]:
    """A check that treats an unreachable service as not there yet: a wait outlives a restart
    of the config service."""

    def check() -> Progress:
        try:
            return read()
        except grpc.RpcError as exc:
            if rpc_code(exc) != grpc.StatusCode.UNAVAILABLE:
                raise
            return Progress(False, "the config service is unavailable")

    return check


def connector_check(client: ConfigClient, name: str, goal: str) -> Callable[[], Progress]:
    def read() -> Progress:
        found = client.find_status(name)
        return connector_progress(goal, None if found is None else status_json(found))

    return _polled(read)


def task_check(client: ConfigClient, name: str, task: int, goal: str) -> Callable[[], Progress]:
    def read() -> Progress:
        status = client.find_status(name)
        units = [] if status is None else [t for t in status.tasks if t.task == task]
        return task_progress(goal, unit_json(units[0]) if units else None)

    return _polled(read)


@dataclass(frozen=True)
class Wait:
    """One thing a command waits for: what it is (``connector/NAME``), the state, the check."""

    key: str
    goal: str
    check: Callable[[], Progress]


def for_connector(client: ConfigClient, name: str, goal: str) -> Wait:
    return Wait(f"connector/{name}", goal, connector_check(client, name, goal))


def wait_or_fail(waits: Sequence[Wait], timeout: float) -> None:
    """Waits for every one, with a progress line on stderr; prints where each ended up, and
    fails naming each that did not get to its state in time, and where it is instead."""
    goals = {w.key: w.goal for w in waits}
    console = Console(stderr=True)
    with console.status("waiting") as spinner:
        checks = {w.key: w.check for w in waits}

        def show(line: str) -> None:
            # Text, not markup: a trace may hold brackets. The spinner and a space take two.
            spinner.update(Text(one_line(line, console.width - 2)))

        last = wait_all(checks, timeout, show)
    for key, progress in last.items():
        if progress.done:
            click.echo(f"{key}: {progress.line}")
    late = [
        f"{key} is not {goals[key]} after {timeout:g}s: {p.line}"
        for key, p in last.items()
        if not p.done
    ]
    if late:
        raise CliError("\n".join(late))
