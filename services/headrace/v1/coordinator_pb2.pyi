from headrace.v1 import events_pb2 as _events_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Join(_message.Message):
    __slots__ = ("worker_id", "running", "delivered")
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    RUNNING_FIELD_NUMBER: _ClassVar[int]
    DELIVERED_FIELD_NUMBER: _ClassVar[int]
    worker_id: str
    running: _containers.RepeatedCompositeFieldContainer[_events_pb2.RunningUnit]
    delivered: _containers.RepeatedCompositeFieldContainer[_events_pb2.RunningUnit]
    def __init__(self, worker_id: _Optional[str] = ..., running: _Optional[_Iterable[_Union[_events_pb2.RunningUnit, _Mapping]]] = ..., delivered: _Optional[_Iterable[_Union[_events_pb2.RunningUnit, _Mapping]]] = ...) -> None: ...

class Heartbeat(_message.Message):
    __slots__ = ("sequence",)
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    sequence: int
    def __init__(self, sequence: _Optional[int] = ...) -> None: ...

class RevocationsDone(_message.Message):
    __slots__ = ("generation",)
    GENERATION_FIELD_NUMBER: _ClassVar[int]
    generation: int
    def __init__(self, generation: _Optional[int] = ...) -> None: ...

class DeletionsDone(_message.Message):
    __slots__ = ("units",)
    UNITS_FIELD_NUMBER: _ClassVar[int]
    units: _containers.RepeatedCompositeFieldContainer[_events_pb2.RunningUnit]
    def __init__(self, units: _Optional[_Iterable[_Union[_events_pb2.RunningUnit, _Mapping]]] = ...) -> None: ...

class Leave(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class WorkerMessage(_message.Message):
    __slots__ = ("join", "heartbeat", "revocations_done", "deletions_done", "leave")
    JOIN_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_FIELD_NUMBER: _ClassVar[int]
    REVOCATIONS_DONE_FIELD_NUMBER: _ClassVar[int]
    DELETIONS_DONE_FIELD_NUMBER: _ClassVar[int]
    LEAVE_FIELD_NUMBER: _ClassVar[int]
    join: Join
    heartbeat: Heartbeat
    revocations_done: RevocationsDone
    deletions_done: DeletionsDone
    leave: Leave
    def __init__(self, join: _Optional[_Union[Join, _Mapping]] = ..., heartbeat: _Optional[_Union[Heartbeat, _Mapping]] = ..., revocations_done: _Optional[_Union[RevocationsDone, _Mapping]] = ..., deletions_done: _Optional[_Union[DeletionsDone, _Mapping]] = ..., leave: _Optional[_Union[Leave, _Mapping]] = ...) -> None: ...

class AssignedUnit(_message.Message):
    __slots__ = ("unit", "connector_config", "task_config", "incarnation", "target", "restart", "config_version")
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
    CONNECTOR_CONFIG_FIELD_NUMBER: _ClassVar[int]
    TASK_CONFIG_FIELD_NUMBER: _ClassVar[int]
    INCARNATION_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    RESTART_FIELD_NUMBER: _ClassVar[int]
    CONFIG_VERSION_FIELD_NUMBER: _ClassVar[int]
    unit: _events_pb2.WorkUnit
    connector_config: _containers.ScalarMap[str, str]
    task_config: _containers.ScalarMap[str, str]
    incarnation: str
    target: str
    restart: int
    config_version: int
    def __init__(self, unit: _Optional[_Union[_events_pb2.WorkUnit, _Mapping]] = ..., connector_config: _Optional[_Mapping[str, str]] = ..., task_config: _Optional[_Mapping[str, str]] = ..., incarnation: _Optional[str] = ..., target: _Optional[str] = ..., restart: _Optional[int] = ..., config_version: _Optional[int] = ...) -> None: ...

class Cleanup(_message.Message):
    __slots__ = ("unit", "incarnation", "connector_config", "task_config")
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
    unit: _events_pb2.WorkUnit
    incarnation: str
    connector_config: _containers.ScalarMap[str, str]
    task_config: _containers.ScalarMap[str, str]
    def __init__(self, unit: _Optional[_Union[_events_pb2.WorkUnit, _Mapping]] = ..., incarnation: _Optional[str] = ..., connector_config: _Optional[_Mapping[str, str]] = ..., task_config: _Optional[_Mapping[str, str]] = ...) -> None: ...

class Assignment(_message.Message):
    __slots__ = ("generation", "units", "revoked", "cleanups")
    GENERATION_FIELD_NUMBER: _ClassVar[int]
    UNITS_FIELD_NUMBER: _ClassVar[int]
    REVOKED_FIELD_NUMBER: _ClassVar[int]
    CLEANUPS_FIELD_NUMBER: _ClassVar[int]
    generation: int
    units: _containers.RepeatedCompositeFieldContainer[AssignedUnit]
    revoked: _containers.RepeatedCompositeFieldContainer[_events_pb2.Revocation]
    cleanups: _containers.RepeatedCompositeFieldContainer[Cleanup]
    def __init__(self, generation: _Optional[int] = ..., units: _Optional[_Iterable[_Union[AssignedUnit, _Mapping]]] = ..., revoked: _Optional[_Iterable[_Union[_events_pb2.Revocation, _Mapping]]] = ..., cleanups: _Optional[_Iterable[_Union[Cleanup, _Mapping]]] = ...) -> None: ...

class Welcome(_message.Message):
    __slots__ = ("session_timeout_ms", "coordinator")
    SESSION_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    COORDINATOR_FIELD_NUMBER: _ClassVar[int]
    session_timeout_ms: int
    coordinator: str
    def __init__(self, session_timeout_ms: _Optional[int] = ..., coordinator: _Optional[str] = ...) -> None: ...

class HeartbeatAck(_message.Message):
    __slots__ = ("sequence",)
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    sequence: int
    def __init__(self, sequence: _Optional[int] = ...) -> None: ...

class LogLevel(_message.Message):
    __slots__ = ("level", "at_ms")
    LEVEL_FIELD_NUMBER: _ClassVar[int]
    AT_MS_FIELD_NUMBER: _ClassVar[int]
    level: str
    at_ms: int
    def __init__(self, level: _Optional[str] = ..., at_ms: _Optional[int] = ...) -> None: ...

class LogLevels(_message.Message):
    __slots__ = ("levels",)
    class LevelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: LogLevel
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[LogLevel, _Mapping]] = ...) -> None: ...
    LEVELS_FIELD_NUMBER: _ClassVar[int]
    levels: _containers.MessageMap[str, LogLevel]
    def __init__(self, levels: _Optional[_Mapping[str, LogLevel]] = ...) -> None: ...

class InstalledPlugins(_message.Message):
    __slots__ = ("sha512",)
    class Sha512Entry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    SHA512_FIELD_NUMBER: _ClassVar[int]
    sha512: _containers.ScalarMap[str, str]
    def __init__(self, sha512: _Optional[_Mapping[str, str]] = ...) -> None: ...

class CoordinatorMessage(_message.Message):
    __slots__ = ("assignment", "welcome", "heartbeat_ack", "log_levels", "topics_reset", "plugins")
    ASSIGNMENT_FIELD_NUMBER: _ClassVar[int]
    WELCOME_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_ACK_FIELD_NUMBER: _ClassVar[int]
    LOG_LEVELS_FIELD_NUMBER: _ClassVar[int]
    TOPICS_RESET_FIELD_NUMBER: _ClassVar[int]
    PLUGINS_FIELD_NUMBER: _ClassVar[int]
    assignment: Assignment
    welcome: Welcome
    heartbeat_ack: HeartbeatAck
    log_levels: LogLevels
    topics_reset: _events_pb2.TopicsReset
    plugins: InstalledPlugins
    def __init__(self, assignment: _Optional[_Union[Assignment, _Mapping]] = ..., welcome: _Optional[_Union[Welcome, _Mapping]] = ..., heartbeat_ack: _Optional[_Union[HeartbeatAck, _Mapping]] = ..., log_levels: _Optional[_Union[LogLevels, _Mapping]] = ..., topics_reset: _Optional[_Union[_events_pb2.TopicsReset, _Mapping]] = ..., plugins: _Optional[_Union[InstalledPlugins, _Mapping]] = ...) -> None: ...

class HistoryRequest(_message.Message):
    __slots__ = ("last",)
    LAST_FIELD_NUMBER: _ClassVar[int]
    last: int
    def __init__(self, last: _Optional[int] = ...) -> None: ...

class MemberLoad(_message.Message):
    __slots__ = ("worker_id", "connectors", "tasks")
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    CONNECTORS_FIELD_NUMBER: _ClassVar[int]
    TASKS_FIELD_NUMBER: _ClassVar[int]
    worker_id: str
    connectors: int
    tasks: int
    def __init__(self, worker_id: _Optional[str] = ..., connectors: _Optional[int] = ..., tasks: _Optional[int] = ...) -> None: ...

class UnitMove(_message.Message):
    __slots__ = ("unit", "from_worker", "to_worker")
    UNIT_FIELD_NUMBER: _ClassVar[int]
    FROM_WORKER_FIELD_NUMBER: _ClassVar[int]
    TO_WORKER_FIELD_NUMBER: _ClassVar[int]
    unit: str
    from_worker: str
    to_worker: str
    def __init__(self, unit: _Optional[str] = ..., from_worker: _Optional[str] = ..., to_worker: _Optional[str] = ...) -> None: ...

class RevokedUnit(_message.Message):
    __slots__ = ("unit", "deleted")
    UNIT_FIELD_NUMBER: _ClassVar[int]
    DELETED_FIELD_NUMBER: _ClassVar[int]
    unit: str
    deleted: bool
    def __init__(self, unit: _Optional[str] = ..., deleted: _Optional[bool] = ...) -> None: ...

class MemberRevocations(_message.Message):
    __slots__ = ("worker_id", "units")
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    UNITS_FIELD_NUMBER: _ClassVar[int]
    worker_id: str
    units: _containers.RepeatedCompositeFieldContainer[RevokedUnit]
    def __init__(self, worker_id: _Optional[str] = ..., units: _Optional[_Iterable[_Union[RevokedUnit, _Mapping]]] = ...) -> None: ...

class DepartedMember(_message.Message):
    __slots__ = ("worker_id", "units")
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    UNITS_FIELD_NUMBER: _ClassVar[int]
    worker_id: str
    units: int
    def __init__(self, worker_id: _Optional[str] = ..., units: _Optional[int] = ...) -> None: ...

class OwedDeletion(_message.Message):
    __slots__ = ("unit", "incarnation", "owner", "connector_class", "plugin_version", "connector")
    UNIT_FIELD_NUMBER: _ClassVar[int]
    INCARNATION_FIELD_NUMBER: _ClassVar[int]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    CONNECTOR_CLASS_FIELD_NUMBER: _ClassVar[int]
    PLUGIN_VERSION_FIELD_NUMBER: _ClassVar[int]
    CONNECTOR_FIELD_NUMBER: _ClassVar[int]
    unit: str
    incarnation: str
    owner: str
    connector_class: str
    plugin_version: str
    connector: str
    def __init__(self, unit: _Optional[str] = ..., incarnation: _Optional[str] = ..., owner: _Optional[str] = ..., connector_class: _Optional[str] = ..., plugin_version: _Optional[str] = ..., connector: _Optional[str] = ...) -> None: ...

class GenerationSummary(_message.Message):
    __slots__ = ("generation", "recorded_at_ms", "coordinator", "members", "new_units", "moved", "revoked", "departed", "pending_deletions")
    GENERATION_FIELD_NUMBER: _ClassVar[int]
    RECORDED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    COORDINATOR_FIELD_NUMBER: _ClassVar[int]
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    NEW_UNITS_FIELD_NUMBER: _ClassVar[int]
    MOVED_FIELD_NUMBER: _ClassVar[int]
    REVOKED_FIELD_NUMBER: _ClassVar[int]
    DEPARTED_FIELD_NUMBER: _ClassVar[int]
    PENDING_DELETIONS_FIELD_NUMBER: _ClassVar[int]
    generation: int
    recorded_at_ms: int
    coordinator: str
    members: _containers.RepeatedCompositeFieldContainer[MemberLoad]
    new_units: _containers.RepeatedScalarFieldContainer[str]
    moved: _containers.RepeatedCompositeFieldContainer[UnitMove]
    revoked: _containers.RepeatedCompositeFieldContainer[MemberRevocations]
    departed: _containers.RepeatedCompositeFieldContainer[DepartedMember]
    pending_deletions: _containers.RepeatedCompositeFieldContainer[OwedDeletion]
    def __init__(self, generation: _Optional[int] = ..., recorded_at_ms: _Optional[int] = ..., coordinator: _Optional[str] = ..., members: _Optional[_Iterable[_Union[MemberLoad, _Mapping]]] = ..., new_units: _Optional[_Iterable[str]] = ..., moved: _Optional[_Iterable[_Union[UnitMove, _Mapping]]] = ..., revoked: _Optional[_Iterable[_Union[MemberRevocations, _Mapping]]] = ..., departed: _Optional[_Iterable[_Union[DepartedMember, _Mapping]]] = ..., pending_deletions: _Optional[_Iterable[_Union[OwedDeletion, _Mapping]]] = ...) -> None: ...

class HistoryResponse(_message.Message):
    __slots__ = ("generations",)
    GENERATIONS_FIELD_NUMBER: _ClassVar[int]
    generations: _containers.RepeatedCompositeFieldContainer[GenerationSummary]
    def __init__(self, generations: _Optional[_Iterable[_Union[GenerationSummary, _Mapping]]] = ...) -> None: ...
