"""``GET /health`` as KIP-1017 has Connect answer it: healthy, starting, or unhealthy when the
service cannot catch up with its configs topic in time."""

from __future__ import annotations

import asyncio
import json
from typing import Any, cast

import pytest
from aiohttp.test_utils import make_mocked_request

from headrace.config import rest
from headrace.config.commands import Commands
from headrace.config.rest import ConnectApi


class Topic:
    """The configs topic's reader, caught up at once or never."""

    def __init__(self, caught_up: bool) -> None:
        self.caught_up = caught_up

    async def current(self) -> None:
        if not self.caught_up:
            await asyncio.Event().wait()


async def _no_info() -> dict[str, str]:
    return {}


async def _health(api: ConnectApi) -> tuple[int, Any]:
    response = await api.health(make_mocked_request("GET", "/health"))
    assert response.text is not None
    return response.status, json.loads(response.text)


async def test_a_started_service_that_reads_its_topic_is_healthy() -> None:
    api = ConnectApi(cast(Commands, Topic(caught_up=True)), _no_info)
    api.started = True
    assert await _health(api) == (
        200,
        {"status": "healthy", "message": "The config service is ready to handle requests."},
    )


async def test_a_service_still_starting_says_so_with_503() -> None:
    api = ConnectApi(cast(Commands, Topic(caught_up=True)), _no_info)
    status, body = await _health(api)
    assert (status, body["status"]) == (503, "starting")


async def test_a_service_that_cannot_catch_up_is_unhealthy_with_500(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(rest, "HEALTH_TIMEOUT_S", 0.05)
    api = ConnectApi(cast(Commands, Topic(caught_up=False)), _no_info)
    api.started = True
    status, body = await _health(api)
    assert (status, body["status"]) == (500, "unhealthy")
    assert "configs topic" in body["message"]
