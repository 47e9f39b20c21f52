from headrace.v1 import configdef_pb2 as _configdef_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ConnectorRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class CreateConnectorRequest(_message.Message):
    __slots__ = ("name", "config", "initial_state", "initial_offsets")
    class ConfigEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    INITIAL_STATE_FIELD_NUMBER: _ClassVar[int]
    INITIAL_OFFSETS_FIELD_NUMBER: _ClassVar[int]
    name: str
    config: _containers.ScalarMap[str, str]
    initial_state: str
    initial_offsets: ConnectorOffsets
    def __init__(self, name: _Optional[str] = ..., config: _Optional[_Mapping[str, str]] = ..., initial_state: _Optional[str] = ..., initial_offsets: _Optional[_Union[ConnectorOffsets, _Mapping]] = ...) -> None: ...

class PutConnectorConfigRequest(_message.Message):
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

class PutConnectorConfigResponse(_message.Message):
    __slots__ = ("info", "created")
    INFO_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    info: ConnectorInfo
    created: bool
    def __init__(self, info: _Optional[_Union[ConnectorInfo, _Mapping]] = ..., created: _Optional[bool] = ...) -> None: ...

class PatchConnectorConfigRequest(_message.Message):
    __slots__ = ("name", "set", "remove")
    class SetEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    SET_FIELD_NUMBER: _ClassVar[int]
    REMOVE_FIELD_NUMBER: _ClassVar[int]
    name: str
    set: _containers.ScalarMap[str, str]
    remove: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, name: _Optional[str] = ..., set: _Optional[_Mapping[str, str]] = ..., remove: _Optional[_Iterable[str]] = ...) -> None: ...

class TaskRequest(_message.Message):
    __slots__ = ("name", "task")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    name: str
    task: int
    def __init__(self, name: _Optional[str] = ..., task: _Optional[int] = ...) -> None: ...

class RestartConnectorRequest(_message.Message):
    __slots__ = ("name", "include_tasks", "only_failed")
    NAME_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_TASKS_FIELD_NUMBER: _ClassVar[int]
    ONLY_FAILED_FIELD_NUMBER: _ClassVar[int]
    name: str
    include_tasks: bool
    only_failed: bool
    def __init__(self, name: _Optional[str] = ..., include_tasks: _Optional[bool] = ..., only_failed: _Optional[bool] = ...) -> None: ...

class LifecycleResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ConnectorOffset(_message.Message):
    __slots__ = ("partition", "offset")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    partition: str
    offset: str
    def __init__(self, partition: _Optional[str] = ..., offset: _Optional[str] = ...) -> None: ...

class ConnectorOffsets(_message.Message):
    __slots__ = ("offsets",)
    OFFSETS_FIELD_NUMBER: _ClassVar[int]
    offsets: _containers.RepeatedCompositeFieldContainer[ConnectorOffset]
    def __init__(self, offsets: _Optional[_Iterable[_Union[ConnectorOffset, _Mapping]]] = ...) -> None: ...

class AlterOffsetsRequest(_message.Message):
    __slots__ = ("name", "offsets")
    NAME_FIELD_NUMBER: _ClassVar[int]
    OFFSETS_FIELD_NUMBER: _ClassVar[int]
    name: str
    offsets: _containers.RepeatedCompositeFieldContainer[ConnectorOffset]
    def __init__(self, name: _Optional[str] = ..., offsets: _Optional[_Iterable[_Union[ConnectorOffset, _Mapping]]] = ...) -> None: ...

class OffsetsChanged(_message.Message):
    __slots__ = ("message",)
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    message: str
    def __init__(self, message: _Optional[str] = ...) -> None: ...

class ConnectorTopics(_message.Message):
    __slots__ = ("name", "topics")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    name: str
    topics: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, name: _Optional[str] = ..., topics: _Optional[_Iterable[str]] = ...) -> None: ...

class ValidateConfigRequest(_message.Message):
    __slots__ = ("plugin", "config")
    class ConfigEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    PLUGIN_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    plugin: str
    config: _containers.ScalarMap[str, str]
    def __init__(self, plugin: _Optional[str] = ..., config: _Optional[_Mapping[str, str]] = ...) -> None: ...

class PluginConfigRequest(_message.Message):
    __slots__ = ("plugin", "version")
    PLUGIN_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    plugin: str
    version: str
    def __init__(self, plugin: _Optional[str] = ..., version: _Optional[str] = ...) -> None: ...

class PluginConfig(_message.Message):
    __slots__ = ("keys",)
    KEYS_FIELD_NUMBER: _ClassVar[int]
    keys: _containers.RepeatedCompositeFieldContainer[_configdef_pb2.ConfigKeyInfo]
    def __init__(self, keys: _Optional[_Iterable[_Union[_configdef_pb2.ConfigKeyInfo, _Mapping]]] = ...) -> None: ...

class TaskInfo(_message.Message):
    __slots__ = ("task", "config")
    class ConfigEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    TASK_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    task: int
    config: _containers.ScalarMap[str, str]
    def __init__(self, task: _Optional[int] = ..., config: _Optional[_Mapping[str, str]] = ...) -> None: ...

class ConnectorInfo(_message.Message):
    __slots__ = ("name", "config", "tasks", "type", "target_state")
    class ConfigEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    TASKS_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    TARGET_STATE_FIELD_NUMBER: _ClassVar[int]
    name: str
    config: _containers.ScalarMap[str, str]
    tasks: _containers.RepeatedCompositeFieldContainer[TaskInfo]
    type: str
    target_state: str
    def __init__(self, name: _Optional[str] = ..., config: _Optional[_Mapping[str, str]] = ..., tasks: _Optional[_Iterable[_Union[TaskInfo, _Mapping]]] = ..., type: _Optional[str] = ..., target_state: _Optional[str] = ...) -> None: ...

class ListConnectorsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListConnectorsResponse(_message.Message):
    __slots__ = ("names",)
    NAMES_FIELD_NUMBER: _ClassVar[int]
    names: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, names: _Optional[_Iterable[str]] = ...) -> None: ...

class DeleteConnectorResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class UnitStatus(_message.Message):
    __slots__ = ("task", "state", "worker_id", "trace", "plugin_version", "auto_restart_attempts", "auto_restart_next_ms", "auto_restart_given_up")
    TASK_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    TRACE_FIELD_NUMBER: _ClassVar[int]
    PLUGIN_VERSION_FIELD_NUMBER: _ClassVar[int]
    AUTO_RESTART_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    AUTO_RESTART_NEXT_MS_FIELD_NUMBER: _ClassVar[int]
    AUTO_RESTART_GIVEN_UP_FIELD_NUMBER: _ClassVar[int]
    task: int
    state: str
    worker_id: str
    trace: str
    plugin_version: str
    auto_restart_attempts: int
    auto_restart_next_ms: int
    auto_restart_given_up: bool
    def __init__(self, task: _Optional[int] = ..., state: _Optional[str] = ..., worker_id: _Optional[str] = ..., trace: _Optional[str] = ..., plugin_version: _Optional[str] = ..., auto_restart_attempts: _Optional[int] = ..., auto_restart_next_ms: _Optional[int] = ..., auto_restart_given_up: _Optional[bool] = ...) -> None: ...

class ConnectorStatus(_message.Message):
    __slots__ = ("name", "type", "connector", "tasks")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    CONNECTOR_FIELD_NUMBER: _ClassVar[int]
    TASKS_FIELD_NUMBER: _ClassVar[int]
    name: str
    type: str
    connector: UnitStatus
    tasks: _containers.RepeatedCompositeFieldContainer[UnitStatus]
    def __init__(self, name: _Optional[str] = ..., type: _Optional[str] = ..., connector: _Optional[_Union[UnitStatus, _Mapping]] = ..., tasks: _Optional[_Iterable[_Union[UnitStatus, _Mapping]]] = ...) -> None: ...

class ListPluginsRequest(_message.Message):
    __slots__ = ("connectors_only",)
    CONNECTORS_ONLY_FIELD_NUMBER: _ClassVar[int]
    connectors_only: bool
    def __init__(self, connectors_only: _Optional[bool] = ...) -> None: ...

class PluginInfo(_message.Message):
    __slots__ = ("class_name", "type", "version", "aliases", "error")
    CLASS_NAME_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    ALIASES_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    class_name: str
    type: str
    version: str
    aliases: _containers.RepeatedScalarFieldContainer[str]
    error: str
    def __init__(self, class_name: _Optional[str] = ..., type: _Optional[str] = ..., version: _Optional[str] = ..., aliases: _Optional[_Iterable[str]] = ..., error: _Optional[str] = ...) -> None: ...

class ListPluginsResponse(_message.Message):
    __slots__ = ("plugins",)
    PLUGINS_FIELD_NUMBER: _ClassVar[int]
    plugins: _containers.RepeatedCompositeFieldContainer[PluginInfo]
    def __init__(self, plugins: _Optional[_Iterable[_Union[PluginInfo, _Mapping]]] = ...) -> None: ...

class PutTaskConfigsRequest(_message.Message):
    __slots__ = ("connector", "tasks", "incarnation", "config_version")
    CONNECTOR_FIELD_NUMBER: _ClassVar[int]
    TASKS_FIELD_NUMBER: _ClassVar[int]
    INCARNATION_FIELD_NUMBER: _ClassVar[int]
    CONFIG_VERSION_FIELD_NUMBER: _ClassVar[int]
    connector: str
    tasks: _containers.RepeatedCompositeFieldContainer[TaskInfo]
    incarnation: str
    config_version: int
    def __init__(self, connector: _Optional[str] = ..., tasks: _Optional[_Iterable[_Union[TaskInfo, _Mapping]]] = ..., incarnation: _Optional[str] = ..., config_version: _Optional[int] = ...) -> None: ...

class PutTaskConfigsResponse(_message.Message):
    __slots__ = ("changed",)
    CHANGED_FIELD_NUMBER: _ClassVar[int]
    changed: bool
    def __init__(self, changed: _Optional[bool] = ...) -> None: ...

class InstallPluginRequest(_message.Message):
    __slots__ = ("coordinate", "sha512")
    COORDINATE_FIELD_NUMBER: _ClassVar[int]
    SHA512_FIELD_NUMBER: _ClassVar[int]
    coordinate: str
    sha512: str
    def __init__(self, coordinate: _Optional[str] = ..., sha512: _Optional[str] = ...) -> None: ...

class InstalledPlugin(_message.Message):
    __slots__ = ("coordinate", "sha512", "at_ms", "plugins")
    COORDINATE_FIELD_NUMBER: _ClassVar[int]
    SHA512_FIELD_NUMBER: _ClassVar[int]
    AT_MS_FIELD_NUMBER: _ClassVar[int]
    PLUGINS_FIELD_NUMBER: _ClassVar[int]
    coordinate: str
    sha512: str
    at_ms: int
    plugins: _containers.RepeatedCompositeFieldContainer[PluginInfo]
    def __init__(self, coordinate: _Optional[str] = ..., sha512: _Optional[str] = ..., at_ms: _Optional[int] = ..., plugins: _Optional[_Iterable[_Union[PluginInfo, _Mapping]]] = ...) -> None: ...

class UninstallPluginRequest(_message.Message):
    __slots__ = ("coordinate",)
    COORDINATE_FIELD_NUMBER: _ClassVar[int]
    coordinate: str
    def __init__(self, coordinate: _Optional[str] = ...) -> None: ...

class UninstallPluginResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListInstalledPluginsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListInstalledPluginsResponse(_message.Message):
    __slots__ = ("plugins",)
    PLUGINS_FIELD_NUMBER: _ClassVar[int]
    plugins: _containers.RepeatedCompositeFieldContainer[InstalledPlugin]
    def __init__(self, plugins: _Optional[_Iterable[_Union[InstalledPlugin, _Mapping]]] = ...) -> None: ...
