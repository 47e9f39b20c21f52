"""The settings a standalone worker runs with, from its worker file and the environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from headrace.core.settings import BUILTIN_PLUGINS
from headrace.standalone.__main__ import settings_for
from headrace.standalone.files import worker_from


def test_every_part_is_at_one_address_and_sources_write_at_least_once(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    worker = worker_from(
        {
            "offset.storage.file.filename": "offsets",
            "bootstrap.servers": "kafka:9092",
            "plugin.path": "libs/connect-file.jar,more",
            "connector.client.config.override.policy": "All",
        },
        "w.properties",
        tmp_path,
    )
    settings = settings_for(worker, "127.0.0.1:6000")
    assert settings.bootstrap_servers == "kafka:9092"
    assert (settings.config_addr, settings.coordinator_addr, settings.offsets_addr) == (
        "127.0.0.1:6000",
    ) * 3
    assert not settings.exactly_once_source
    assert settings.client_override_policy == "All"  # the worker file's, as Connect reads it
    # Paths in connector configs are taken from where it runs, as Connect takes them.
    assert settings.file_roots == (tmp_path,)
    assert settings.plugin_path == (
        BUILTIN_PLUGINS,
        settings.var_dir / "plugins",
        tmp_path / "libs/connect-file.jar",
        tmp_path / "more",
    )


def test_the_operators_file_roots_hold_when_set(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HEADRACE_FILE_ROOTS", str(tmp_path / "data"))
    worker = worker_from({"offset.storage.file.filename": "o"}, "w", tmp_path)
    assert settings_for(worker, "127.0.0.1:6000").file_roots == (tmp_path / "data",)
