from headrace.v1 import configdef_pb2 as _configdef_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class StartConnectorRequest(_message.Message):
    __slots__ = ("name", "config")
    class ConfigEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    name: str
    config: _containers.ScalarMap[str, str]
    def __init__(self, name: _Optional[str] = ..., config: _Optional[_Mapping[str, str]] = ...) -> None: ...

class TaskConfig(_message.Message):
    __slots__ = ("config",)
    class ConfigEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    config: _containers.ScalarMap[str, str]
    def __init__(self, config: _Optional[_Mapping[str, str]] = ...) -> None: ...

class StartConnectorResponse(_message.Message):
    __slots__ = ("tasks",)
    TASKS_FIELD_NUMBER: _ClassVar[int]
    tasks: _containers.RepeatedCompositeFieldContainer[TaskConfig]
    def __init__(self, tasks: _Optional[_Iterable[_Union[TaskConfig, _Mapping]]] = ...) -> None: ...

class StopRequest(_message.Message):
    __slots__ = ("connector", "task", "deleted")
    CONNECTOR_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    DELETED_FIELD_NUMBER: _ClassVar[int]
    connector: str
    task: int
    deleted: bool
    def __init__(self, connector: _Optional[str] = ..., task: _Optional[int] = ..., deleted: _Optional[bool] = ...) -> None: ...

class StopResponse(_message.Message):
    __slots__ = ("stopped",)
    STOPPED_FIELD_NUMBER: _ClassVar[int]
    stopped: bool
    def __init__(self, stopped: _Optional[bool] = ...) -> None: ...

class StartTaskRequest(_message.Message):
    __slots__ = ("connector", "task", "connector_config", "task_config")
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
    CONNECTOR_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    CONNECTOR_CONFIG_FIELD_NUMBER: _ClassVar[int]
    TASK_CONFIG_FIELD_NUMBER: _ClassVar[int]
    connector: str
    task: int
    connector_config: _containers.ScalarMap[str, str]
    task_config: _containers.ScalarMap[str, str]
    def __init__(self, connector: _Optional[str] = ..., task: _Optional[int] = ..., connector_config: _Optional[_Mapping[str, str]] = ..., task_config: _Optional[_Mapping[str, str]] = ...) -> None: ...

class StartTaskResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class CleanupRequest(_message.Message):
    __slots__ = ("connector", "task", "connector_config", "task_config")
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
    CONNECTOR_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    CONNECTOR_CONFIG_FIELD_NUMBER: _ClassVar[int]
    TASK_CONFIG_FIELD_NUMBER: _ClassVar[int]
    connector: str
    task: int
    connector_config: _containers.ScalarMap[str, str]
    task_config: _containers.ScalarMap[str, str]
    def __init__(self, connector: _Optional[str] = ..., task: _Optional[int] = ..., connector_config: _Optional[_Mapping[str, str]] = ..., task_config: _Optional[_Mapping[str, str]] = ...) -> None: ...

class KeepAliveRequest(_message.Message):
    __slots__ = ("lease_ms", "stop_ms", "log_levels")
    class LogLevelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    LEASE_MS_FIELD_NUMBER: _ClassVar[int]
    STOP_MS_FIELD_NUMBER: _ClassVar[int]
    LOG_LEVELS_FIELD_NUMBER: _ClassVar[int]
    lease_ms: int
    stop_ms: int
    log_levels: _containers.ScalarMap[str, str]
    def __init__(self, lease_ms: _Optional[int] = ..., stop_ms: _Optional[int] = ..., log_levels: _Optional[_Mapping[str, str]] = ...) -> None: ...

class KeepAliveResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ForgetTopicsRequest(_message.Message):
    __slots__ = ("connector",)
    CONNECTOR_FIELD_NUMBER: _ClassVar[int]
    connector: str
    def __init__(self, connector: _Optional[str] = ...) -> None: ...

class ForgetTopicsResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class WatchRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class UnitEvent(_message.Message):
    __slots__ = ("connector", "task", "state", "trace", "reconfiguration_requested", "active_topic", "deletion_heard")
    CONNECTOR_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    TRACE_FIELD_NUMBER: _ClassVar[int]
    RECONFIGURATION_REQUESTED_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_TOPIC_FIELD_NUMBER: _ClassVar[int]
    DELETION_HEARD_FIELD_NUMBER: _ClassVar[int]
    connector: str
    task: int
    state: str
    trace: str
    reconfiguration_requested: bool
    active_topic: str
    deletion_heard: bool
    def __init__(self, connector: _Optional[str] = ..., task: _Optional[int] = ..., state: _Optional[str] = ..., trace: _Optional[str] = ..., reconfiguration_requested: _Optional[bool] = ..., active_topic: _Optional[str] = ..., deletion_heard: _Optional[bool] = ...) -> None: ...

class DescribeRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class DescribeResponse(_message.Message):
    __slots__ = ("plugin_class", "version", "type", "components")
    PLUGIN_CLASS_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    COMPONENTS_FIELD_NUMBER: _ClassVar[int]
    plugin_class: str
    version: str
    type: str
    components: _containers.RepeatedCompositeFieldContainer[ComponentDefinition]
    def __init__(self, plugin_class: _Optional[str] = ..., version: _Optional[str] = ..., type: _Optional[str] = ..., components: _Optional[_Iterable[_Union[ComponentDefinition, _Mapping]]] = ...) -> None: ...

class ComponentDefinition(_message.Message):
    __slots__ = ("class_name", "version", "type", "defined", "keys")
    CLASS_NAME_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    DEFINED_FIELD_NUMBER: _ClassVar[int]
    KEYS_FIELD_NUMBER: _ClassVar[int]
    class_name: str
    version: str
    type: str
    defined: bool
    keys: _containers.RepeatedCompositeFieldContainer[_configdef_pb2.ConfigKeyInfo]
    def __init__(self, class_name: _Optional[str] = ..., version: _Optional[str] = ..., type: _Optional[str] = ..., defined: _Optional[bool] = ..., keys: _Optional[_Iterable[_Union[_configdef_pb2.ConfigKeyInfo, _Mapping]]] = ...) -> None: ...

class ConnectorAlterOffsetsRequest(_message.Message):
    __slots__ = ("name", "config", "offsets_json", "reset", "plugin_class")
    class ConfigEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    OFFSETS_JSON_FIELD_NUMBER: _ClassVar[int]
    RESET_FIELD_NUMBER: _ClassVar[int]
    PLUGIN_CLASS_FIELD_NUMBER: _ClassVar[int]
    name: str
    config: _containers.ScalarMap[str, str]
    offsets_json: str
    reset: bool
    plugin_class: str
    def __init__(self, name: _Optional[str] = ..., config: _Optional[_Mapping[str, str]] = ..., offsets_json: _Optional[str] = ..., reset: _Optional[bool] = ..., plugin_class: _Optional[str] = ...) -> None: ...

class ConnectorAlterOffsetsResponse(_message.Message):
    __slots__ = ("handled", "refusal")
    HANDLED_FIELD_NUMBER: _ClassVar[int]
    REFUSAL_FIELD_NUMBER: _ClassVar[int]
    handled: bool
    refusal: str
    def __init__(self, handled: _Optional[bool] = ..., refusal: _Optional[str] = ...) -> None: ...

class ValidateRequest(_message.Message):
    __slots__ = ("config", "definition_only", "plugin_class")
    class ConfigEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    DEFINITION_ONLY_FIELD_NUMBER: _ClassVar[int]
    PLUGIN_CLASS_FIELD_NUMBER: _ClassVar[int]
    config: _containers.ScalarMap[str, str]
    definition_only: bool
    plugin_class: str
    def __init__(self, config: _Optional[_Mapping[str, str]] = ..., definition_only: _Optional[bool] = ..., plugin_class: _Optional[str] = ...) -> None: ...
