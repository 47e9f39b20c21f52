"""``headrace get`` and ``headrace describe``: what the config service holds and what the
workers report, as tables for people or Kafka Connect's JSON for scripts."""

from __future__ import annotations

import click
import grpc

from headrace.cli import offsets, plugins
from headrace.cli.context import (
    Failures,
    KindGroup,
    address_option,
    client,
    emit,
    output_option,
)
from headrace.cli.output import connectors_table, describe_text, tasks_table
from headrace.cli.shapes import describe_json, expanded_json, status_json, unit_json
from headrace.clients.config import ConfigClient, ConnectorInfo, ConnectorStatus
from headrace.clients.errors import is_not_found

Found = tuple[ConnectorInfo, ConnectorStatus]


@click.group(cls=KindGroup)
def get() -> None:
    """Show connectors, their tasks, plugins or offsets (kubectl's get)."""


def _found(c: ConfigClient, name: str, named: bool) -> Found | None:
    """A connector's info and status; None for one deleted since it was listed (only a
    connector the user named is an error when missing)."""
    try:
        return c.get(name), c.status(name)
    except grpc.RpcError as exc:
        if not named and is_not_found(exc):
            return None
        raise


@get.command("connectors")
@click.argument("names", nargs=-1)
@output_option("name")
@address_option
def get_connectors(names: tuple[str, ...], output: str) -> None:
    """Every connector, or those NAMES: type, state, running tasks, plugin version, worker.

    -o json prints Connect's GET /connectors?expand=info&expand=status; -o name prints
    connector/NAME lines for other commands to take."""
    failures = Failures()
    found: list[Found] = []
    with client() as c:
        for name in names or c.names():
            with failures.each(f"connector/{name}"):
                pair = _found(c, name, named=bool(names))
                if pair is not None:
                    found.append(pair)
    listing = expanded_json(found)
    if output == "name":
        click.echo("".join(f"connector/{name}\n" for name in listing), nl=False)
    elif not listing and output == "table":
        click.echo("No connectors found.", err=True)
    else:
        emit(listing, output, lambda width: connectors_table(listing, width))
    failures.exit_if_any()


@get.command("tasks")
@click.argument("name")
@click.argument("ids", nargs=-1, type=int)
@output_option()
@address_option
def get_tasks(name: str, ids: tuple[int, ...], output: str) -> None:
    """The tasks of connector NAME, or those IDS: state, worker, version, and what failed them.

    -o json prints a list of Connect's task status (GET .../tasks/{id}/status)."""
    failures = Failures()
    with client() as c:
        if ids:
            tasks = []
            for task in ids:
                with failures.each(f"connector/{name} task {task}"):
                    tasks.append(unit_json(c.task_status(name, task)))
        else:
            tasks = status_json(c.status(name))["tasks"]
    if not tasks and output == "table":
        if not ids:  # tasks asked for by id and not found are errors shown already
            click.echo(f"connector/{name} has no tasks.", err=True)
    else:
        emit(tasks, output, lambda width: tasks_table(tasks, width))
    failures.exit_if_any()


@get.command("plugins")
@click.option("--all", "everything", is_flag=True, help="Also converters, transforms, predicates.")
@output_option()
@address_option
def get_plugins(everything: bool, output: str) -> None:
    """Every installed connector plugin version (Connect's GET /connector-plugins)."""
    plugins.show_plugins(everything, output)


@get.command("offsets")
@click.argument("name")
@output_option()
@address_option
def get_offsets(name: str, output: str) -> None:
    """The offsets of connector NAME (Connect's GET /connectors/NAME/offsets)."""
    offsets.show_offsets(name, output)


@click.group(cls=KindGroup)
def describe() -> None:
    """Show one connector in full (kubectl's describe)."""


@describe.command("connector")
@click.argument("name")
@output_option()
@address_option
def describe_connector(name: str, output: str) -> None:
    """Connector NAME: its config, target state, the status of it and each task (worker,
    version, trace) and its offsets.

    -o json prints {"info", "target_state", "status", "offsets"}: Connect's shapes for each."""
    with client() as c:
        described = describe_json(c.get(name), c.status(name), c.offsets(name))
    emit(described, output, lambda width: describe_text(described, width))
