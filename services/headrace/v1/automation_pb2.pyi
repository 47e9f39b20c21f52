from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Optional as _Optional

DESCRIPTOR: _descriptor.FileDescriptor

class Command(_message.Message):
    __slots__ = ("id", "method", "request")
    ID_FIELD_NUMBER: _ClassVar[int]
    METHOD_FIELD_NUMBER: _ClassVar[int]
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    id: str
    method: str
    request: bytes
    def __init__(self, id: _Optional[str] = ..., method: _Optional[str] = ..., request: _Optional[bytes] = ...) -> None: ...

class CommandResult(_message.Message):
    __slots__ = ("id", "code", "message", "response")
    ID_FIELD_NUMBER: _ClassVar[int]
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_FIELD_NUMBER: _ClassVar[int]
    id: str
    code: str
    message: str
    response: bytes
    def __init__(self, id: _Optional[str] = ..., code: _Optional[str] = ..., message: _Optional[str] = ..., response: _Optional[bytes] = ...) -> None: ...
