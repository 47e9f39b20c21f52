"""The config service's automatic restarts follow each connector's config as it changes: one
that opts in by an update is restarted from then on, one that opts out is left alone. On the
in-memory configs and status topics, with a plugin process's answers stood in for."""

from __future__ import annotations

import pytest

from headrace.config.commands import Commands
from headrace.config.restarter import AutoRestarter
from headrace.core.model.status import State, UnitStatus
from headrace.core.model.structs import WorkUnit
from tests.unit.config.memory import memory_commands

PLAIN = {"connector.class": "Gen"}
OPTED_IN = {**PLAIN, "auto.restart.enable": "true", "auto.restart.backoff.ms": "100"}


class Clock:
    def __init__(self) -> None:
        self.ms = 1_000_000

    def __call__(self) -> int:
        return self.ms


@pytest.fixture
async def commands() -> Commands:
    return await memory_commands()


async def fail(commands: Commands, name: str) -> None:
    await commands.store.statuses.report(UnitStatus(WorkUnit.of(name), State.FAILED, "w1"))


async def restarts_after_backoff(
    commands: Commands, restarter: AutoRestarter, clock: Clock, name: str
) -> bool:
    """Whether an automatic restart of the connector's own unit is on record after two ticks,
    the second past the backoff."""
    await restarter.tick()  # sees the failure
    clock.ms += 1_000
    await restarter.tick()
    return (await commands.store.current()).auto_restarts.get(name, {}).get(-1, None) is not None


async def test_a_connector_that_opts_in_by_an_update_is_restarted_and_one_that_opts_out_is_not(
    commands: Commands,
) -> None:
    clock = Clock()
    restarter = AutoRestarter(commands, clock)
    await commands.create("late", PLAIN)
    await commands.create("early", OPTED_IN)
    await fail(commands, "late")
    await fail(commands, "early")
    assert not await restarts_after_backoff(commands, restarter, clock, "late")
    assert await restarts_after_backoff(commands, restarter, clock, "early")

    await commands.put_config("late", OPTED_IN)
    await fail(commands, "late")
    assert await restarts_after_backoff(commands, restarter, clock, "late")

    await commands.put_config("early", PLAIN)
    before = (await commands.store.current()).auto_restarts.get("early")
    await fail(commands, "early")
    await restarts_after_backoff(commands, restarter, clock, "early")
    assert (await commands.store.current()).auto_restarts.get("early") == before
