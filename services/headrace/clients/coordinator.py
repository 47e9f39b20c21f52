"""The coordinator, as its clients ask it: the group's last generations, from the replica that
leads (each address of ``HEADRACE_COORDINATOR_ADDR`` in turn), with each replica's role; and a
generation in the one JSON shape that both the console and ``headrace coordinator history``
show.

A replica that does not lead answers UNAVAILABLE, saying it is standing by; one that does not
answer in time is unreachable; any other refusal (a caller without the read role) is the
coordinator's own word, kept as it said it.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import grpc

from headrace.core.security import tls
from headrace.core.settings import Settings
from headrace.v1 import coordinator_pb2, coordinator_pb2_grpc

CALL_TIMEOUT_S = 5.0
STANDING_BY = "is standing by"  # what a replica that does not lead answers (UNAVAILABLE)
AWAY = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)


@dataclass(frozen=True)
class Replica:
    """One coordinator replica as it answered: ``leader``, ``standby``, ``unreachable`` or
    ``refused`` (with what it said, and the status code of a refusal)."""

    address: str
    role: str
    detail: str = ""
    code: grpc.StatusCode | None = None


@dataclass(frozen=True)
class History:
    replicas: tuple[Replica, ...]
    generations: tuple[coordinator_pb2.GenerationSummary, ...]
    """The leader's, oldest first; none when no replica leads."""

    @property
    def refusal(self) -> Replica | None:
        """The first replica that refused the caller, if one did."""
        return next((r for r in self.replicas if r.role == "refused"), None)


def role(code: grpc.StatusCode, details: str) -> str:
    """What a replica that did not answer the history is, from its status."""
    if code is grpc.StatusCode.UNAVAILABLE and STANDING_BY in details:
        return "standby"
    return "unreachable" if code in AWAY else "refused"


def _request(last: int) -> coordinator_pb2.HistoryRequest:
    return coordinator_pb2.HistoryRequest(last=last)


def _history(replicas: list[Replica], found: list[Any]) -> History:
    generations = found[0].generations if found else ()
    return History(tuple(replicas), tuple(generations))


def history(settings: Settings, last: int, addresses: Sequence[str] | None = None) -> History:
    """The last ``last`` generations, asked of each replica in turn (``addresses``, else the
    settings'), with the caller's settings (its TLS and token)."""
    replicas: list[Replica] = []
    found: list[Any] = []
    for address in addresses or settings.coordinator_addrs:
        with tls.channel(address, settings) as channel:
            stub = coordinator_pb2_grpc.CoordinatorStub(channel)
            try:
                answer = stub.History(_request(last), timeout=CALL_TIMEOUT_S)
            except grpc.RpcError as exc:
                code, details = exc.code(), exc.details() or ""
                replicas.append(Replica(address, role(code, details), details, code))
                continue
        replicas.append(Replica(address, "leader"))
        found = found or [answer]
    return _history(replicas, found)


async def history_async(settings: Settings, last: int) -> History:
    """:func:`history`, on asyncio channels."""
    replicas: list[Replica] = []
    found: list[Any] = []
    for address in settings.coordinator_addrs:
        async with tls.aio_channel(address, settings) as channel:
            stub = coordinator_pb2_grpc.CoordinatorStub(channel)
            try:
                answer = await stub.History(_request(last), timeout=CALL_TIMEOUT_S)
            except grpc.aio.AioRpcError as exc:
                details = exc.details() or ""
                replicas.append(Replica(address, role(exc.code(), details), details, exc.code()))
                continue
        replicas.append(Replica(address, "leader"))
        found = found or [answer]
    return _history(replicas, found)


def generation_json(summary: coordinator_pb2.GenerationSummary) -> dict[str, Any]:
    """One generation, against the one before it: when (as ISO 8601 and in milliseconds), by
    which coordinator, each member's load, the units new and moved, the revocations (the
    deletions marked), the workers away with how many units each kept, and the deletion stops
    still owed."""
    recorded = datetime.datetime.fromtimestamp(summary.recorded_at_ms / 1000, tz=datetime.UTC)
    return {
        "generation": summary.generation,
        "recorded_at": recorded.isoformat(timespec="milliseconds"),
        "recorded_at_ms": summary.recorded_at_ms,
        "coordinator": summary.coordinator,
        "members": [
            {"worker": m.worker_id, "connectors": m.connectors, "tasks": m.tasks}
            for m in summary.members
        ],
        "new": list(summary.new_units),
        "moved": [
            {"unit": m.unit, "from": m.from_worker, "to": m.to_worker} for m in summary.moved
        ],
        "revoked": [
            {"worker": r.worker_id, "unit": u.unit, "deleted": u.deleted}
            for r in summary.revoked
            for u in r.units
        ],
        "departed": [{"worker": d.worker_id, "units": d.units} for d in summary.departed],
        "pending_deletions": [
            {
                "unit": p.unit,
                "incarnation": p.incarnation,
                "owner": p.owner,
                "connector": p.connector,
                "connector_class": p.connector_class,
                "plugin_version": p.plugin_version,
            }
            for p in summary.pending_deletions
        ],
    }
