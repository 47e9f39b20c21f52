"""``headrace offsets get|alter|reset``: a connector's offsets, as KIP-875 lets an operator read
and change them (altering and resetting only while the connector is STOPPED); and
``headrace topics get|reset``: the topics it used, as KIP-558 tracks them."""

from __future__ import annotations

import click

from headrace.cli.context import address_option, client, emit, output_option
from headrace.cli.inputs import offsets_body
from headrace.cli.output import offsets_table
from headrace.cli.shapes import offsets_json
from headrace.cli.sources import read_one


def show_offsets(name: str, output: str) -> None:
    """Prints the connector's offsets (shared with ``get offsets``)."""
    with client() as c:
        found = offsets_json(c.offsets(name))
    if not found["offsets"] and output == "table":
        click.echo(f"connector/{name} has no offsets.", err=True)
    else:
        emit(found, output, lambda width: offsets_table(found, width))


@click.group()
def offsets() -> None:
    """Read, alter or reset a connector's offsets (KIP-875)."""


@offsets.command("get")
@click.argument("name")
@output_option()
@address_option
def get_offsets(name: str, output: str) -> None:
    """The offsets of connector NAME (Connect's GET /connectors/NAME/offsets)."""
    show_offsets(name, output)


@offsets.command("alter")
@click.argument("name")
@click.option(
    "-f",
    "--filename",
    "path",
    metavar="PATH",
    required=True,
    help='Connect\'s {"offsets": [{"partition": {...}, "offset": {...}}]} body; - for stdin.',
)
@address_option
def alter_offsets(name: str, path: str) -> None:
    """Set (or with a null offset forget) the offsets of connector NAME; it must be STOPPED."""
    entries = offsets_body(*read_one(path))
    with client() as c:
        click.echo(f"connector/{name}: {c.alter_offsets(name, entries)}")


@offsets.command("reset")
@click.argument("name")
@address_option
def reset_offsets(name: str) -> None:
    """Forget every offset of connector NAME; it must be STOPPED."""
    with client() as c:
        click.echo(f"connector/{name}: {c.reset_offsets(name)}")


@click.group()
def topics() -> None:
    """Read or reset the topics a connector used (KIP-558)."""


@topics.command("get")
@click.argument("name")
@output_option()
@address_option
def get_topics(name: str, output: str) -> None:
    """The topics connector NAME's tasks wrote to or consumed from since it was created or its
    topics were last reset (Connect's GET /connectors/NAME/topics)."""
    with client() as c:
        found = c.topics(name)
    if not found and output == "table":
        click.echo(f"connector/{name} has used no topic yet.", err=True)
        return
    emit({name: {"topics": found}}, output, lambda width: "".join(f"{t}\n" for t in found))


@topics.command("reset")
@click.argument("name")
@address_option
def reset_topics(name: str) -> None:
    """Forget the topics of connector NAME; the list fills again as its tasks next start."""
    with client() as c:
        c.reset_topics(name)
    click.echo(f"connector/{name}: topics reset")
