from headrace.v1 import config_pb2 as _config_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ReadOffsetsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class OffsetRecord(_message.Message):
    __slots__ = ("key", "value", "offset")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    key: str
    value: bytes
    offset: int
    def __init__(self, key: _Optional[str] = ..., value: _Optional[bytes] = ..., offset: _Optional[int] = ...) -> None: ...

class OffsetRecords(_message.Message):
    __slots__ = ("records", "durable")
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    DURABLE_FIELD_NUMBER: _ClassVar[int]
    records: _containers.RepeatedCompositeFieldContainer[OffsetRecord]
    durable: bool
    def __init__(self, records: _Optional[_Iterable[_Union[OffsetRecord, _Mapping]]] = ..., durable: _Optional[bool] = ...) -> None: ...

class AppendOffsetsResponse(_message.Message):
    __slots__ = ("offsets",)
    OFFSETS_FIELD_NUMBER: _ClassVar[int]
    offsets: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, offsets: _Optional[_Iterable[int]] = ...) -> None: ...
