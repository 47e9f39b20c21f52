"""The coordinator replicas and the group's last generations, as the console shows them: asked
of each replica of ``HEADRACE_COORDINATOR_ADDR`` with the caller's own token (the history is a
read), so a reader sees it and one without the role is refused by the coordinator itself."""

from __future__ import annotations

import dataclasses
from typing import Any

import grpc

from headrace.core.security import tls
from headrace.core.security.auth import bearer_token
from headrace.core.settings import Settings
from headrace.v1 import coordinator_pb2, coordinator_pb2_grpc

CALL_TIMEOUT_S = 5.0
STANDING_BY = "is standing by"  # what a replica that does not lead answers (UNAVAILABLE)


def generation_json(summary: coordinator_pb2.GenerationSummary) -> dict[str, Any]:
    """One generation, against the one before it."""
    return {
        "generation": summary.generation,
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


async def coordinators(settings: Settings, authorization: str | None, last: int) -> dict[str, Any]:
    """Each replica's role (leading, standing by, unreachable), and the last ``last``
    generations from the one that leads, oldest first."""
    caller = dataclasses.replace(settings, token=bearer_token(authorization) or settings.token)
    replicas: list[dict[str, str]] = []
    generations: list[dict[str, Any]] = []
    for address in settings.coordinator_addrs:
        async with tls.aio_channel(address, caller) as channel:
            stub = coordinator_pb2_grpc.CoordinatorStub(channel)
            try:
                answer = await stub.History(
                    coordinator_pb2.HistoryRequest(last=last), timeout=CALL_TIMEOUT_S
                )
            except grpc.aio.AioRpcError as exc:
                details = exc.details() or ""
                if exc.code() is grpc.StatusCode.UNAVAILABLE and STANDING_BY in details:
                    replicas.append({"address": address, "role": "standby", "detail": details})
                elif exc.code() in (
                    grpc.StatusCode.UNAVAILABLE,
                    grpc.StatusCode.DEADLINE_EXCEEDED,
                ):
                    replicas.append({"address": address, "role": "unreachable", "detail": details})
                else:
                    replicas.append({"address": address, "role": "refused", "detail": details})
                continue
        replicas.append({"address": address, "role": "leader", "detail": ""})
        if not generations:
            generations = [generation_json(g) for g in answer.generations]
    return {"replicas": replicas, "generations": generations}
