"""Settings travel between processes through the environment and come back the same."""

from __future__ import annotations

from pathlib import Path

import pytest

from headrace.core.settings import Settings


def test_settings_read_back_from_their_environment_are_equal(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    sent = Settings(
        bootstrap_servers="127.0.0.1:1234",
        cluster="c1",
        config_addr="127.0.0.1:1",
        coordinator_addr="127.0.0.1:2",
        executor_addr="127.0.0.1:3",
        plugin_path=(tmp_path / "p1", tmp_path / "p2"),
        var_dir=tmp_path / "var",
        spark_master="local[1]",
        file_roots=(tmp_path / "f1", tmp_path / "f2"),
    )
    for name, value in sent.to_env().items():
        monkeypatch.setenv(name, value)
    assert Settings() == sent


def test_a_token_read_from_a_secret_file_loses_its_final_newline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HEADRACE_TOKEN", "3f0c9a1b2c3d4e5f6a7b\n")
    assert Settings().token == "3f0c9a1b2c3d4e5f6a7b"
