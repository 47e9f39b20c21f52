"""Protobuf <-> the shared vocabulary (``headrace.core.model.structs``), for every gRPC edge and
topic codec that carries those types. Each function converts one way and does nothing else."""

from __future__ import annotations

from headrace.core.model.configinfo import (
    ComponentKeys,
    ConfigInfo,
    ConfigInfos,
    KeyInfo,
    ValueInfo,
)
from headrace.core.model.structs import (
    AssignedUnit,
    AssignmentUpdate,
    Cleanup,
    DeletionHeard,
    HostEvent,
    Instance,
    ReconfigurationRequested,
    Revocation,
    State,
    Target,
    TopicUsed,
    UnitStateChanged,
    WorkUnit,
)
from headrace.v1 import configdef_pb2, coordinator_pb2, events_pb2, plugin_pb2


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
                config_version=u.config_version,
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
                u.config_version,
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
        case TopicUsed(unit, topic):
            return plugin_pb2.UnitEvent(
                connector=unit.connector, task=unit.task, active_topic=topic
            )
        case DeletionHeard(unit):
            return plugin_pb2.UnitEvent(
                connector=unit.connector, task=unit.task, deletion_heard=True
            )


def host_event_from_pb(msg: plugin_pb2.UnitEvent) -> HostEvent:
    """The event a plugin process sent; ValueError for a state this runtime does not know."""
    if msg.reconfiguration_requested:
        return ReconfigurationRequested(msg.connector)
    if msg.active_topic:
        return TopicUsed(WorkUnit(msg.connector, msg.task), msg.active_topic)
    if msg.deletion_heard:
        return DeletionHeard(WorkUnit(msg.connector, msg.task))
    return UnitStateChanged(WorkUnit(msg.connector, msg.task), State(msg.state), msg.trace)


def config_infos_to_pb(infos: ConfigInfos) -> configdef_pb2.ConfigInfos:
    return configdef_pb2.ConfigInfos(
        name=infos.name,
        error_count=infos.error_count,
        groups=list(infos.groups),
        configs=[
            configdef_pb2.ConfigInfo(
                definition=key_info_to_pb(c.definition), value=_value_to_pb(c.value)
            )
            for c in infos.configs
        ],
    )


def key_info_to_pb(key: KeyInfo) -> configdef_pb2.ConfigKeyInfo:
    return configdef_pb2.ConfigKeyInfo(
        name=key.name,
        type=key.type,
        required=key.required,
        default_value=key.default_value or "",
        has_default=key.default_value is not None,
        importance=key.importance,
        documentation=key.documentation,
        group=key.group,
        order_in_group=key.order_in_group,
        width=key.width,
        display_name=key.display_name,
        dependents=list(key.dependents),
    )


def _value_to_pb(value: ValueInfo) -> configdef_pb2.ConfigValueInfo:
    return configdef_pb2.ConfigValueInfo(
        name=value.name,
        value=value.value or "",
        has_value=value.value is not None,
        recommended_values=list(value.recommended_values),
        errors=list(value.errors),
        visible=value.visible,
    )


def config_infos_from_pb(msg: configdef_pb2.ConfigInfos) -> ConfigInfos:
    return ConfigInfos(
        msg.name,
        tuple(
            ConfigInfo(key_info_from_pb(c.definition), value_info_from_pb(c.value))
            for c in msg.configs
        ),
        tuple(msg.groups),
    )


def key_info_from_pb(msg: configdef_pb2.ConfigKeyInfo) -> KeyInfo:
    return KeyInfo(
        name=msg.name,
        type=msg.type,
        required=msg.required,
        default_value=msg.default_value if msg.has_default else None,
        importance=msg.importance,
        documentation=msg.documentation,
        group=msg.group,
        order_in_group=msg.order_in_group,
        width=msg.width,
        display_name=msg.display_name,
        dependents=tuple(msg.dependents),
    )


def value_info_from_pb(msg: configdef_pb2.ConfigValueInfo) -> ValueInfo:
    return ValueInfo(
        name=msg.name,
        value=msg.value if msg.has_value else None,
        recommended_values=tuple(msg.recommended_values),
        errors=tuple(msg.errors),
        visible=msg.visible,
    )


def component_keys_to_pb(component: ComponentKeys) -> plugin_pb2.ComponentDefinition:
    return plugin_pb2.ComponentDefinition(
        class_name=component.class_name,
        version=component.version,
        type=component.type,
        defined=component.keys is not None,
        keys=[key_info_to_pb(k) for k in component.keys or ()],
    )


def component_keys_from_pb(msg: plugin_pb2.ComponentDefinition) -> ComponentKeys:
    keys = tuple(key_info_from_pb(k) for k in msg.keys) if msg.defined else None
    return ComponentKeys(msg.class_name, msg.version, msg.type, keys)
