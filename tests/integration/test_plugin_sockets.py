"""A plugin process's socket, wherever its worker's run folder is: a Unix socket's path holds
about a hundred bytes, and a deep folder must not keep a plugin from starting."""

from __future__ import annotations

from pathlib import Path

import pytest

from headrace.core.settings import BUILTIN_PLUGINS, Settings
from headrace.isolation.plugins import JVM_PLUGINS, installed
from headrace.isolation.supervisor import PluginProcess


@pytest.mark.parametrize("depth", [1, 120], ids=["shallow", "deep"])
async def test_a_plugin_process_serves_however_deep_its_run_folder(
    tmp_path: Path, depth: int
) -> None:
    run_dir, log_dir = tmp_path / ("r" * depth), tmp_path / "log"
    log_dir.mkdir()
    settings = Settings(var_dir=tmp_path / "var", plugin_path=(BUILTIN_PLUGINS,))
    catalog = installed(settings.plugin_path, settings.var_dir / JVM_PLUGINS)
    process = PluginProcess(
        catalog.resolve("DatagenSource"),
        settings,
        "worker-with-a-long-name-" + "w" * 20,
        run_dir,
        log_dir,
        lambda process, event: None,
        lambda process, code, overrun: None,
    )
    await process.start()
    try:
        assert process.client is not None
        infos = await process.client.validate({}, definition_only=True, deadline_s=30)
        assert "topic" in {info.definition.name for info in infos.configs}
    finally:
        await process.stop()
