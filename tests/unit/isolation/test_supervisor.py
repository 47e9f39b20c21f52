"""The folder of a plugin host's socket: only the worker's user may enter it (the host makes
the socket itself 0600, checked with a real host in ``tests/integration/test_plugin_host.py``)."""

from __future__ import annotations

import stat
from pathlib import Path

from headrace.isolation.supervisor import private_folder


def test_the_plugin_hosts_folder_is_private_even_when_it_existed(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)
    assert stat.S_IMODE(private_folder(folder).stat().st_mode) == 0o700
    fresh = private_folder(tmp_path / "a" / "b")
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o700
