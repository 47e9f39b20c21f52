"""A topic's replay at start: timed, and out of the cyclic garbage collector's way.

A replay folds every record of a topic into state that lives as long as the process: hundreds
of thousands of objects, none of them garbage, and almost none in reference cycles. Python's
collector scans every tracked object at each full collection, and it makes one whenever the
objects that survived collections grow by a quarter, so during a replay it scans the growing
state again and again. Replaying 100,000 connectors (400,000 config records and 300,000 status
records) into the config service's fold took 3.8 times as long with the collector on as with it
off (in a profile of the fold alone, 15.6 s and 8.8 s against 4.0 s and 2.1 s). A full collection
of that state afterwards takes over a second, a pause the service would pay again each time its
state grew by a quarter.

So while any replay runs, the collector is off; when the last one ends, everything the process
holds is moved to the collector's permanent generation (``gc.freeze``), which later collections
skip. Reference counting still frees everything that is not in a cycle, during the replay and
after it; what a cycle held at the freeze is kept.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

from headrace.core.observability import metrics

_lock = threading.Lock()
_running = 0  # replays under way in this process
_was_enabled = True  # whether the collector ran before the first of them


@contextlib.contextmanager
def replaying(log_role: str) -> Iterator[None]:
    """The replay of one topic (``configs``, ``status``, ``assignments``) in the block: timed as
    ``headrace_replay_seconds``, with the collector held off until every replay has ended."""
    with collector_held_off(), metrics.replay(log_role):
        yield


@contextlib.contextmanager
def collector_held_off() -> Iterator[None]:
    """The cyclic collector off in the block, and in any overlapping it; once the last such
    block has ended, what the process holds is frozen (skipped by later collections) and the
    collector runs again as it did before."""
    global _running, _was_enabled
    with _lock:
        if _running == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _running += 1
    try:
        yield
    finally:
        with _lock:
            _running -= 1
            if _running == 0:
                gc.freeze()
                if _was_enabled:
                    gc.enable()
