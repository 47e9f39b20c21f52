"""Observed state: what each connector and task is doing, as reported by the workers.

The protocol of the status topic (``<cluster>-status``, several partitions, compacted):

| key | value |
| --- | --- |
| ``status-connector-<name>`` | ``StatusReported`` with task = -1 |
| ``status-task-<name>-<n>`` | ``StatusReported`` for task n |
| either | tombstone: the unit no longer exists (its connector was deleted) |
| ``topic-<name>:<topic>`` | ``TopicActive``: a topic the connector used (KIP-558) |
| that | tombstone: forgotten (reset, or the connector was deleted) |

Workers write it; the config service and the CLI read it. Records of one key always land on one
partition, so the latest record per key is the unit's status. Compaction keeps that latest record
and, for a while, the tombstone, which is all the fold needs. The fold keeps no history.

``decode`` turns a record into an event, :func:`apply` folds an event into the state (pure), and
:class:`StatusStore` is the I/O around them, over a Kafka or an in-memory log.
"""

from __future__ import annotations

from collections.abc import ItemsView, Iterator, Mapping, ValuesView
from dataclasses import dataclass
from types import MappingProxyType

import immutables

from headrace.core.model.persistent import with_item, without_item
from headrace.core.model.structs import State, WorkUnit
from headrace.v1 import events_pb2

__all__ = ["State", "StatusState", "UnitStatus"]


@dataclass(frozen=True)
class UnitStatus:
    """The last reported state of a connector or one of its tasks."""

    unit: WorkUnit
    state: State
    worker_id: str = ""
    trace: str = ""
    generation: int = 0
    plugin_version: str = ""


@dataclass(frozen=True)
class StatusReported:
    status: UnitStatus


@dataclass(frozen=True)
class StatusRemoved:
    """The unit's tombstone: its connector was deleted."""

    unit: WorkUnit


StatusEvent = StatusReported | StatusRemoved
StatusState = Mapping[WorkUnit, UnitStatus]

_NO_TASKS: immutables.Map[int, UnitStatus] = immutables.Map()


class Statuses(Mapping[WorkUnit, UnitStatus]):
    """Every unit's status, as the fold makes it: kept by connector, then by task, so that one
    connector's statuses (:func:`of_connector`) cost as much as its units, not a scan of every
    unit of the cluster. Persistent maps: one report makes a new state in O(log n), sharing the
    rest with the state before, so replaying n records costs O(n log n), not O(n^2)."""

    __slots__ = ("_by_connector", "_count")

    def __init__(
        self,
        by_connector: immutables.Map[str, immutables.Map[int, UnitStatus]] | None = None,
        count: int = 0,
    ) -> None:
        self._by_connector = immutables.Map() if by_connector is None else by_connector
        self._count = count

    @classmethod
    def of(cls, statuses: Mapping[WorkUnit, UnitStatus]) -> Statuses:
        """``statuses`` as a ``Statuses`` (itself, when it is one already)."""
        if isinstance(statuses, Statuses):
            return statuses
        made = cls()
        for status in statuses.values():
            made = made.with_status(status)
        return made

    def __getitem__(self, unit: WorkUnit) -> UnitStatus:
        return self._by_connector[unit.connector][unit.task]

    def get(self, unit: WorkUnit, default: UnitStatus | None = None) -> UnitStatus | None:  # type: ignore[override]
        tasks = self._by_connector.get(unit.connector)
        return default if tasks is None else tasks.get(unit.task, default)

    def __contains__(self, unit: object) -> bool:
        return isinstance(unit, WorkUnit) and self.get(unit) is not None

    def __iter__(self) -> Iterator[WorkUnit]:
        return (status.unit for status in self._statuses())

    def __len__(self) -> int:
        return self._count

    def values(self) -> ValuesView[UnitStatus]:
        return _Values(self)

    def items(self) -> ItemsView[WorkUnit, UnitStatus]:
        return _Items(self)

    def _statuses(self) -> Iterator[UnitStatus]:
        return (status for tasks in self._by_connector.values() for status in tasks.values())

    def connector(self, name: str) -> Mapping[WorkUnit, UnitStatus]:
        """The statuses of one connector and its tasks."""
        return MappingProxyType(
            {s.unit: s for s in self._by_connector.get(name, _NO_TASKS).values()}
        )

    def with_status(self, status: UnitStatus) -> Statuses:
        """A new state with ``status`` as its unit's."""
        unit = status.unit
        tasks = self._by_connector.get(unit.connector, _NO_TASKS)
        count = self._count if unit.task in tasks else self._count + 1
        tasks = tasks.set(unit.task, status)
        return Statuses(self._by_connector.set(unit.connector, tasks), count)

    def __repr__(self) -> str:
        return f"Statuses({dict(self.items())!r})"


class _Values(ValuesView[UnitStatus]):
    """The statuses' values, as a view (seen again at each iteration), read from the maps by
    connector without a lookup per unit."""

    _mapping: Statuses

    def __iter__(self) -> Iterator[UnitStatus]:
        return self._mapping._statuses()


class _Items(ItemsView[WorkUnit, UnitStatus]):
    _mapping: Statuses

    def __iter__(self) -> Iterator[tuple[WorkUnit, UnitStatus]]:
        return ((status.unit, status) for status in self._mapping._statuses())


EMPTY: StatusState = Statuses()


def status_key(unit: WorkUnit) -> str:
    if unit.is_connector:
        return f"status-connector-{unit.connector}"
    return f"status-task-{unit.connector}-{unit.task}"


def parse_key(key: str) -> WorkUnit | None:
    """The unit a key is about (connector names may contain ``-``: split at the last one)."""
    if key.startswith("status-connector-"):
        return WorkUnit.of(key.removeprefix("status-connector-"))
    if key.startswith("status-task-"):
        name, _, n = key.removeprefix("status-task-").rpartition("-")
        if name and n.isdecimal():
            return WorkUnit(name, int(n))
    return None


def encode(event: StatusEvent) -> tuple[str, bytes | None]:
    """The record that carries an event."""
    if isinstance(event, StatusRemoved):
        return status_key(event.unit), None
    status = event.status
    msg = events_pb2.StatusReported(
        connector=status.unit.connector,
        task=status.unit.task,
        state=status.state.value,
        worker_id=status.worker_id,
        trace=status.trace,
        generation=status.generation,
        plugin_version=status.plugin_version,
    )
    return status_key(status.unit), msg.SerializeToString()


_STATES = {state.value: state for state in State}


def decode(key: str, value: bytes | None) -> StatusEvent | None:
    """The event a record carries; None for a key that is not a status key."""
    unit = parse_key(key)
    if unit is None:
        return None
    if value is None:
        return StatusRemoved(unit)
    msg = events_pb2.StatusReported.FromString(value)
    return StatusReported(
        UnitStatus(
            unit,
            _STATES.get(msg.state) or State(msg.state),  # State() alone: 10x the lookup
            msg.worker_id,
            msg.trace,
            msg.generation,
            msg.plugin_version,
        )
    )


class StatusFolding:
    """Statuses being folded, report by report, without a state made per report: the map of
    connectors is changed in place, as an ``immutables`` mutation over the state it started
    from (which stays as it was), until :meth:`state` makes it a state. A replay folds the whole
    topic in one; :func:`apply` folds one event in one (as ``configstate.Folding``)."""

    __slots__ = ("_base", "_changing", "_count")

    def __init__(self, state: StatusState) -> None:
        self._base = Statuses.of(state)
        self._changing: immutables.MapMutation[str, immutables.Map[int, UnitStatus]] | None = None
        self._count = len(self._base)

    def state(self) -> Statuses:
        """The statuses folded so far (the ones it started from, when nothing changed)."""
        if self._changing is not None:
            self._base = Statuses(self._changing.finish(), self._count)
            self._changing = None
        return self._base

    def apply(self, event: StatusEvent) -> None:
        """Folds one status event in: the latest report wins, a tombstone removes.

        A report from another worker than the one last recorded, made in an older generation,
        is stale and ignored (Kafka Connect's ``putSafe``): a worker cut off from the group may
        still report on units that have run elsewhere since.
        """
        changing = self._changing
        by_connector = self._base._by_connector if changing is None else changing
        match event:
            case StatusReported(status):
                unit = status.unit
                tasks = by_connector.get(unit.connector, _NO_TASKS)
                known = tasks.get(unit.task)
                if known is None:
                    self._count += 1
                elif known.worker_id != status.worker_id and status.generation < known.generation:
                    return
                if changing is None:
                    changing = self._changing = self._base._by_connector.mutate()
                changing[unit.connector] = tasks.set(unit.task, status)
            case StatusRemoved(unit):
                held = by_connector.get(unit.connector)
                if held is None or unit.task not in held:
                    return
                if changing is None:
                    changing = self._changing = self._base._by_connector.mutate()
                left = held.delete(unit.task)
                if left:
                    changing[unit.connector] = left
                else:
                    del changing[unit.connector]
                self._count -= 1
            case _:
                raise TypeError(f"not a status event: {event!r}")


def apply(state: StatusState, event: StatusEvent) -> StatusState:
    """Folds one status event into the state (:meth:`StatusFolding.apply`)."""
    folding = StatusFolding(state)
    folding.apply(event)
    return folding.state()


@dataclass(frozen=True)
class TopicStatus:
    """A topic a connector's task used, and when it first did."""

    topic: str
    connector: str
    task: int
    discovered_ms: int


TopicState = Mapping[str, TopicStatus]
"""The topics connectors used, by the key of their record: a tombstone names the same key."""
NO_TOPICS: TopicState = immutables.Map()

TOPIC_PREFIX = "topic-"


def topic_key(connector: str, topic: str) -> str:
    """The status topic's key for one topic of one connector. Connect's own form,
    ``topic-<topic>-connector-<name>``, gives topic ``a`` of connector ``b-connector-c`` the key
    of topic ``a-connector-b`` of ``c``; a topic's name cannot hold ``:``, so the last one in
    this key always parts the two."""
    return f"{TOPIC_PREFIX}{connector}:{topic}"


def encode_topic(status: TopicStatus) -> tuple[str, bytes]:
    msg = events_pb2.TopicActive(
        topic=status.topic,
        connector=status.connector,
        task=status.task,
        discovered_ms=status.discovered_ms,
    )
    return topic_key(status.connector, status.topic), msg.SerializeToString()


def apply_topic(state: TopicState, key: str, value: bytes | None) -> TopicState:
    """Folds one record of the status topic into the topics: a ``TopicActive`` is kept under its
    key, a tombstone forgets it; a record of another kind changes nothing."""
    if not key.startswith(TOPIC_PREFIX):
        return state
    if value is None:
        return without_item(state, key) if key in state else state
    msg = events_pb2.TopicActive.FromString(value)
    return with_item(state, key, TopicStatus(msg.topic, msg.connector, msg.task, msg.discovered_ms))


def topics_of(state: TopicState, name: str) -> list[TopicStatus]:
    """The topics one connector used, by topic name."""
    return sorted((t for t in state.values() if t.connector == name), key=lambda t: t.topic)


def of_connector(state: StatusState, name: str) -> StatusState:
    """The statuses of one connector and its tasks."""
    if isinstance(state, Statuses):
        return state.connector(name)
    return MappingProxyType({u: s for u, s in state.items() if u.connector == name})
