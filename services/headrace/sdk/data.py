"""A minimal Connect data model: ``Schema`` and ``Struct`` (``org.apache.kafka.connect.data``).

Enough for structured records and the JSON converter with schemas: the primitive types, arrays,
maps and structs, each optional or not, with an optional name, version, doc and default.
Python values per type: int for INT8..INT64, float for FLOAT32/FLOAT64, bool, str, bytes, list,
dict, and ``Struct`` for STRUCT.

    PERSON = Schema.struct(
        [("name", STRING_SCHEMA), ("age", INT32_SCHEMA), ("admin", OPTIONAL_BOOLEAN_SCHEMA)],
        name="Person",
    )
    barbara = Struct(PERSON).put("name", "Barbara Liskov").put("age", 75)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from headrace.sdk.errors import DataError


class Type(StrEnum):
    """Schema types, spelled as in Connect's JSON schema envelope."""

    INT8 = "int8"
    INT16 = "int16"
    INT32 = "int32"
    INT64 = "int64"
    FLOAT32 = "float"
    FLOAT64 = "double"
    BOOLEAN = "boolean"
    STRING = "string"
    BYTES = "bytes"
    ARRAY = "array"
    MAP = "map"
    STRUCT = "struct"

    @property
    def is_primitive(self) -> bool:
        return self not in (Type.ARRAY, Type.MAP, Type.STRUCT)


_INT_BOUNDS = {
    Type.INT8: 2**7,
    Type.INT16: 2**15,
    Type.INT32: 2**31,
    Type.INT64: 2**63,
}


@dataclass(frozen=True)
class Field:
    """A named, positioned field of a struct schema."""

    name: str
    index: int
    schema: Schema


@dataclass(frozen=True)
class Schema:
    """The type of a value. Immutable; derive variants with ``as_optional`` or ``replace``.

    ``value_schema`` is the element type of an ARRAY and the value type of a MAP;
    ``key_schema`` the key type of a MAP; ``fields`` the fields of a STRUCT.
    """

    type: Type
    optional: bool = False
    name: str | None = None
    version: int | None = None
    doc: str | None = None
    default: Any = None
    fields: tuple[Field, ...] = ()
    key_schema: Schema | None = None
    value_schema: Schema | None = None

    @staticmethod
    def struct(
        fields: Iterable[tuple[str, Schema]], name: str | None = None, optional: bool = False
    ) -> Schema:
        """A struct schema with fields in the given order."""
        built = tuple(Field(n, i, s) for i, (n, s) in enumerate(fields))
        if len({f.name for f in built}) != len(built):
            raise DataError(f"struct {name or '<anonymous>'} has duplicate field names")
        return Schema(Type.STRUCT, optional=optional, name=name, fields=built)

    @staticmethod
    def array(items: Schema, optional: bool = False) -> Schema:
        """An array schema whose elements have schema ``items``."""
        return Schema(Type.ARRAY, optional=optional, value_schema=items)

    @staticmethod
    def map(keys: Schema, values: Schema, optional: bool = False) -> Schema:
        """A map schema from ``keys`` to ``values``."""
        return Schema(Type.MAP, optional=optional, key_schema=keys, value_schema=values)

    def as_optional(self) -> Schema:
        return replace(self, optional=True)

    def field(self, name: str) -> Field:
        """The struct field called ``name``; DataError if there is none."""
        for f in self.fields:
            if f.name == name:
                return f
        raise DataError(f"{name!r} is not a field of struct {self.name or '<anonymous>'}")

    def validate_value(self, value: Any) -> None:
        """Raises DataError when ``value`` does not fit this schema."""
        if value is None:
            if self.optional or self.default is not None:
                return
            raise DataError(f"null value for a required {self.type} schema")
        check = _CHECKS[self.type]
        check(self, value)


def _check_int(schema: Schema, value: Any) -> None:
    bound = _INT_BOUNDS[schema.type]
    if isinstance(value, bool) or not isinstance(value, int) or not -bound <= value < bound:
        raise DataError(f"{value!r} is not a valid {schema.type}")


def _check_float(schema: Schema, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise DataError(f"{value!r} is not a valid {schema.type}")


def _check_type(*types: type) -> Any:
    def check(schema: Schema, value: Any) -> None:
        if not isinstance(value, types):
            raise DataError(f"{value!r} is not a valid {schema.type}")

    return check


def _check_array(schema: Schema, value: Any) -> None:
    if not isinstance(value, list | tuple):
        raise DataError(f"{value!r} is not a valid array")
    assert schema.value_schema is not None
    for item in value:
        schema.value_schema.validate_value(item)


def _check_map(schema: Schema, value: Any) -> None:
    if not isinstance(value, dict):
        raise DataError(f"{value!r} is not a valid map")
    assert schema.key_schema is not None and schema.value_schema is not None
    for k, v in value.items():
        schema.key_schema.validate_value(k)
        schema.value_schema.validate_value(v)


def _check_struct(schema: Schema, value: Any) -> None:
    if not isinstance(value, Struct) or value.schema != schema:
        raise DataError(f"{value!r} is not a Struct of schema {schema.name or '<anonymous>'}")
    value.validate()


_CHECKS = {
    Type.INT8: _check_int,
    Type.INT16: _check_int,
    Type.INT32: _check_int,
    Type.INT64: _check_int,
    Type.FLOAT32: _check_float,
    Type.FLOAT64: _check_float,
    Type.BOOLEAN: _check_type(bool),
    Type.STRING: _check_type(str),
    Type.BYTES: _check_type(bytes, bytearray),
    Type.ARRAY: _check_array,
    Type.MAP: _check_map,
    Type.STRUCT: _check_struct,
}


class Struct:
    """A value of a struct schema. Fields are set with ``put`` (checked against their schema)."""

    __slots__ = ("_values", "schema")

    def __init__(self, schema: Schema, values: dict[str, Any] | None = None) -> None:
        if schema.type is not Type.STRUCT:
            raise DataError(f"a Struct needs a struct schema, not {schema.type}")
        self.schema = schema
        self._values: dict[str, Any] = {}
        for name, value in (values or {}).items():
            self.put(name, value)

    def put(self, name: str, value: Any) -> Struct:
        """Sets a field; returns self so puts chain."""
        self.schema.field(name).schema.validate_value(value)
        self._values[name] = value
        return self

    def get(self, name: str) -> Any:
        """The field's value, or its schema default when unset."""
        field = self.schema.field(name)
        return self._values.get(name, field.schema.default)

    def validate(self) -> None:
        """Raises DataError if a required field is missing."""
        for f in self.schema.fields:
            f.schema.validate_value(self.get(f.name))

    def to_dict(self) -> dict[str, Any]:
        """Plain Python values, nested structs included, in field order."""
        return {f.name: _plain(self.get(f.name)) for f in self.schema.fields}

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Struct):
            return NotImplemented
        return self.schema == other.schema and all(
            self.get(f.name) == other.get(f.name) for f in self.schema.fields
        )

    __hash__ = None  # type: ignore[assignment]  # mutable, like Connect's Struct

    def __repr__(self) -> str:
        inner = ", ".join(f"{f.name}={self.get(f.name)!r}" for f in self.schema.fields)
        return f"Struct{{{inner}}}"


def _plain(value: Any) -> Any:
    if isinstance(value, Struct):
        return value.to_dict()
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _primitive(t: Type) -> tuple[Schema, Schema]:
    return Schema(t), Schema(t, optional=True)


INT8_SCHEMA, OPTIONAL_INT8_SCHEMA = _primitive(Type.INT8)
INT16_SCHEMA, OPTIONAL_INT16_SCHEMA = _primitive(Type.INT16)
INT32_SCHEMA, OPTIONAL_INT32_SCHEMA = _primitive(Type.INT32)
INT64_SCHEMA, OPTIONAL_INT64_SCHEMA = _primitive(Type.INT64)
FLOAT32_SCHEMA, OPTIONAL_FLOAT32_SCHEMA = _primitive(Type.FLOAT32)
FLOAT64_SCHEMA, OPTIONAL_FLOAT64_SCHEMA = _primitive(Type.FLOAT64)
BOOLEAN_SCHEMA, OPTIONAL_BOOLEAN_SCHEMA = _primitive(Type.BOOLEAN)
STRING_SCHEMA, OPTIONAL_STRING_SCHEMA = _primitive(Type.STRING)
BYTES_SCHEMA, OPTIONAL_BYTES_SCHEMA = _primitive(Type.BYTES)


def field_names(schema: Schema) -> Sequence[str]:
    """The field names of a struct schema, in order."""
    return [f.name for f in schema.fields]
