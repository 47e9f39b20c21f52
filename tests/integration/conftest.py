"""Fixtures of the integration tier: the config service as a real process, on plugins that are
manifests only (the config service never runs plugin code)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from headrace.core.settings import Settings
from headrace.local.stack import Stack
from tests.support import install_manifest


def manifest_plugins(folder: Path) -> Path:
    """A plugin path with a source, Gen 1.0.0, and a sink, Lake 1.0.0 and 2.0.0."""
    install_manifest(folder, "Gen", "1.0.0", "source")
    install_manifest(folder, "Lake", "1.0.0", "sink")
    install_manifest(folder, "Lake", "2.0.0", "sink")
    return folder


@pytest.fixture
def config_service(
    settings_for: Callable[..., Settings], tmp_path: Path
) -> Iterator[tuple[Stack, Settings]]:
    settings = settings_for(manifest_plugins(tmp_path / "plugins"))
    stack = Stack(settings)
    stack.start("config")
    try:
        yield stack, settings
    finally:
        stack.down()
