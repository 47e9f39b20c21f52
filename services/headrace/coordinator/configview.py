"""The coordinator's view of the configs topic: a pure fold, and the feed that runs it.

The view folds config events like every other reader of the topic, and adds one thing of its
own: when an incarnation of a connector is retired (its config tombstoned, or replaced by a new
incarnation under its name), it tells the group that incarnation's last configs. The group needs
them to have a deleted unit cleaned up on another worker once the configs topic has forgotten
them. Whether a unit was deleted the group sees for itself, by comparing the incarnation it runs
with the connector's, which holds across restarts and compaction alike.

:func:`apply` folds one event and says which group events it calls for; :func:`replay_finished`
marks the end of the replay. :class:`ConfigFeed` reads the topic and submits those group events.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Protocol

import immutables

from headrace.coordinator.group import ConfigsChanged, ConnectorRetired, Event
from headrace.core.model import configlog, configstate
from headrace.core.model.configstate import (
    Config,
    ConfigEvent,
    ConfigState,
    ConnectorConfigured,
    ConnectorRemoved,
    Folding,
    LoggerLevelSet,
    LogLevel,
    TopicsReset,
)
from headrace.core.storage.topiclog import LogFactory, LogRecord


@dataclass(frozen=True)
class ConfigView:
    """The configs folded so far, whether the replay at start is over, and the incarnations
    retired during the replay (handed to the group when it ends)."""

    configs: ConfigState = field(default_factory=ConfigState)
    replayed: bool = False
    retired: immutables.Map[int, ConnectorRetired] = field(default_factory=immutables.Map)
    """By the order they were retired in: a map that grows by one item, where a tuple would be
    copied whole at each retirement (a replay of n deletions, n²/2 items copied)."""


class Configs(Protocol):
    """What :func:`retired_by` reads of the configs before an event: a state, or the
    :class:`Folding` of a replay."""

    @property
    def connectors(self) -> Mapping[str, Config]: ...

    @property
    def incarnations(self) -> Mapping[str, str]: ...

    def tasks_of(self, name: str) -> tuple[Config, ...]: ...


def retired_by(before: Configs, event: ConfigEvent) -> list[ConnectorRetired]:
    """The incarnation ``event`` retires, with its last configs; none for most events."""
    match event:
        case ConnectorRemoved(name) | ConnectorConfigured(name, _, _) if name in before.connectors:
            incarnation = before.incarnations.get(name, "")
            if isinstance(event, ConnectorConfigured) and event.incarnation == incarnation:
                return []  # an update
            return [
                ConnectorRetired(name, incarnation, before.connectors[name], before.tasks_of(name))
            ]
    return []


def apply(view: ConfigView, event: ConfigEvent) -> tuple[ConfigView, list[Event]]:
    """Folds one config event; returns the new view and the events for the group, in order.

    While replaying, the group hears nothing: it gets the replayed state once, from
    :func:`replay_finished`, rather than a snapshot per record it would only overwrite.
    """
    retired = retired_by(view.configs, event)
    configs = configstate.apply(view.configs, event)
    if not view.replayed:
        held = view.retired
        for incarnation in retired:
            held = held.set(len(held), incarnation)
        # Made directly: this runs once per record of the replay, and ``replace`` was a
        # seventh of it in a profile.
        return ConfigView(configs, False, held), []
    return ConfigView(configs, True, view.retired), [*retired, ConfigsChanged(configs)]


def replay_finished(view: ConfigView) -> tuple[ConfigView, list[Event]]:
    """The view once everything that was in the topic at start has been read, and the events
    for the group: the incarnations retired meanwhile, then the replayed state."""
    held = [view.retired[i] for i in range(len(view.retired))]
    return ConfigView(view.configs, True), [*held, ConfigsChanged(view.configs)]


class Replay:
    """The replay at start folded in place (:class:`Folding`), where :func:`apply` makes a
    view per record: what :func:`apply` then :func:`replay_finished` make of the same events,
    for less than half the fold's time at 100,000 connectors (py-spy: a state per record was
    half of it)."""

    def __init__(self, view: ConfigView) -> None:
        self._folding = Folding(view.configs)
        self._retired = [view.retired[i] for i in range(len(view.retired))]

    @property
    def configs(self) -> ConfigState:
        return self._folding.state()

    def apply(self, event: ConfigEvent) -> None:
        self._retired += retired_by(self._folding, event)
        self._folding.apply(event)

    def finished(self) -> tuple[ConfigView, list[Event]]:
        held = immutables.Map(enumerate(self._retired))
        return replay_finished(ConfigView(self._folding.state(), False, held))


class ConfigFeed:
    """Reads the configs topic into a :class:`ConfigView` and hands each group event it calls
    for to ``submit``. Only reads: the config service alone writes the topic."""

    def __init__(
        self,
        logs: LogFactory,
        submit: Callable[[Event], None],
        on_levels: Callable[[Mapping[str, LogLevel]], None] = lambda levels: None,
        on_topics_reset: Callable[[TopicsReset], None] = lambda reset: None,
    ) -> None:
        self.view = ConfigView()
        self._replay: Replay | None = Replay(self.view)  # until the replay at start is over
        self._submit = submit
        self._on_levels = on_levels  # the cluster's log levels (KIP-976), when they change
        self._on_topics_reset = on_topics_reset  # a connector's topics reset (KIP-558)
        self._log = logs(self._on_record)

    def _on_record(self, record: LogRecord) -> None:
        event = configlog.decode(record.key, record.value, record.offset)
        if event is None:
            return
        if self._replay is not None:
            self._replay.apply(event)
        elif isinstance(event, LoggerLevelSet | TopicsReset):
            self.view = replace(self.view, configs=configstate.apply(self.view.configs, event))
        else:
            self.view, submit = apply(self.view, event)
            for group_event in submit:
                self._submit(group_event)
            return
        if isinstance(event, LoggerLevelSet):  # not the group's: the workers', as they are
            self._on_levels(self.configs.log_levels)
        elif isinstance(event, TopicsReset):  # nor this: for the workers running its tasks
            self._on_topics_reset(event)

    @property
    def configs(self) -> ConfigState:
        """The configs read so far, replayed or not."""
        return self.view.configs if self._replay is None else self._replay.configs

    async def start(self) -> None:
        """Replays the topic, then keeps reading it."""
        await self._log.start(writer=False)
        assert self._replay is not None, "started twice"
        self.view, submit = self._replay.finished()
        self._replay = None
        for group_event in submit:
            self._submit(group_event)

    @property
    def reader(self) -> asyncio.Task[None] | None:
        return self._log.reader

    async def close(self) -> None:
        await self._log.close()
