"""Observed state: what each connector and task is doing, as reported by the workers.

The protocol of the status topic (``<cluster>-status``, several partitions, compacted):

| key | value |
| --- | --- |
| ``status-connector-<name>`` | ``StatusReported`` with task = -1 |
| ``status-task-<name>-<n>`` | ``StatusReported`` for task n |
| either | tombstone: the unit no longer exists (its connector was deleted) |

Workers write it; the config service and the CLI read it. Records of one key always land on one
partition, so the latest record per key is the unit's status. The fold keeps no history.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType

from headrace.v1 import events_pb2

CONNECTOR = -1


class State(StrEnum):
    UNASSIGNED = "UNASSIGNED"
    RUNNING = "RUNNING"
    PAUSED = "PAUSED"
    STOPPED = "STOPPED"
    FAILED = "FAILED"
    RESTARTING = "RESTARTING"


@dataclass(frozen=True)
class UnitStatus:
    """The last reported state of a connector (task = -1) or one of its tasks."""

    connector: str
    task: int
    state: State
    worker_id: str = ""
    trace: str = ""
    generation: int = 0
    plugin_version: str = ""


Unit = tuple[str, int]
StatusState = Mapping[Unit, UnitStatus]


def status_key(connector: str, task: int) -> str:
    if task == CONNECTOR:
        return f"status-connector-{connector}"
    return f"status-task-{connector}-{task}"


def parse_key(key: str) -> Unit | None:
    if key.startswith("status-connector-"):
        return key.removeprefix("status-connector-"), CONNECTOR
    if key.startswith("status-task-"):
        name, _, n = key.removeprefix("status-task-").rpartition("-")
        if name and n.isdigit():
            return name, int(n)
    return None


def encode(status: UnitStatus) -> tuple[str, bytes]:
    msg = events_pb2.StatusReported(
        connector=status.connector,
        task=status.task,
        state=status.state.value,
        worker_id=status.worker_id,
        trace=status.trace,
        generation=status.generation,
        plugin_version=status.plugin_version,
    )
    return status_key(status.connector, status.task), msg.SerializeToString()


def apply(state: StatusState, key: str, value: bytes | None) -> StatusState:
    """Folds one record of the status topic into the state."""
    unit = parse_key(key)
    if unit is None:
        return state
    updated = dict(state)
    if value is None:
        updated.pop(unit, None)
    else:
        msg = events_pb2.StatusReported.FromString(value)
        updated[unit] = UnitStatus(
            msg.connector,
            msg.task,
            State(msg.state),
            msg.worker_id,
            msg.trace,
            msg.generation,
            msg.plugin_version,
        )
    return MappingProxyType(updated)
