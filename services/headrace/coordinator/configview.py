"""The coordinator's view of the configs topic: a pure fold, and the feed that runs it.

The view folds config events like every other reader of the topic, and adds one thing of its
own: when an incarnation of a connector is retired (its config tombstoned, or replaced by a new
incarnation under its name), it tells the group that incarnation's last configs. The group needs
them to have a deleted unit cleaned up on another worker once the configs topic has forgotten
them. Whether a unit was deleted the group sees for itself, by comparing the incarnation it runs
with the connector's, which holds across restarts and compaction alike.

:class:`Replay` folds the topic as it was at start and says, once, what the group must hear of
it; :func:`apply` folds each event after that and says which group events it calls for.
:class:`ConfigFeed` reads the topic and submits those group events.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Protocol

from headrace.coordinator.group import ConfigsChanged, ConnectorRetired, Event
from headrace.core import runner
from headrace.core.model import configlog, configstate
from headrace.core.model.configstate import (
    Config,
    ConfigEvent,
    ConfigState,
    ConnectorConfigured,
    ConnectorRemoved,
    Folding,
    InstalledPlugin,
    LoggerLevelSet,
    LogLevel,
    PluginInstalled,
    PluginUninstalled,
    TopicsReset,
)
from headrace.core.storage.replay import replaying
from headrace.core.storage.topiclog import LogFactory, LogRecord


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


def apply(configs: ConfigState, event: ConfigEvent) -> tuple[ConfigState, list[Event]]:
    """Folds one config event read after the replay; returns the new state and the events for
    the group, in order: the incarnation it retires, if any, then the state."""
    retired = retired_by(configs, event)
    configs = configstate.apply(configs, event)
    return configs, [*retired, ConfigsChanged(configs)]


class Replay:
    """The replay at start. The group hears nothing while it runs: it gets the incarnations
    retired meanwhile and the replayed state once, from :meth:`finished`, rather than a
    snapshot per record it would only overwrite. Folded in place (:class:`Folding`): a state
    per record was half the fold's time at 100,000 connectors (py-spy)."""

    def __init__(self) -> None:
        self._folding = Folding(ConfigState())
        self._retired: list[ConnectorRetired] = []

    @property
    def configs(self) -> ConfigState:
        return self._folding.state()

    def apply(self, event: ConfigEvent) -> None:
        self._retired += retired_by(self._folding, event)
        self._folding.apply(event)

    def finished(self) -> tuple[ConfigState, list[Event]]:
        """The replayed state, and the events for the group: the incarnations retired during
        the replay, in their order, then the state."""
        configs = self._folding.state()
        return configs, [*self._retired, ConfigsChanged(configs)]


_NOT_THE_GROUPS = (LoggerLevelSet, TopicsReset, PluginInstalled, PluginUninstalled)
"""What the configs topic says that changes no assignment: kept, and passed on to workers."""


class ConfigFeed:
    """Reads the configs topic, through a :class:`Replay` and then :func:`apply`, and hands
    each group event it calls for to the group it leads (:meth:`lead`). Only reads: the config
    service alone writes the topic.

    The replay may begin before there is a group to lead (:meth:`replay`): a coordinator that
    stands by follows the topic, so that taking over does not wait for a replay of every
    config. Until it leads, what it reads goes on being folded into the replay."""

    def __init__(
        self,
        logs: LogFactory,
        on_levels: Callable[[Mapping[str, LogLevel]], None] = lambda levels: None,
        on_topics_reset: Callable[[TopicsReset], None] = lambda reset: None,
        on_plugins: Callable[[Mapping[str, InstalledPlugin]], None] = lambda plugins: None,
    ) -> None:
        self._configs = ConfigState()  # once leading
        self._replay: Replay | None = Replay()  # until then
        self._submit: Callable[[Event], None] = lambda event: None
        self._on_levels = on_levels  # the cluster's log levels (KIP-976), when they change
        self._on_topics_reset = on_topics_reset  # a connector's topics reset (KIP-558)
        self._on_plugins = on_plugins  # the cluster's installed Java plugins, when they change
        self._log = logs(self._on_record)
        self._replaying: asyncio.Task[None] | None = None

    def _on_record(self, record: LogRecord) -> None:
        event = configlog.decode(record.key, record.value, record.offset)
        if event is None:
            return
        if self._replay is not None:
            self._replay.apply(event)
        elif isinstance(event, _NOT_THE_GROUPS):
            self._configs = configstate.apply(self._configs, event)
        else:
            self._configs, submit = apply(self._configs, event)
            for group_event in submit:
                self._submit(group_event)
            return
        if isinstance(event, LoggerLevelSet):  # not the group's: the workers', as they are
            self._on_levels(self.configs.log_levels)
        elif isinstance(event, TopicsReset):  # nor this: for the workers running its tasks
            self._on_topics_reset(event)
        elif isinstance(event, PluginInstalled | PluginUninstalled):  # every worker's
            self._on_plugins(self.configs.plugins)

    @property
    def configs(self) -> ConfigState:
        """The configs read so far, replayed or not."""
        return self._configs if self._replay is None else self._replay.configs

    def replay(self) -> asyncio.Task[None]:
        """Begins the replay of the topic, once; the task ends when the topic has been read
        to the end it had, and the log goes on being read after it."""
        if self._replaying is None:
            self._replaying = asyncio.create_task(self._replayed(), name="configs-replay")
        return self._replaying

    async def _replayed(self) -> None:
        with replaying("configs"):
            await self._log.start(writer=False)

    def lead(self, submit: Callable[[Event], None]) -> None:
        """Hands ``submit`` what the replay (over) found, then each group event read after."""
        assert self._replaying is not None and self._replaying.done(), "not replayed yet"
        assert self._replay is not None, "leading already"
        self._configs, found = self._replay.finished()
        self._replay = None
        self._submit = submit
        for group_event in found:
            submit(group_event)

    async def start(self, submit: Callable[[Event], None]) -> None:
        """Replays the topic (or waits for the replay begun), then leads ``submit``."""
        await self.replay()
        self.lead(submit)

    @property
    def reader(self) -> asyncio.Task[None] | None:
        return self._log.reader

    async def close(self) -> None:
        """Stops reading; closing again does nothing."""
        replaying, self._replaying = self._replaying, None
        await runner.cancel(replaying)
        await self._log.close()
