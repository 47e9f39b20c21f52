"""``headrace coordinator history``: the group's last generations, asked of the coordinator that
leads (each replica of ``HEADRACE_COORDINATOR_ADDR`` in turn), printed as JSON."""

from __future__ import annotations

import datetime
import json
from collections.abc import Sequence
from typing import Any

import click
import grpc

from headrace.cli.client import rpc_code
from headrace.cli.context import CliError, rpc_message
from headrace.core.security import tls
from headrace.core.settings import Settings
from headrace.v1 import coordinator_pb2, coordinator_pb2_grpc

CALL_TIMEOUT_S = 10.0


def history(
    addresses: Sequence[str], settings: Settings, last: int
) -> list[coordinator_pb2.GenerationSummary]:
    """The last generations, from the first replica that leads; CliError when none answers."""
    refusals: list[str] = []
    for address in addresses:
        with tls.channel(address, settings) as channel:
            stub = coordinator_pb2_grpc.CoordinatorStub(channel)
            try:
                answer = stub.History(
                    coordinator_pb2.HistoryRequest(last=last), timeout=CALL_TIMEOUT_S
                )
            except grpc.RpcError as exc:
                if rpc_code(exc) not in (
                    grpc.StatusCode.UNAVAILABLE,
                    grpc.StatusCode.DEADLINE_EXCEEDED,
                ):
                    raise
                refusals.append(f"{address}: {rpc_message(exc)}")
                continue
        return list(answer.generations)
    raise CliError("no coordinator leads: " + "; ".join(refusals))


def generation_json(summary: coordinator_pb2.GenerationSummary) -> dict[str, Any]:
    """One generation as the command prints it."""
    recorded = datetime.datetime.fromtimestamp(summary.recorded_at_ms / 1000, tz=datetime.UTC)
    return {
        "generation": summary.generation,
        "recorded_at": recorded.isoformat(timespec="milliseconds"),
        "coordinator": summary.coordinator,
        "members": {
            m.worker_id: {"connectors": m.connectors, "tasks": m.tasks} for m in summary.members
        },
        "new": list(summary.new_units),
        "moved": [
            {"unit": m.unit, "from": m.from_worker, "to": m.to_worker} for m in summary.moved
        ],
        "revoked": {
            r.worker_id: [f"{u.unit}{' (deleted)' if u.deleted else ''}" for u in r.units]
            for r in summary.revoked
        },
        "departed": {d.worker_id: d.units for d in summary.departed},
        "pending_deletions": [
            {"unit": p.unit, "incarnation": p.incarnation, "owner": p.owner}
            for p in summary.pending_deletions
        ],
    }


@click.command()
@click.argument("action", type=click.Choice(["history"]))
@click.option("--last", "-n", type=int, default=10, show_default=True, help="How many generations.")
def coordinator(action: str, last: int) -> None:
    """The group's last generations, as the coordinator that leads recorded them, as JSON."""
    settings = Settings()
    generations = history(settings.coordinator_addrs, settings, last)
    click.echo(json.dumps([generation_json(g) for g in generations], indent=2))
