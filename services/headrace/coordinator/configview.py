"""The coordinator's view of the configs topic: a pure fold, and the feed that runs it.

The view folds config events like every other reader of the topic, and adds one rule of its
own: when a connector's config tombstone is a deletion to act on. Tombstones found while
replaying the topic at start were acted on by a coordinator before this one (or the units they
stopped are gone with their workers); a tombstone read after replay is new, and the group must
stop that connector's units as deleted. The snapshot alone cannot say so, since the connector
may already be back under its name by the time the group looks (deleted, then created again).

:func:`apply` folds one event and says which group events it calls for; :func:`replay_finished`
marks the end of the replay. :class:`ConfigFeed` reads the topic and submits those group events.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from headrace.coordinator.group import ConfigsChanged, ConnectorDeleted, Event
from headrace.core import configlog, configstate
from headrace.core.configstate import ConfigEvent, ConfigState, ConnectorRemoved
from headrace.core.topiclog import LogFactory, LogRecord


@dataclass(frozen=True)
class ConfigView:
    """The configs folded so far, and whether the replay at start is over."""

    configs: ConfigState = field(default_factory=ConfigState)
    replayed: bool = False


def apply(view: ConfigView, event: ConfigEvent) -> tuple[ConfigView, list[Event]]:
    """Folds one config event; returns the new view and the events for the group, in order.

    While replaying, the group hears nothing: it gets the replayed state once, from
    :func:`replay_finished`, rather than a snapshot per record it would only overwrite.
    """
    configs = configstate.apply(view.configs, event)
    if not view.replayed:
        return replace(view, configs=configs), []
    submit: list[Event] = [ConfigsChanged(configs)]
    if isinstance(event, ConnectorRemoved):
        submit.append(ConnectorDeleted(event.name))
    return replace(view, configs=configs), submit


def replay_finished(view: ConfigView) -> tuple[ConfigView, list[Event]]:
    """The view once everything that was in the topic at start has been read, and the replayed
    state for the group."""
    return replace(view, replayed=True), [ConfigsChanged(view.configs)]


class ConfigFeed:
    """Reads the configs topic into a :class:`ConfigView` and hands each group event it calls
    for to ``submit``. Only reads: the config service alone writes the topic."""

    def __init__(self, logs: LogFactory, submit: Callable[[Event], None]) -> None:
        self.view = ConfigView()
        self._submit = submit
        self._log = logs(self._on_record)

    def _on_record(self, record: LogRecord) -> None:
        event = configlog.decode(record.key, record.value)
        if event is None:
            return
        self.view, submit = apply(self.view, event)
        for group_event in submit:
            self._submit(group_event)

    async def start(self) -> None:
        """Replays the topic, then keeps reading it; tombstones count as deletions from then."""
        await self._log.start(writer=False)
        self.view, submit = replay_finished(self.view)
        for group_event in submit:
            self._submit(group_event)

    @property
    def reader(self) -> asyncio.Task[None] | None:
        return self._log.reader

    async def close(self) -> None:
        await self._log.close()
