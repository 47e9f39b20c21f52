"""Where a task runs and with what: the part every task loop (source or sink) starts from."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from headrace.components.retry import RetryPolicy, retrying
from headrace.core.model.structs import WorkUnit
from headrace.core.observability import log
from headrace.core.settings import Settings
from headrace.runtime import watchdog
from headrace.sdk.errors import RetriableError
from headrace.sdk.paths import Paths

T = TypeVar("T")


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
        self.retry_policy = RetryPolicy.from_config(self.connector_config)
        # Told of each topic the task uses, once per run (KIP-558's topic tracking): the plugin
        # host reports it to the worker, which records it in the status topic.
        self.on_topic: Callable[[str], None] = lambda topic: None
        self._topics_used: set[str] = set()

    def request_stop(self) -> None:
        self.stop_requested.set()

    def forget_topics(self) -> None:
        """Tells each topic again as it is next used (the connector's topics were reset)."""
        self._topics_used = set()

    def used(self, topics: Iterable[str]) -> None:
        """Notes topics the task wrote to or consumed from; each new one is told once."""
        for topic in topics:
            if topic not in self._topics_used:
                self._topics_used.add(topic)
                self.on_topic(topic)

    @contextlib.contextmanager
    def plugin_call(self, name: str) -> Iterator[None]:
        """Bounds the call into the task's code made inside the block (see ``watchdog``)."""
        with watchdog.bounded(WorkUnit(self.connector, self.task_id), name):
            yield

    async def retried(self, name: str, call: Callable[[], Awaitable[T]]) -> T:
        """A call into the task's code, each try bounded, tried again after a
        ``RetriableError`` for as long as ``errors.retry.*`` say (see ``retry``)."""

        async def attempt() -> T:
            with self.plugin_call(name):
                return await call()

        def retried(attempt: int, error: RetriableError, wait_s: float) -> None:
            log.get(connector=self.connector, task=self.task_id).warning(
                "task_call_retried", call=name, attempt=attempt, wait_s=wait_s, error=str(error)
            )

        return await retrying(attempt, self.retry_policy, retried)
