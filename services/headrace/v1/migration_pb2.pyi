from headrace.v1 import config_pb2 as _config_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ConnectAccess(_message.Message):
    __slots__ = ("username", "password", "token", "ca_pem", "cert_pem", "key_pem")
    USERNAME_FIELD_NUMBER: _ClassVar[int]
    PASSWORD_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    CA_PEM_FIELD_NUMBER: _ClassVar[int]
    CERT_PEM_FIELD_NUMBER: _ClassVar[int]
    KEY_PEM_FIELD_NUMBER: _ClassVar[int]
    username: str
    password: str
    token: str
    ca_pem: str
    cert_pem: str
    key_pem: str
    def __init__(self, username: _Optional[str] = ..., password: _Optional[str] = ..., token: _Optional[str] = ..., ca_pem: _Optional[str] = ..., cert_pem: _Optional[str] = ..., key_pem: _Optional[str] = ...) -> None: ...

class StartMigrationRequest(_message.Message):
    __slots__ = ("from_url", "to_url", "connectors", "cutover", "keep", "set", "timeout_s", "connect", "worker", "install")
    class SetEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class WorkerEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    FROM_URL_FIELD_NUMBER: _ClassVar[int]
    TO_URL_FIELD_NUMBER: _ClassVar[int]
    CONNECTORS_FIELD_NUMBER: _ClassVar[int]
    CUTOVER_FIELD_NUMBER: _ClassVar[int]
    KEEP_FIELD_NUMBER: _ClassVar[int]
    SET_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_S_FIELD_NUMBER: _ClassVar[int]
    CONNECT_FIELD_NUMBER: _ClassVar[int]
    WORKER_FIELD_NUMBER: _ClassVar[int]
    INSTALL_FIELD_NUMBER: _ClassVar[int]
    from_url: str
    to_url: str
    connectors: _containers.RepeatedScalarFieldContainer[str]
    cutover: bool
    keep: bool
    set: _containers.ScalarMap[str, str]
    timeout_s: float
    connect: ConnectAccess
    worker: _containers.ScalarMap[str, str]
    install: bool
    def __init__(self, from_url: _Optional[str] = ..., to_url: _Optional[str] = ..., connectors: _Optional[_Iterable[str]] = ..., cutover: _Optional[bool] = ..., keep: _Optional[bool] = ..., set: _Optional[_Mapping[str, str]] = ..., timeout_s: _Optional[float] = ..., connect: _Optional[_Union[ConnectAccess, _Mapping]] = ..., worker: _Optional[_Mapping[str, str]] = ..., install: _Optional[bool] = ...) -> None: ...

class MigrationRequest(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    def __init__(self, id: _Optional[str] = ...) -> None: ...

class ListMigrationsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ConnectorMove(_message.Message):
    __slots__ = ("name", "type", "plugin", "version", "from_version", "offsets", "movable", "next", "blockers", "state", "steps", "error")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    PLUGIN_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    FROM_VERSION_FIELD_NUMBER: _ClassVar[int]
    OFFSETS_FIELD_NUMBER: _ClassVar[int]
    MOVABLE_FIELD_NUMBER: _ClassVar[int]
    NEXT_FIELD_NUMBER: _ClassVar[int]
    BLOCKERS_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    name: str
    type: str
    plugin: str
    version: str
    from_version: str
    offsets: _containers.RepeatedCompositeFieldContainer[_config_pb2.ConnectorOffset]
    movable: bool
    next: str
    blockers: _containers.RepeatedScalarFieldContainer[str]
    state: str
    steps: _containers.RepeatedScalarFieldContainer[str]
    error: str
    def __init__(self, name: _Optional[str] = ..., type: _Optional[str] = ..., plugin: _Optional[str] = ..., version: _Optional[str] = ..., from_version: _Optional[str] = ..., offsets: _Optional[_Iterable[_Union[_config_pb2.ConnectorOffset, _Mapping]]] = ..., movable: _Optional[bool] = ..., next: _Optional[str] = ..., blockers: _Optional[_Iterable[str]] = ..., state: _Optional[str] = ..., steps: _Optional[_Iterable[str]] = ..., error: _Optional[str] = ...) -> None: ...

class Migration(_message.Message):
    __slots__ = ("id", "state", "direction", "url", "cutover", "keep", "connectors", "moves", "error", "created", "ended")
    ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    DIRECTION_FIELD_NUMBER: _ClassVar[int]
    URL_FIELD_NUMBER: _ClassVar[int]
    CUTOVER_FIELD_NUMBER: _ClassVar[int]
    KEEP_FIELD_NUMBER: _ClassVar[int]
    CONNECTORS_FIELD_NUMBER: _ClassVar[int]
    MOVES_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    ENDED_FIELD_NUMBER: _ClassVar[int]
    id: str
    state: str
    direction: str
    url: str
    cutover: bool
    keep: bool
    connectors: _containers.RepeatedScalarFieldContainer[str]
    moves: _containers.RepeatedCompositeFieldContainer[ConnectorMove]
    error: str
    created: str
    ended: str
    def __init__(self, id: _Optional[str] = ..., state: _Optional[str] = ..., direction: _Optional[str] = ..., url: _Optional[str] = ..., cutover: _Optional[bool] = ..., keep: _Optional[bool] = ..., connectors: _Optional[_Iterable[str]] = ..., moves: _Optional[_Iterable[_Union[ConnectorMove, _Mapping]]] = ..., error: _Optional[str] = ..., created: _Optional[str] = ..., ended: _Optional[str] = ...) -> None: ...

class ListMigrationsResponse(_message.Message):
    __slots__ = ("migrations",)
    MIGRATIONS_FIELD_NUMBER: _ClassVar[int]
    migrations: _containers.RepeatedCompositeFieldContainer[Migration]
    def __init__(self, migrations: _Optional[_Iterable[_Union[Migration, _Mapping]]] = ...) -> None: ...
