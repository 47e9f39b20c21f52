"""The config service's validation processes: one not asked for in ``plugin_idle_stop_s`` is
stopped, one with a call under way is not, and the next call starts it again. Plugin processes
stand in as fakes: only their starts and stops are looked at here."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from headrace.config import pluginchecks
from headrace.config.pluginchecks import PluginChecks
from headrace.core.model.plugins import PluginDescriptor
from headrace.core.settings import Settings
from headrace.isolation.supervisor import idle, plugin_key
from tests.support import eventually

PLUGIN = PluginDescriptor("example.CheckedSource", "1.0.0", "source", "", "", Path("/nowhere"))


class FakeClient:
    def __init__(self, release: asyncio.Event) -> None:
        self.release = release

    async def describe(self, deadline_s: float) -> list[object]:
        await self.release.wait()
        return []


class FakeProcess:
    """Records its starts and stops; its describe waits for ``release``."""

    started: list[FakeProcess] = []
    release = asyncio.Event()

    def __init__(self, plugin: PluginDescriptor, *args: Any, **kwargs: Any) -> None:
        self.plugin, self.key = plugin, plugin_key(plugin)
        self.client: FakeClient | None = None
        self.stopped = False

    async def start(self) -> None:
        self.client = FakeClient(self.release)
        FakeProcess.started.append(self)

    async def stop(self, wait_s: float = 5.0) -> None:
        self.client, self.stopped = None, True


@pytest.fixture
async def checks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setattr(pluginchecks, "PluginProcess", FakeProcess)
    FakeProcess.started, FakeProcess.release = [], asyncio.Event()
    settings = Settings(plugin_idle_stop_s=0.05, var_dir=tmp_path)
    made = PluginChecks(settings)
    yield made
    await made.close()


async def test_a_validation_process_not_asked_for_is_stopped_and_started_again_when_needed(
    checks: PluginChecks,
) -> None:
    FakeProcess.release.set()
    await checks.describe(PLUGIN)
    [first] = FakeProcess.started
    await eventually("the idle process stopped", lambda: first.stopped)
    await checks.describe(PLUGIN)
    assert len(FakeProcess.started) == 2 and not FakeProcess.started[1].stopped


async def test_a_process_with_a_call_under_way_is_not_stopped(
    checks: PluginChecks, monkeypatch: pytest.MonkeyPatch
) -> None:
    checked: list[bool] = []  # each idle check's verdict

    def judged(*args: Any) -> bool:
        checked.append(idle(*args))
        return checked[-1]

    monkeypatch.setattr(pluginchecks, "idle", judged)
    FakeProcess.release.set()
    await checks.describe(PLUGIN)  # its idle check is now due in 0.05 s
    FakeProcess.release.clear()
    call = asyncio.create_task(checks.describe(PLUGIN))
    [process] = FakeProcess.started
    await eventually("two idle checks during the call", lambda: len(checked) >= 2)
    assert checked[:2] == [False, False]
    assert not process.stopped and not call.done()
    FakeProcess.release.set()
    await call
    await eventually("the process stopped once idle", lambda: process.stopped)
