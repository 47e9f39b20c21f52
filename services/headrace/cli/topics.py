"""``headrace topics get|reset``: the topics a connector's tasks used, as KIP-558 tracks them."""

from __future__ import annotations

import click

from headrace.cli.context import address_option, client, emit, output_option


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
