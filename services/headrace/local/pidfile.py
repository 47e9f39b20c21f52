"""The pid files of the processes ``headrace.local`` starts detached (the embedded broker, Kafka
Connect), which a later command finds and stops."""

from __future__ import annotations

import os
from pathlib import Path


def running_pid(pid_file: Path) -> int | None:
    """The pid ``pid_file`` names, if that process still runs."""
    try:
        pid = int(pid_file.read_text())
        os.kill(pid, 0)
    except (FileNotFoundError, ValueError, ProcessLookupError):
        return None
    return pid
