"""The shared vocabulary: value types every service speaks, frozen and free of protobuf.

| type | what it is |
| --- | --- |
| :class:`WorkUnit` | one unit of work: a connector instance, or one of its tasks |
| :class:`State` | the observed state of a unit, as Kafka Connect reports it |
| :class:`Target` | the state an operator wants a connector in: running, paused or stopped |
| :data:`Instance` | a unit of one incarnation of its connector |
| :class:`Revocation` | a unit a worker must stop, with the deletion marker |
| :class:`AssignedUnit`, :class:`Cleanup` | a unit to run, a deletion to deliver |
| :class:`AssignmentUpdate` | what the coordinator tells one worker |
| :class:`UnitStateChanged`, :class:`ReconfigurationRequested` | what a plugin process reports |

Protobuf messages are converted to and from these at each gRPC edge (``headrace.core.model.wire``);
nothing beyond an edge handles a generated message.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum

Config = Mapping[str, str]

CONNECTOR_TASK = -1
"""The task number that stands for the connector itself, on the wire and in status keys."""


@dataclass(frozen=True, order=True)
class WorkUnit:
    """A connector instance (``task`` is :data:`CONNECTOR_TASK`) or one of its tasks.

    Units order by connector, then task, so a connector sorts before its tasks.
    """

    connector: str
    task: int = CONNECTOR_TASK

    @classmethod
    def of(cls, connector: str) -> WorkUnit:
        """The connector instance itself."""
        return cls(connector, CONNECTOR_TASK)

    @property
    def is_connector(self) -> bool:
        return self.task == CONNECTOR_TASK

    def __str__(self) -> str:
        return self.connector if self.is_connector else f"{self.connector}-{self.task}"


def tasks_first(units: Iterable[WorkUnit]) -> list[WorkUnit]:
    """Units in the order to stop them: tasks before connectors (highest task number first), as
    Kafka Connect stops a connector's tasks before the connector."""
    return sorted(units, key=lambda u: (-u.task, u.connector))


Instance = tuple[WorkUnit, str]
"""A unit of one incarnation of its connector. A connector deleted and created again under its
name is a new incarnation: its units are not the old ones, which still get their deletion."""


class State(StrEnum):
    """What a connector or task is doing, in Kafka Connect's words."""

    UNASSIGNED = "UNASSIGNED"
    RUNNING = "RUNNING"
    PAUSED = "PAUSED"
    STOPPED = "STOPPED"
    FAILED = "FAILED"
    RESTARTING = "RESTARTING"


class Target(StrEnum):
    """What an operator wants a connector and its tasks to do (Kafka Connect's target state)."""

    RUNNING = "RUNNING"
    PAUSED = "PAUSED"  # the units are kept, and no record moves
    STOPPED = "STOPPED"  # KIP-875: the connector shut down, with no tasks; its config kept


@dataclass(frozen=True, order=True)
class Revocation:
    """A unit its worker must stop; ``deleted`` is set when its connector's incarnation was
    deleted, and only then: the worker turns it into ``stop(deleted=True)``."""

    unit: WorkUnit
    deleted: bool = False
    incarnation: str = ""


@dataclass(frozen=True)
class AssignedUnit:
    """A unit a worker runs, with the configs to run it with (no task config for a connector)."""

    unit: WorkUnit
    connector_config: Config
    task_config: Config
    incarnation: str = ""
    target: Target = Target.RUNNING
    # The configs-topic offset of the last restart asked for the unit (0: none): a worker
    # restarts a unit it started before that.
    restart: int = 0
    # The configs-topic offset of the connector's config: what its task configs are put for.
    config_version: int = 0

    @property
    def instance(self) -> Instance:
        return self.unit, self.incarnation


@dataclass(frozen=True)
class Cleanup:
    """A deleted unit that runs nowhere, and whose plugin has not been told: the worker starts
    it with these configs only to stop it with ``deleted=True``."""

    unit: WorkUnit
    incarnation: str
    connector_config: Config
    task_config: Config

    @property
    def instance(self) -> Instance:
        return self.unit, self.incarnation


@dataclass(frozen=True)
class AssignmentUpdate:
    """One message from the coordinator to a worker.

    With revocations, it only says what to stop first (``units`` is what the worker keeps); the
    next update says what to run. Without, ``units`` is the whole truth of what the worker runs,
    and ``cleanups`` the deletions it is to deliver.
    """

    generation: int
    units: tuple[AssignedUnit, ...]
    revoked: tuple[Revocation, ...] = ()
    cleanups: tuple[Cleanup, ...] = ()


@dataclass(frozen=True)
class UnitStateChanged:
    """A plugin process says a unit it hosts is RUNNING, FAILED (with the trace) or STOPPED."""

    unit: WorkUnit
    state: State
    trace: str = ""


@dataclass(frozen=True)
class ReconfigurationRequested:
    """A connector asked for its task configs to be computed again."""

    connector: str


@dataclass(frozen=True)
class TopicUsed:
    """A task used a topic for the first time in this run: a source wrote to it, a sink
    consumed from it (KIP-558's topic tracking)."""

    unit: WorkUnit
    topic: str


@dataclass(frozen=True)
class DeletionHeard:
    """A plugin returned from ``stop(deleted=True)`` for a unit: it has heard of its deletion,
    though its plugin process may go on for a while closing the unit's Kafka clients."""

    unit: WorkUnit


HostEvent = UnitStateChanged | ReconfigurationRequested | TopicUsed | DeletionHeard
