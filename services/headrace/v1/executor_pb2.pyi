from headrace.v1 import coordinator_pb2 as _coordinator_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class WriteBatchRequest(_message.Message):
    __slots__ = ("connector", "task", "topic", "partition", "first_offset", "last_offset", "format", "path", "arrow_ipc", "topic_id", "options", "stream_bytes")
    class OptionsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    CONNECTOR_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    FIRST_OFFSET_FIELD_NUMBER: _ClassVar[int]
    LAST_OFFSET_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    ARROW_IPC_FIELD_NUMBER: _ClassVar[int]
    TOPIC_ID_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    STREAM_BYTES_FIELD_NUMBER: _ClassVar[int]
    connector: str
    task: int
    topic: str
    partition: int
    first_offset: int
    last_offset: int
    format: str
    path: str
    arrow_ipc: bytes
    topic_id: str
    options: _containers.ScalarMap[str, str]
    stream_bytes: int
    def __init__(self, connector: _Optional[str] = ..., task: _Optional[int] = ..., topic: _Optional[str] = ..., partition: _Optional[int] = ..., first_offset: _Optional[int] = ..., last_offset: _Optional[int] = ..., format: _Optional[str] = ..., path: _Optional[str] = ..., arrow_ipc: _Optional[bytes] = ..., topic_id: _Optional[str] = ..., options: _Optional[_Mapping[str, str]] = ..., stream_bytes: _Optional[int] = ...) -> None: ...

class WriteChunk(_message.Message):
    __slots__ = ("header", "arrow_ipc")
    HEADER_FIELD_NUMBER: _ClassVar[int]
    ARROW_IPC_FIELD_NUMBER: _ClassVar[int]
    header: WriteBatchRequest
    arrow_ipc: bytes
    def __init__(self, header: _Optional[_Union[WriteBatchRequest, _Mapping]] = ..., arrow_ipc: _Optional[bytes] = ...) -> None: ...

class WriteBatchResponse(_message.Message):
    __slots__ = ("rows_written", "rows_skipped")
    ROWS_WRITTEN_FIELD_NUMBER: _ClassVar[int]
    ROWS_SKIPPED_FIELD_NUMBER: _ClassVar[int]
    rows_written: int
    rows_skipped: int
    def __init__(self, rows_written: _Optional[int] = ..., rows_skipped: _Optional[int] = ...) -> None: ...

class CountRowsRequest(_message.Message):
    __slots__ = ("format", "path")
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    format: str
    path: str
    def __init__(self, format: _Optional[str] = ..., path: _Optional[str] = ...) -> None: ...

class CountRowsResponse(_message.Message):
    __slots__ = ("rows",)
    ROWS_FIELD_NUMBER: _ClassVar[int]
    rows: int
    def __init__(self, rows: _Optional[int] = ...) -> None: ...

class ReadRowsRequest(_message.Message):
    __slots__ = ("format", "path", "limit")
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    format: str
    path: str
    limit: int
    def __init__(self, format: _Optional[str] = ..., path: _Optional[str] = ..., limit: _Optional[int] = ...) -> None: ...

class ReadRowsResponse(_message.Message):
    __slots__ = ("arrow_ipc", "truncated")
    ARROW_IPC_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    arrow_ipc: bytes
    truncated: bool
    def __init__(self, arrow_ipc: _Optional[bytes] = ..., truncated: _Optional[bool] = ...) -> None: ...

class QueryRequest(_message.Message):
    __slots__ = ("arrow_ipc", "sql", "connector")
    ARROW_IPC_FIELD_NUMBER: _ClassVar[int]
    SQL_FIELD_NUMBER: _ClassVar[int]
    CONNECTOR_FIELD_NUMBER: _ClassVar[int]
    arrow_ipc: bytes
    sql: str
    connector: str
    def __init__(self, arrow_ipc: _Optional[bytes] = ..., sql: _Optional[str] = ..., connector: _Optional[str] = ...) -> None: ...

class QueryResponse(_message.Message):
    __slots__ = ("arrow_ipc",)
    ARROW_IPC_FIELD_NUMBER: _ClassVar[int]
    arrow_ipc: bytes
    def __init__(self, arrow_ipc: _Optional[bytes] = ...) -> None: ...

class CheckSqlRequest(_message.Message):
    __slots__ = ("sql",)
    SQL_FIELD_NUMBER: _ClassVar[int]
    sql: str
    def __init__(self, sql: _Optional[str] = ...) -> None: ...

class CheckSqlResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class SetLogLevelsResponse(_message.Message):
    __slots__ = ("changed",)
    CHANGED_FIELD_NUMBER: _ClassVar[int]
    changed: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, changed: _Optional[_Iterable[str]] = ...) -> None: ...
