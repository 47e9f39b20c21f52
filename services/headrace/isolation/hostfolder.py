"""The folder a plugin process serves from, as both sides of its socket agree on it: only the
owner's user may enter it (0700, made so by the owner), the host makes its socket 0600, and a
host that ended itself because a plugin call overran its bound leaves the reason beside the
socket, for its owner's trace."""

from __future__ import annotations

from pathlib import Path

PRIVATE_FOLDER = 0o700
PRIVATE_SOCKET = 0o600
OVERRUN_FILE = "overrun"
"""Why the host ended itself (``headrace.runtime.watchdog``), in the watchdog's words: one line."""


def private_folder(folder: Path) -> Path:
    """``folder``, made if missing, that only this process's user may enter."""
    folder.mkdir(mode=PRIVATE_FOLDER, parents=True, exist_ok=True)
    folder.chmod(PRIVATE_FOLDER)  # made earlier, or under a umask: mkdir's mode is not enough
    return folder
