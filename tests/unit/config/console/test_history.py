"""A connector's history in the console hides the secrets of every config it had since the
service started, not only its current one's. On the in-memory topics, through the console's
own route."""

from __future__ import annotations

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from headrace.config.console.app import Console
from headrace.core.model.status import State, UnitStatus
from headrace.core.model.structs import WorkUnit
from headrace.core.security import secrets
from headrace.core.settings import Settings
from tests.unit.config.memory import GEN, memory_commands

FIRST, SECOND = "first-password-4af1", "second-password-9c2e"


async def test_a_trace_quoting_an_earlier_config_s_secret_shows_it_hidden(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    commands = await memory_commands(secret_keys=("password",))
    console = Console(commands, commands.store, Settings())
    config = {"connector.class": GEN.class_name, "password": FIRST}
    await commands.create("loud", config)
    await commands.put_config("loud", {**config, "password": SECOND})
    await commands.current()
    assert console.history.earlier_configs("loud") == [{**config, "name": "loud"}]
    # As when another replica took both configs: this process has shown neither.
    monkeypatch.setattr(secrets, "_registered", frozenset())
    monkeypatch.setattr(secrets, "_in_order", ())
    trace = f"cannot log in with {FIRST}, nor with {SECOND}"
    await commands.store.statuses.report(UnitStatus(WorkUnit.of("loud"), State.FAILED, "w1", trace))
    served = web.Application()
    served.add_routes(console.routes())
    async with TestClient(TestServer(served)) as client:
        answer = await client.get("/ui/api/connectors/loud/history")
        assert answer.status == 200
        [failed] = [c for c in await answer.json() if c["state"] == "FAILED"]
    assert failed["trace"] == "cannot log in with [hidden], nor with [hidden]"

    await commands.delete("loud")
    await commands.current()
    assert console.history.earlier_configs("loud") == []
