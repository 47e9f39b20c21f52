"""``headrace coordinator history``: the group's last generations, asked of the coordinator that
leads (each replica of ``HEADRACE_COORDINATOR_ADDR`` in turn), printed as JSON in the shape the
console shows them (``headrace.clients.coordinator``)."""

from __future__ import annotations

import json

import click

from headrace.cli.context import CliError, settings
from headrace.clients.coordinator import generation_json, history


@click.command()
@click.argument("action", type=click.Choice(["history"]))
@click.option("--last", "-n", type=int, default=10, show_default=True, help="How many generations.")
def coordinator(action: str, last: int) -> None:
    """The group's last generations, as the coordinator that leads recorded them, as JSON."""
    found = history(settings(), last)
    if not any(r.role == "leader" for r in found.replicas):
        refused = found.refusal
        if refused is not None and refused.code is not None:
            raise CliError(f"{refused.code.name}: {refused.detail}")
        said = "; ".join(f"{r.address}: {r.detail or r.role}" for r in found.replicas)
        raise CliError(f"no coordinator leads: {said}")
    click.echo(json.dumps([generation_json(g) for g in found.generations], indent=2))
