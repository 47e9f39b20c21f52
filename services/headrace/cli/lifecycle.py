"""``headrace pause|resume|stop|restart``: a connector's target state, and restarts of it and its
tasks. Each changes what is desired; with ``--wait`` the command also watches the status the
workers report until it matches."""

from __future__ import annotations

from collections.abc import Callable

import click

from headrace.cli.context import Failures, KindGroup, address_option, client, wait_options
from headrace.cli.waiting import RUNNING, Wait, for_connector, task_check, wait_or_fail
from headrace.clients.config import ConfigClient, ConnectorStatus
from headrace.core.model.structs import State, Target


def _target_verb(
    verb: str, done: str, goal: str, call: Callable[[ConfigClient, str], None], about: str
) -> click.Group:
    """``<verb> connector NAME...``: one call per connector, then optionally a wait for ``goal``."""

    @click.group(verb, cls=KindGroup, help=about)
    def group() -> None:
        pass

    @group.command("connector", help=f"{about}\n\nWith --wait, waits until {goal}.")
    @click.argument("names", nargs=-1, required=True)
    @wait_options(f"each connector and its tasks are {goal}")
    @address_option
    def connector(names: tuple[str, ...], wait: bool, timeout: float) -> None:
        failures = Failures()
        changed = []
        with client() as c:
            for name in names:
                with failures.each(f"connector/{name}"):
                    call(c, name)
                    changed.append(name)
                    click.echo(f"connector/{name} {done}")
            if wait and changed:
                wait_or_fail([for_connector(c, n, goal) for n in changed], timeout)
        failures.exit_if_any()

    return group


pause = _target_verb(
    "pause",
    done="paused",
    goal=Target.PAUSED.value,
    call=ConfigClient.pause,
    about="Pause connectors: no record moves; they stay paused across restarts until resumed.",
)
resume = _target_verb(
    "resume",
    done="resumed",
    goal=RUNNING,
    call=ConfigClient.resume,
    about="Resume paused or stopped connectors.",
)
stop = _target_verb(
    "stop",
    done="stopped",
    goal=Target.STOPPED.value,
    call=ConfigClient.stop,
    about="Stop connectors (KIP-875): they shut down and their tasks are removed; "
    "the config is kept.",
)


def restarted_units(status: ConnectorStatus) -> list[str]:
    """The units a restart's answer shows RESTARTING."""
    restarting = State.RESTARTING
    units = ["connector"] if status.connector.state == restarting else []
    return units + [f"task {t.task}" for t in status.tasks if t.state == restarting]


@click.group(cls=KindGroup)
def restart() -> None:
    """Restart a connector (and its tasks), or one task."""


@restart.command("connector")
@click.argument("names", nargs=-1, required=True)
@click.option(
    "--include-tasks", is_flag=True, help="Restart its tasks too (Connect's includeTasks)."
)
@click.option("--only-failed", is_flag=True, help="Only the FAILED ones (Connect's onlyFailed).")
@wait_options("each connector and its tasks are RUNNING")
@address_option
def restart_connector(
    names: tuple[str, ...], include_tasks: bool, only_failed: bool, wait: bool, timeout: float
) -> None:
    """Restart the connectors NAMES; print which units restart.

    A wait may end at once when the status still shows the units RUNNING from before the
    restart: the status carries nothing that tells one run from the next."""
    failures = Failures()
    waits: list[Wait] = []
    with client() as c:
        for name in names:
            with failures.each(f"connector/{name}"):
                answer = c.restart(name, include_tasks=include_tasks, only_failed=only_failed)
                units = restarted_units(answer)
                said = f"restarting {', '.join(units)}" if units else "has nothing to restart"
                click.echo(f"connector/{name} {said}")
                waits.append(for_connector(c, name, RUNNING))
        if wait and waits:
            wait_or_fail(waits, timeout)
    failures.exit_if_any()


@restart.command("task")
@click.argument("name")
@click.argument("task", type=int)
@wait_options("the task is RUNNING")
@address_option
def restart_task(name: str, task: int, wait: bool, timeout: float) -> None:
    """Restart task TASK of connector NAME."""
    with client() as c:
        c.restart_task(name, task)
        click.echo(f"connector/{name} task {task} restarting")
        if wait:
            key = f"connector/{name} task {task}"
            wait_or_fail([Wait(key, RUNNING, task_check(c, name, task, RUNNING))], timeout)
