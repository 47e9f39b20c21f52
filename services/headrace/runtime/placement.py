"""Where a task runs and with what: the part every task loop (source or sink) starts from."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from headrace.core.settings import Settings
from headrace.core.structs import WorkUnit
from headrace.runtime import watchdog
from headrace.sdk.paths import Paths


@dataclass(frozen=True)
class Placement:
    """One task of one connector, its configs, and the cluster it talks to."""

    connector: str
    task_id: int
    connector_config: Mapping[str, str]
    task_config: Mapping[str, str]
    settings: Settings = field(repr=False)


class LoopBase:
    """What the source and sink loops share: their placement and the stop request."""

    def __init__(self, placement: Placement) -> None:
        self.connector = placement.connector
        self.task_id = placement.task_id
        self.connector_config = dict(placement.connector_config)
        self.task_config = dict(placement.task_config)
        self.settings = placement.settings
        self.paths = Paths(placement.settings.file_roots)  # the task context's ``paths``
        self.stop_requested = asyncio.Event()
        self.skipped = 0

    def request_stop(self) -> None:
        self.stop_requested.set()

    @contextlib.contextmanager
    def plugin_call(self, name: str) -> Iterator[None]:
        """Bounds the call into the task's code made inside the block (see ``watchdog``)."""
        with watchdog.bounded(WorkUnit(self.connector, self.task_id), name):
            yield
