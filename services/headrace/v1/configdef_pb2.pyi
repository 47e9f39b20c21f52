from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ConfigKeyInfo(_message.Message):
    __slots__ = ("name", "type", "required", "default_value", "has_default", "importance", "documentation", "group", "order_in_group", "width", "display_name", "dependents")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    REQUIRED_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_VALUE_FIELD_NUMBER: _ClassVar[int]
    HAS_DEFAULT_FIELD_NUMBER: _ClassVar[int]
    IMPORTANCE_FIELD_NUMBER: _ClassVar[int]
    DOCUMENTATION_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    ORDER_IN_GROUP_FIELD_NUMBER: _ClassVar[int]
    WIDTH_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    DEPENDENTS_FIELD_NUMBER: _ClassVar[int]
    name: str
    type: str
    required: bool
    default_value: str
    has_default: bool
    importance: str
    documentation: str
    group: str
    order_in_group: int
    width: str
    display_name: str
    dependents: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, name: _Optional[str] = ..., type: _Optional[str] = ..., required: _Optional[bool] = ..., default_value: _Optional[str] = ..., has_default: _Optional[bool] = ..., importance: _Optional[str] = ..., documentation: _Optional[str] = ..., group: _Optional[str] = ..., order_in_group: _Optional[int] = ..., width: _Optional[str] = ..., display_name: _Optional[str] = ..., dependents: _Optional[_Iterable[str]] = ...) -> None: ...

class ConfigValueInfo(_message.Message):
    __slots__ = ("name", "value", "has_value", "recommended_values", "errors", "visible")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    HAS_VALUE_FIELD_NUMBER: _ClassVar[int]
    RECOMMENDED_VALUES_FIELD_NUMBER: _ClassVar[int]
    ERRORS_FIELD_NUMBER: _ClassVar[int]
    VISIBLE_FIELD_NUMBER: _ClassVar[int]
    name: str
    value: str
    has_value: bool
    recommended_values: _containers.RepeatedScalarFieldContainer[str]
    errors: _containers.RepeatedScalarFieldContainer[str]
    visible: bool
    def __init__(self, name: _Optional[str] = ..., value: _Optional[str] = ..., has_value: _Optional[bool] = ..., recommended_values: _Optional[_Iterable[str]] = ..., errors: _Optional[_Iterable[str]] = ..., visible: _Optional[bool] = ...) -> None: ...

class ConfigInfo(_message.Message):
    __slots__ = ("definition", "value")
    DEFINITION_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    definition: ConfigKeyInfo
    value: ConfigValueInfo
    def __init__(self, definition: _Optional[_Union[ConfigKeyInfo, _Mapping]] = ..., value: _Optional[_Union[ConfigValueInfo, _Mapping]] = ...) -> None: ...

class ConfigInfos(_message.Message):
    __slots__ = ("name", "error_count", "groups", "configs")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ERROR_COUNT_FIELD_NUMBER: _ClassVar[int]
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    CONFIGS_FIELD_NUMBER: _ClassVar[int]
    name: str
    error_count: int
    groups: _containers.RepeatedScalarFieldContainer[str]
    configs: _containers.RepeatedCompositeFieldContainer[ConfigInfo]
    def __init__(self, name: _Optional[str] = ..., error_count: _Optional[int] = ..., groups: _Optional[_Iterable[str]] = ..., configs: _Optional[_Iterable[_Union[ConfigInfo, _Mapping]]] = ...) -> None: ...
