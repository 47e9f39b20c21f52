from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ConnectorConfigured(_message.Message):
    __slots__ = ("name", "config", "incarnation")
    class ConfigEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    INCARNATION_FIELD_NUMBER: _ClassVar[int]
    name: str
    config: _containers.ScalarMap[str, str]
    incarnation: str
    def __init__(self, name: _Optional[str] = ..., config: _Optional[_Mapping[str, str]] = ..., incarnation: _Optional[str] = ...) -> None: ...

class SessionKeyCreated(_message.Message):
    __slots__ = ("key", "created_ms")
    KEY_FIELD_NUMBER: _ClassVar[int]
    CREATED_MS_FIELD_NUMBER: _ClassVar[int]
    key: bytes
    created_ms: int
    def __init__(self, key: _Optional[bytes] = ..., created_ms: _Optional[int] = ...) -> None: ...

class PluginInstalled(_message.Message):
    __slots__ = ("coordinate", "sha512", "at_ms")
    COORDINATE_FIELD_NUMBER: _ClassVar[int]
    SHA512_FIELD_NUMBER: _ClassVar[int]
    AT_MS_FIELD_NUMBER: _ClassVar[int]
    coordinate: str
    sha512: str
    at_ms: int
    def __init__(self, coordinate: _Optional[str] = ..., sha512: _Optional[str] = ..., at_ms: _Optional[int] = ...) -> None: ...

class TaskConfigured(_message.Message):
    __slots__ = ("connector", "task", "config")
    class ConfigEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    CONNECTOR_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    connector: str
    task: int
    config: _containers.ScalarMap[str, str]
    def __init__(self, connector: _Optional[str] = ..., task: _Optional[int] = ..., config: _Optional[_Mapping[str, str]] = ...) -> None: ...

class TasksCommitted(_message.Message):
    __slots__ = ("connector", "task_count", "config_version", "signed_at_ms")
    CONNECTOR_FIELD_NUMBER: _ClassVar[int]
    TASK_COUNT_FIELD_NUMBER: _ClassVar[int]
    CONFIG_VERSION_FIELD_NUMBER: _ClassVar[int]
    SIGNED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    connector: str
    task_count: int
    config_version: int
    signed_at_ms: int
    def __init__(self, connector: _Optional[str] = ..., task_count: _Optional[int] = ..., config_version: _Optional[int] = ..., signed_at_ms: _Optional[int] = ...) -> None: ...

class TargetStateChanged(_message.Message):
    __slots__ = ("connector", "state")
    CONNECTOR_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    connector: str
    state: str
    def __init__(self, connector: _Optional[str] = ..., state: _Optional[str] = ...) -> None: ...

class RestartRequested(_message.Message):
    __slots__ = ("connector", "tasks")
    CONNECTOR_FIELD_NUMBER: _ClassVar[int]
    TASKS_FIELD_NUMBER: _ClassVar[int]
    connector: str
    tasks: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, connector: _Optional[str] = ..., tasks: _Optional[_Iterable[int]] = ...) -> None: ...

class AutoRestarts(_message.Message):
    __slots__ = ("connector", "units")
    CONNECTOR_FIELD_NUMBER: _ClassVar[int]
    UNITS_FIELD_NUMBER: _ClassVar[int]
    connector: str
    units: _containers.RepeatedCompositeFieldContainer[AutoRestart]
    def __init__(self, connector: _Optional[str] = ..., units: _Optional[_Iterable[_Union[AutoRestart, _Mapping]]] = ...) -> None: ...

class AutoRestart(_message.Message):
    __slots__ = ("task", "attempt", "at_ms")
    TASK_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    AT_MS_FIELD_NUMBER: _ClassVar[int]
    task: int
    attempt: int
    at_ms: int
    def __init__(self, task: _Optional[int] = ..., attempt: _Optional[int] = ..., at_ms: _Optional[int] = ...) -> None: ...

class RequestApplied(_message.Message):
    __slots__ = ("method", "connector", "created", "applied_at_ms")
    METHOD_FIELD_NUMBER: _ClassVar[int]
    CONNECTOR_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    APPLIED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    method: str
    connector: str
    created: bool
    applied_at_ms: int
    def __init__(self, method: _Optional[str] = ..., connector: _Optional[str] = ..., created: _Optional[bool] = ..., applied_at_ms: _Optional[int] = ...) -> None: ...

class StatusReported(_message.Message):
    __slots__ = ("connector", "task", "state", "worker_id", "trace", "generation", "plugin_version")
    CONNECTOR_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    TRACE_FIELD_NUMBER: _ClassVar[int]
    GENERATION_FIELD_NUMBER: _ClassVar[int]
    PLUGIN_VERSION_FIELD_NUMBER: _ClassVar[int]
    connector: str
    task: int
    state: str
    worker_id: str
    trace: str
    generation: int
    plugin_version: str
    def __init__(self, connector: _Optional[str] = ..., task: _Optional[int] = ..., state: _Optional[str] = ..., worker_id: _Optional[str] = ..., trace: _Optional[str] = ..., generation: _Optional[int] = ..., plugin_version: _Optional[str] = ...) -> None: ...

class LoggerLevelSet(_message.Message):
    __slots__ = ("logger", "level", "at_ms")
    LOGGER_FIELD_NUMBER: _ClassVar[int]
    LEVEL_FIELD_NUMBER: _ClassVar[int]
    AT_MS_FIELD_NUMBER: _ClassVar[int]
    logger: str
    level: str
    at_ms: int
    def __init__(self, logger: _Optional[str] = ..., level: _Optional[str] = ..., at_ms: _Optional[int] = ...) -> None: ...

class TopicsReset(_message.Message):
    __slots__ = ("connector", "at_ms")
    CONNECTOR_FIELD_NUMBER: _ClassVar[int]
    AT_MS_FIELD_NUMBER: _ClassVar[int]
    connector: str
    at_ms: int
    def __init__(self, connector: _Optional[str] = ..., at_ms: _Optional[int] = ...) -> None: ...

class TopicActive(_message.Message):
    __slots__ = ("topic", "connector", "task", "discovered_ms")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    CONNECTOR_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    DISCOVERED_MS_FIELD_NUMBER: _ClassVar[int]
    topic: str
    connector: str
    task: int
    discovered_ms: int
    def __init__(self, topic: _Optional[str] = ..., connector: _Optional[str] = ..., task: _Optional[int] = ..., discovered_ms: _Optional[int] = ...) -> None: ...

class WorkUnit(_message.Message):
    __slots__ = ("connector", "task")
    CONNECTOR_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    connector: str
    task: int
    def __init__(self, connector: _Optional[str] = ..., task: _Optional[int] = ...) -> None: ...

class RunningUnit(_message.Message):
    __slots__ = ("unit", "incarnation")
    UNIT_FIELD_NUMBER: _ClassVar[int]
    INCARNATION_FIELD_NUMBER: _ClassVar[int]
    unit: WorkUnit
    incarnation: str
    def __init__(self, unit: _Optional[_Union[WorkUnit, _Mapping]] = ..., incarnation: _Optional[str] = ...) -> None: ...

class Revocation(_message.Message):
    __slots__ = ("unit", "deleted", "incarnation")
    UNIT_FIELD_NUMBER: _ClassVar[int]
    DELETED_FIELD_NUMBER: _ClassVar[int]
    INCARNATION_FIELD_NUMBER: _ClassVar[int]
    unit: WorkUnit
    deleted: bool
    incarnation: str
    def __init__(self, unit: _Optional[_Union[WorkUnit, _Mapping]] = ..., deleted: _Optional[bool] = ..., incarnation: _Optional[str] = ...) -> None: ...

class MemberUnits(_message.Message):
    __slots__ = ("worker_id", "units", "revoked")
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    UNITS_FIELD_NUMBER: _ClassVar[int]
    REVOKED_FIELD_NUMBER: _ClassVar[int]
    worker_id: str
    units: _containers.RepeatedCompositeFieldContainer[RunningUnit]
    revoked: _containers.RepeatedCompositeFieldContainer[Revocation]
    def __init__(self, worker_id: _Optional[str] = ..., units: _Optional[_Iterable[_Union[RunningUnit, _Mapping]]] = ..., revoked: _Optional[_Iterable[_Union[Revocation, _Mapping]]] = ...) -> None: ...

class PendingDeletion(_message.Message):
    __slots__ = ("unit", "incarnation", "connector_config", "task_config", "owner")
    class ConnectorConfigEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class TaskConfigEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    UNIT_FIELD_NUMBER: _ClassVar[int]
    INCARNATION_FIELD_NUMBER: _ClassVar[int]
    CONNECTOR_CONFIG_FIELD_NUMBER: _ClassVar[int]
    TASK_CONFIG_FIELD_NUMBER: _ClassVar[int]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    unit: WorkUnit
    incarnation: str
    connector_config: _containers.ScalarMap[str, str]
    task_config: _containers.ScalarMap[str, str]
    owner: str
    def __init__(self, unit: _Optional[_Union[WorkUnit, _Mapping]] = ..., incarnation: _Optional[str] = ..., connector_config: _Optional[_Mapping[str, str]] = ..., task_config: _Optional[_Mapping[str, str]] = ..., owner: _Optional[str] = ...) -> None: ...

class GenerationRecorded(_message.Message):
    __slots__ = ("generation", "members", "departed", "pending", "recorded_at_ms", "coordinator", "unassigned")
    GENERATION_FIELD_NUMBER: _ClassVar[int]
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    DEPARTED_FIELD_NUMBER: _ClassVar[int]
    PENDING_FIELD_NUMBER: _ClassVar[int]
    RECORDED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    COORDINATOR_FIELD_NUMBER: _ClassVar[int]
    UNASSIGNED_FIELD_NUMBER: _ClassVar[int]
    generation: int
    members: _containers.RepeatedCompositeFieldContainer[MemberUnits]
    departed: _containers.RepeatedCompositeFieldContainer[MemberUnits]
    pending: _containers.RepeatedCompositeFieldContainer[PendingDeletion]
    recorded_at_ms: int
    coordinator: str
    unassigned: _containers.RepeatedCompositeFieldContainer[RunningUnit]
    def __init__(self, generation: _Optional[int] = ..., members: _Optional[_Iterable[_Union[MemberUnits, _Mapping]]] = ..., departed: _Optional[_Iterable[_Union[MemberUnits, _Mapping]]] = ..., pending: _Optional[_Iterable[_Union[PendingDeletion, _Mapping]]] = ..., recorded_at_ms: _Optional[int] = ..., coordinator: _Optional[str] = ..., unassigned: _Optional[_Iterable[_Union[RunningUnit, _Mapping]]] = ...) -> None: ...

class DeletionTold(_message.Message):
    __slots__ = ("unit", "incarnation", "worker_id", "told_at_ms")
    UNIT_FIELD_NUMBER: _ClassVar[int]
    INCARNATION_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    TOLD_AT_MS_FIELD_NUMBER: _ClassVar[int]
    unit: WorkUnit
    incarnation: str
    worker_id: str
    told_at_ms: int
    def __init__(self, unit: _Optional[_Union[WorkUnit, _Mapping]] = ..., incarnation: _Optional[str] = ..., worker_id: _Optional[str] = ..., told_at_ms: _Optional[int] = ...) -> None: ...
