"""Each connector's history of states, as the config service reads the status topic: every
report that changed a unit's state or its worker, with the time it was written.

It begins when the service started: what the replay found (the status topic is compacted, so
that is each unit's last report) stands first, without a time, and each change read since
follows. Only connectors that changed since are held, the last :data:`KEPT` changes of each,
and a connector's are forgotten with it: a replay of many connectors costs nothing here.

A trace may quote a secret of a config the connector had before: the configs it was given
since, the last :data:`KEPT_CONFIGS`, are held beside its changes, for their secrets to be
hidden too.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from headrace.core.model.configstate import (
    ConfigEvent,
    ConfigState,
    ConnectorConfigured,
    ConnectorRemoved,
)
from headrace.core.model.status import StatusEvent, StatusRemoved, StatusState
from headrace.core.model.structs import WorkUnit
from headrace.core.storage.topiclog import LogRecord

KEPT = 100
KEPT_CONFIGS = 10


@dataclass(frozen=True, slots=True)
class Change:
    """A unit reported a new state (or the same on another worker) at ``at_ms``; 0 for what
    the service found when it started."""

    at_ms: int
    unit: WorkUnit
    state: str
    worker: str
    trace: str


class StateHistory:
    """The changes of every connector's units. :meth:`seen` watches the status store, before
    each event is folded: ``statuses`` then gives the state before it."""

    def __init__(
        self,
        statuses: Callable[[], StatusState],
        units_of: Callable[[str], Iterable[WorkUnit]],
        kept: int = KEPT,
        kept_configs: int = KEPT_CONFIGS,
    ) -> None:
        self._statuses = statuses
        self._units_of = units_of
        self._kept = kept
        self._kept_configs = kept_configs
        self._changes: dict[str, list[Change]] = {}
        self._configs: dict[str, list[Mapping[str, str]]] = {}

    def configured(self, event: ConfigEvent, before: ConfigState) -> None:
        """Watches the config store, with the configs ``before`` the event: a connector's
        config replaced by a different one is kept among its earlier configs; a connector
        deleted has everything held of it forgotten."""
        match event:
            case ConnectorRemoved(name):
                self._changes.pop(name, None)
                self._configs.pop(name, None)
            case ConnectorConfigured(name, config, _):
                had = before.connectors.get(name)
                if had is not None and had != config:
                    earlier = self._configs.setdefault(name, [])
                    earlier.append(had)
                    del earlier[: -self._kept_configs]

    def earlier_configs(self, name: str) -> list[Mapping[str, str]]:
        """The configs the connector had since the service started, before its current one."""
        return list(self._configs.get(name, ()))

    def seen(self, event: StatusEvent, record: LogRecord) -> None:
        if isinstance(event, StatusRemoved):
            if event.unit.is_connector:  # the connector was deleted
                self._changes.pop(event.unit.connector, None)
            return
        status = event.status
        name = status.unit.connector
        changes = self._changes.get(name)
        if changes is None:
            changes = self._changes[name] = self._found(name)
        last = next((c for c in reversed(changes) if c.unit == status.unit), None)
        if last is not None and (last.state, last.worker) == (status.state.value, status.worker_id):
            return  # reported again as it was (a new generation, the same place)
        at_ms = record.timestamp_ms or int(time.time() * 1000)
        changes.append(
            Change(at_ms, status.unit, status.state.value, status.worker_id, status.trace)
        )
        if len(changes) > self._kept:
            del changes[: len(changes) - self._kept]

    def _found(self, name: str) -> list[Change]:
        """The connector's units as the status fold holds them now."""
        current = self._statuses()
        return [
            Change(0, s.unit, s.state.value, s.worker_id, s.trace)
            for unit in self._units_of(name)
            if (s := current.get(unit)) is not None
        ]

    def of(self, connector: str) -> list[Change]:
        """The connector's changes, oldest first (its units' reports are on several
        partitions: read in the topic's order, they are not in time's)."""
        changes = self._changes.get(connector)
        return sorted(self._found(connector) if changes is None else changes, key=lambda c: c.at_ms)
