"""The coordinator replicas and the group's last generations, as the console shows them: asked
of each replica of ``HEADRACE_COORDINATOR_ADDR`` with the caller's own token (the history is a
read), so a reader sees it and one without the role is refused by the coordinator itself."""

from __future__ import annotations

import dataclasses
from typing import Any

from headrace.clients.coordinator import generation_json, history_async
from headrace.core.security.auth import bearer_token
from headrace.core.settings import Settings


async def coordinators(settings: Settings, authorization: str | None, last: int) -> dict[str, Any]:
    """Each replica's role (leading, standing by, unreachable, refused), and the last ``last``
    generations from the one that leads, oldest first."""
    caller = dataclasses.replace(settings, token=bearer_token(authorization) or settings.token)
    found = await history_async(caller, last)
    return {
        "replicas": [
            {"address": r.address, "role": r.role, "detail": r.detail} for r in found.replicas
        ],
        "generations": [generation_json(g) for g in found.generations],
    }
