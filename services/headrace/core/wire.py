"""Protobuf <-> the shared vocabulary (``headrace.core.structs``), for every gRPC edge and topic
codec that carries those types. Each function converts one way and does nothing else."""

from __future__ import annotations

from headrace.core.structs import (
    AssignedUnit,
    AssignmentUpdate,
    Cleanup,
    HostEvent,
    Instance,
    ReconfigurationRequested,
    Revocation,
    State,
    Target,
    UnitStateChanged,
    WorkUnit,
)
from headrace.v1 import coordinator_pb2, events_pb2, plugin_pb2


def unit_to_pb(unit: WorkUnit) -> events_pb2.WorkUnit:
    return events_pb2.WorkUnit(connector=unit.connector, task=unit.task)


def unit_from_pb(msg: events_pb2.WorkUnit) -> WorkUnit:
    return WorkUnit(msg.connector, msg.task)


def instance_to_pb(instance: Instance) -> events_pb2.RunningUnit:
    unit, incarnation = instance
    return events_pb2.RunningUnit(unit=unit_to_pb(unit), incarnation=incarnation)


def instance_from_pb(msg: events_pb2.RunningUnit) -> Instance:
    return unit_from_pb(msg.unit), msg.incarnation


def revocation_to_pb(revocation: Revocation) -> events_pb2.Revocation:
    return events_pb2.Revocation(
        unit=unit_to_pb(revocation.unit),
        deleted=revocation.deleted,
        incarnation=revocation.incarnation,
    )


def revocation_from_pb(msg: events_pb2.Revocation) -> Revocation:
    return Revocation(unit_from_pb(msg.unit), msg.deleted, msg.incarnation)


def assignment_to_pb(update: AssignmentUpdate) -> coordinator_pb2.Assignment:
    return coordinator_pb2.Assignment(
        generation=update.generation,
        units=[
            coordinator_pb2.AssignedUnit(
                unit=unit_to_pb(u.unit),
                connector_config=dict(u.connector_config),
                task_config=dict(u.task_config),
                incarnation=u.incarnation,
                target=u.target.value,
                restart=u.restart,
            )
            for u in update.units
        ],
        revoked=[revocation_to_pb(r) for r in update.revoked],
        cleanups=[
            coordinator_pb2.Cleanup(
                unit=unit_to_pb(c.unit),
                incarnation=c.incarnation,
                connector_config=dict(c.connector_config),
                task_config=dict(c.task_config),
            )
            for c in update.cleanups
        ],
    )


def assignment_from_pb(msg: coordinator_pb2.Assignment) -> AssignmentUpdate:
    return AssignmentUpdate(
        generation=msg.generation,
        units=tuple(
            AssignedUnit(
                unit_from_pb(u.unit),
                dict(u.connector_config),
                dict(u.task_config),
                u.incarnation,
                Target(u.target) if u.target else Target.RUNNING,
                u.restart,
            )
            for u in msg.units
        ),
        revoked=tuple(revocation_from_pb(r) for r in msg.revoked),
        cleanups=tuple(
            Cleanup(
                unit_from_pb(c.unit), c.incarnation, dict(c.connector_config), dict(c.task_config)
            )
            for c in msg.cleanups
        ),
    )


def host_event_to_pb(event: HostEvent) -> plugin_pb2.UnitEvent:
    match event:
        case UnitStateChanged(unit, state, trace):
            return plugin_pb2.UnitEvent(
                connector=unit.connector, task=unit.task, state=state.value, trace=trace
            )
        case ReconfigurationRequested(connector):
            return plugin_pb2.UnitEvent(
                connector=connector,
                task=WorkUnit.of(connector).task,
                reconfiguration_requested=True,
            )


def host_event_from_pb(msg: plugin_pb2.UnitEvent) -> HostEvent:
    """The event a plugin process sent; ValueError for a state this runtime does not know."""
    if msg.reconfiguration_requested:
        return ReconfigurationRequested(msg.connector)
    return UnitStateChanged(WorkUnit(msg.connector, msg.task), State(msg.state), msg.trace)
