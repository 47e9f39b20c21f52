"""A connector's history in the console hides the secrets of every config it had since the
service started, not only its current one's: through the console's own route on the in-memory
topics, and the configs the history keeps, as a pure fold."""

from __future__ import annotations

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from headrace.config.console.app import Console
from headrace.config.console.history import StateHistory
from headrace.core.model import status
from headrace.core.model.configstate import (
    ConfigState,
    ConnectorConfigured,
    ConnectorRemoved,
    apply,
    fold,
)
from headrace.core.model.status import EMPTY, State, StatusReported, UnitStatus
from headrace.core.model.structs import WorkUnit
from headrace.core.security import secrets
from headrace.core.settings import Settings
from headrace.core.storage.topiclog import LogRecord
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


def test_the_configs_a_connector_had_are_kept_in_order_and_bounded() -> None:
    history = StateHistory(lambda: EMPTY, lambda name: [WorkUnit.of(name)], kept_configs=2)
    configs = ConfigState()
    written = [
        ConnectorConfigured("a", {"v": "1"}, "i1"),  # created: nothing earlier
        ConnectorConfigured("a", {"v": "1"}, "i1"),  # written again unchanged
        ConnectorConfigured("b", {"v": "9"}, "j1"),
        ConnectorConfigured("a", {"v": "2"}, "i1"),
        ConnectorConfigured("a", {"v": "3"}, "i1"),
        ConnectorConfigured("a", {"v": "4"}, "i1"),
    ]
    for event in written:
        history.configured(event, configs)
        configs = apply(configs, event)
    assert history.earlier_configs("a") == [{"v": "2"}, {"v": "3"}]  # the last two
    assert history.earlier_configs("b") == []


def test_a_deleted_connector_s_configs_and_changes_are_forgotten() -> None:
    statuses = status.apply(EMPTY, StatusReported(UnitStatus(WorkUnit.of("a"), State.RUNNING, "w")))
    history = StateHistory(lambda: statuses, lambda name: [WorkUnit.of(name)])
    configs = fold([ConnectorConfigured("a", {"v": "1"}, "i1")])
    history.configured(ConnectorConfigured("a", {"v": "2"}, "i1"), configs)
    assert history.earlier_configs("a") == [{"v": "1"}]
    failed = StatusReported(UnitStatus(WorkUnit.of("a"), State.FAILED, "w"))
    history.seen(failed, LogRecord(0, 0, "", b"", 7))
    assert [c.state for c in history.of("a")] == ["RUNNING", "FAILED"]

    history.configured(ConnectorRemoved("a"), configs)
    assert history.earlier_configs("a") == []
    # the changes read since are gone: what is left is what the status store holds
    assert [(c.at_ms, c.state) for c in history.of("a")] == [(0, "RUNNING")]
