"""Connect's data model: ``Schema``, ``SchemaBuilder``, ``Struct`` and the logical types
(``org.apache.kafka.connect.data``).

The primitive types, arrays, maps and structs, each optional or not, with an optional name,
version, doc, default and string parameters. Python values per type: int for INT8..INT64, float
for FLOAT32/FLOAT64, bool, str, bytes, list, dict, and ``Struct`` for STRUCT.

    PERSON = (
        SchemaBuilder.struct().name("Person")
        .field("name", STRING_SCHEMA).field("age", INT32_SCHEMA).field("born", DATE_SCHEMA)
        .build()
    )
    barbara = Struct(PERSON).put("name", "Barbara Liskov").put("age", 75)

Logical types are schemas Connect recognises by name, whose values travel as a primitive:

| name | schema | on the wire | Python value |
| --- | --- | --- | --- |
| ``DECIMAL_NAME`` | BYTES | unscaled value, two's complement | ``decimal.Decimal`` |
| ``DATE_NAME`` | INT32 | days since 1970-01-01 | ``datetime.date`` |
| ``TIME_NAME`` | INT32 | ms since midnight | naive ``datetime.time`` |
| ``TIMESTAMP_NAME`` | INT64 | ms since 1970-01-01T00:00Z | aware ``datetime.datetime`` |

A Decimal schema's ``scale`` parameter says how many places its values have. Values are checked
strictly (a Decimal of another scale, a time with microseconds, a naive timestamp are refused)
so that every value a schema accepts survives ``from_logical`` and ``to_logical`` unchanged;
``to_logical`` gives timestamps in UTC. Dates and timestamps outside Python's years 1 to 9999,
which Connect can hold, are refused with a DataError.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence, Sized
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
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
    ``key_schema`` the key type of a MAP; ``fields`` the fields of a STRUCT. ``parameters`` are
    Connect's string parameters (a Decimal's scale, say) as (name, value) pairs, so the schema
    stays hashable, in the order they were set, which is the order JSON writes them in; two
    schemas with the same parameters in another order are not equal.
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
    parameters: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        if self.parameters:
            _check_parameters(self.parameters)

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

    def parameter(self, name: str) -> str | None:
        """The value of parameter ``name``; None when the schema does not set it."""
        return next((v for k, v in self.parameters if k == name), None)

    def validate_value(self, value: Any) -> None:
        """Raises DataError when ``value`` does not fit this schema (for a logical schema, when it
        is not that type's Python value)."""
        if value is None:
            if self.optional or self.default is not None:
                return
            raise DataError(f"null value for a required {self.type} schema")
        check = _LOGICAL_CHECKS.get(self.name) or _CHECKS[self.type]
        check(self, value)


def _check_parameters(parameters: Any) -> None:
    if not isinstance(parameters, tuple) or not all(
        isinstance(p, tuple) and len(p) == 2 and all(isinstance(t, str) for t in p)
        for p in parameters
    ):
        raise DataError(f"schema parameters must be (name, value) pairs of str: {parameters!r}")
    if len({k for k, _ in parameters}) != len(parameters):
        raise DataError(f"schema parameters name one twice: {parameters!r}")


def _check_int(schema: Schema, value: Any) -> None:
    bound = _INT_BOUNDS[schema.type]
    if isinstance(value, bool) or not isinstance(value, int) or not -bound <= value < bound:
        raise DataError(f"{described(value)} is not a valid {schema.type}")


def _check_float(schema: Schema, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise DataError(f"{described(value)} is not a valid {schema.type}")


def _check_type(*types: type) -> Any:
    def check(schema: Schema, value: Any) -> None:
        if not isinstance(value, types):
            raise DataError(f"{described(value)} is not a valid {schema.type}")

    return check


def _check_array(schema: Schema, value: Any) -> None:
    if not isinstance(value, list | tuple):
        raise DataError(f"{described(value)} is not a valid array")
    assert schema.value_schema is not None
    for item in value:
        schema.value_schema.validate_value(item)


def _check_map(schema: Schema, value: Any) -> None:
    if not isinstance(value, dict):
        raise DataError(f"{described(value)} is not a valid map")
    assert schema.key_schema is not None and schema.value_schema is not None
    for k, v in value.items():
        schema.key_schema.validate_value(k)
        schema.value_schema.validate_value(v)


def _check_struct(schema: Schema, value: Any) -> None:
    if not isinstance(value, Struct) or value.schema != schema:
        raise DataError(
            f"{described(value)} is not a Struct of schema {schema.name or '<anonymous>'}"
        )
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


class SchemaBuilder:
    """Builds a ``Schema`` call by call, as Connect's ``SchemaBuilder`` does::

        SchemaBuilder.struct().name("Person").field("name", STRING_SCHEMA).optional().build()

    As in Connect, an attribute set twice must be set to the same value, a parameter set again
    takes the new value, and only a struct has fields, each name once (DataError otherwise).
    ``build`` checks the default against the finished schema, so the order of the calls does
    not matter.
    """

    def __init__(self, type_: Type) -> None:
        self._type = type_
        self._attributes: dict[str, Any] = {}
        self._fields: dict[str, Schema] = {}
        self._parameters: dict[str, str] = {}
        self._key_schema: Schema | None = None
        self._value_schema: Schema | None = None

    @classmethod
    def int8(cls) -> SchemaBuilder:
        return cls(Type.INT8)

    @classmethod
    def int16(cls) -> SchemaBuilder:
        return cls(Type.INT16)

    @classmethod
    def int32(cls) -> SchemaBuilder:
        return cls(Type.INT32)

    @classmethod
    def int64(cls) -> SchemaBuilder:
        return cls(Type.INT64)

    @classmethod
    def float32(cls) -> SchemaBuilder:
        return cls(Type.FLOAT32)

    @classmethod
    def float64(cls) -> SchemaBuilder:
        return cls(Type.FLOAT64)

    @classmethod
    def boolean(cls) -> SchemaBuilder:
        return cls(Type.BOOLEAN)

    @classmethod
    def string(cls) -> SchemaBuilder:
        return cls(Type.STRING)

    @classmethod
    def bytes_(cls) -> SchemaBuilder:
        return cls(Type.BYTES)

    @classmethod
    def struct(cls) -> SchemaBuilder:
        return cls(Type.STRUCT)

    @classmethod
    def array(cls, items: Schema) -> SchemaBuilder:
        builder = cls(Type.ARRAY)
        builder._value_schema = items
        return builder

    @classmethod
    def map(cls, keys: Schema, values: Schema) -> SchemaBuilder:
        builder = cls(Type.MAP)
        builder._key_schema, builder._value_schema = keys, values
        return builder

    def optional(self) -> SchemaBuilder:
        return self._set("optional", True)

    def required(self) -> SchemaBuilder:
        return self._set("optional", False)

    def name(self, name: str) -> SchemaBuilder:
        return self._set("name", name)

    def version(self, version: int) -> SchemaBuilder:
        return self._set("version", version)

    def doc(self, doc: str) -> SchemaBuilder:
        return self._set("doc", doc)

    def default_value(self, value: Any) -> SchemaBuilder:
        return self._set("default", value)

    def parameter(self, name: str, value: str) -> SchemaBuilder:
        self._parameters[name] = value
        return self

    def parameters(self, parameters: Mapping[str, str]) -> SchemaBuilder:
        self._parameters.update(parameters)
        return self

    def field(self, name: str, schema: Schema) -> SchemaBuilder:
        """Adds a field after those already added."""
        if self._type is not Type.STRUCT:
            raise DataError(
                f"cannot add field {name!r} to a {self._type} schema: only a struct has fields"
            )
        if not isinstance(name, str) or not name:
            raise DataError(f"a struct field needs a name, not {name!r}")
        if name in self._fields:
            struct = self._attributes.get("name") or "<anonymous>"
            raise DataError(f"struct {struct} already has a field {name!r} (duplicate field name)")
        if not isinstance(schema, Schema):
            raise DataError(f"field {name!r} needs a Schema, not {schema!r}")
        self._fields[name] = schema
        return self

    def build(self) -> Schema:
        """The schema built; DataError when its default value does not fit it."""
        schema = Schema(
            self._type,
            fields=tuple(Field(n, i, s) for i, (n, s) in enumerate(self._fields.items())),
            key_schema=self._key_schema,
            value_schema=self._value_schema,
            parameters=tuple(self._parameters.items()),
            **self._attributes,
        )
        if schema.default is not None:
            try:
                schema.validate_value(schema.default)
            except DataError as exc:
                raise DataError(f"default value does not fit its schema: {exc}") from exc
        return schema

    def _set(self, attribute: str, value: Any) -> SchemaBuilder:
        if self._attributes.get(attribute, value) != value:
            current = self._attributes[attribute]
            raise DataError(f"schema {attribute} is already set to {current!r}, not {value!r}")
        self._attributes[attribute] = value
        return self


# Logical types: Connect's Decimal, Date, Time and Timestamp (see the module docstring).

DECIMAL_NAME = "org.apache.kafka.connect.data.Decimal"
DATE_NAME = "org.apache.kafka.connect.data.Date"
TIME_NAME = "org.apache.kafka.connect.data.Time"
TIMESTAMP_NAME = "org.apache.kafka.connect.data.Timestamp"
SCALE_PARAMETER = "scale"
"""The Decimal schema parameter holding the scale, as text (Connect's ``Decimal.SCALE_FIELD``)."""

_LOGICAL_TYPES = {
    DECIMAL_NAME: Type.BYTES,
    DATE_NAME: Type.INT32,
    TIME_NAME: Type.INT32,
    TIMESTAMP_NAME: Type.INT64,
}
LOGICAL_NAMES = frozenset(_LOGICAL_TYPES)
"""The schema names that make a schema logical."""

_EPOCH_DAY = date(1970, 1, 1)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MILLI = timedelta(milliseconds=1)
_MILLIS_PER_DAY = 86_400_000


def decimal_schema(scale: int, optional: bool = False) -> Schema:
    """Connect's ``Decimal.schema(scale)``: decimals with ``scale`` digits after the point."""
    return Schema(
        Type.BYTES,
        optional=optional,
        name=DECIMAL_NAME,
        version=1,
        parameters=((SCALE_PARAMETER, str(scale)),),
    )


def _logical_schemas(name: str) -> tuple[Schema, Schema]:
    schema = Schema(_LOGICAL_TYPES[name], name=name, version=1)
    return schema, schema.as_optional()


DATE_SCHEMA, OPTIONAL_DATE_SCHEMA = _logical_schemas(DATE_NAME)
TIME_SCHEMA, OPTIONAL_TIME_SCHEMA = _logical_schemas(TIME_NAME)
TIMESTAMP_SCHEMA, OPTIONAL_TIMESTAMP_SCHEMA = _logical_schemas(TIMESTAMP_NAME)


def decimal_scale(schema: Schema) -> int:
    """The scale a Decimal schema declares; DataError when it declares no integer one."""
    text = schema.parameter(SCALE_PARAMETER)
    if text is None or not re.fullmatch(r"[+-]?[0-9]+", text):
        raise DataError(
            f"a {DECIMAL_NAME} schema needs an integer {SCALE_PARAMETER!r} parameter, not {text!r}"
        )
    return int(text)


def to_logical(schema: Schema, raw: Any) -> Any:
    """A logical schema's Python value from its wire form (the unscaled two's-complement bytes
    of a Decimal, the int of the others), as Connect's ``toLogical``; any other schema's value,
    and None, unchanged. DataError when ``raw`` is not that wire form or Python cannot hold it."""
    convert = _TO_LOGICAL.get(schema.name)
    return raw if convert is None or raw is None else convert(schema, raw)


def from_logical(schema: Schema, value: Any) -> Any:
    """The wire form of a logical schema's Python value, as Connect's ``fromLogical``; any other
    schema's value, and None, unchanged. DataError when the schema refuses ``value``."""
    convert = _FROM_LOGICAL.get(schema.name)
    if convert is None or value is None:
        return value
    schema.validate_value(value)
    return convert(schema, value)


def _check_base_type(schema: Schema) -> None:
    expected = _LOGICAL_TYPES[schema.name or ""]
    if schema.type is not expected:
        raise DataError(f"a {schema.name} schema must be {expected}, not {schema.type}")


def _check_decimal(schema: Schema, value: Any) -> None:
    _check_base_type(schema)
    if not isinstance(value, Decimal) or not value.is_finite():
        raise DataError(
            f"{described(value)} is not a finite decimal.Decimal, as {DECIMAL_NAME} needs"
        )
    scale = decimal_scale(schema)
    places = -int(value.as_tuple().exponent)
    if places != scale:
        raise DataError(
            f"a decimal has scale {places} where its {DECIMAL_NAME} schema has scale {scale}"
        )


def _decimal_to_wire(schema: Schema, value: Decimal) -> bytes:
    """Java's ``BigInteger.toByteArray`` of the unscaled value: the fewest big-endian bytes that
    hold it with its sign bit."""
    sign, digits, _ = value.as_tuple()
    unscaled = int(Decimal((sign, digits, 0)))
    size = (unscaled if unscaled >= 0 else ~unscaled).bit_length() // 8 + 1
    return unscaled.to_bytes(size, "big", signed=True)


def _decimal_from_wire(schema: Schema, raw: Any) -> Decimal:
    if not isinstance(raw, bytes | bytearray) or not raw:
        raise DataError(f"a {DECIMAL_NAME} travels as non-empty bytes, not {described(raw)}")
    sign, digits, _ = Decimal(int.from_bytes(raw, "big", signed=True)).as_tuple()
    return Decimal((sign, digits, -decimal_scale(schema)))


def _check_date(schema: Schema, value: Any) -> None:
    _check_base_type(schema)
    if not isinstance(value, date) or isinstance(value, datetime):
        raise DataError(f"{described(value)} is not a datetime.date, as {DATE_NAME} needs")


def _date_to_wire(schema: Schema, value: date) -> int:
    return (value - _EPOCH_DAY).days


def _date_from_wire(schema: Schema, raw: Any) -> date:
    _check_int(schema, raw)
    try:
        return _EPOCH_DAY + timedelta(days=raw)
    except OverflowError:
        raise DataError(f"{raw} days from 1970-01-01 is past the dates Python holds") from None


def _check_time(schema: Schema, value: Any) -> None:
    _check_base_type(schema)
    if not isinstance(value, time) or value.tzinfo is not None:
        raise DataError(f"{described(value)} is not a naive datetime.time, as {TIME_NAME} needs")
    if value.microsecond % 1000:
        raise DataError(f"a time is finer than the milliseconds {TIME_NAME} holds")


def _time_to_wire(schema: Schema, value: time) -> int:
    seconds = (value.hour * 60 + value.minute) * 60 + value.second
    return seconds * 1000 + value.microsecond // 1000


def _time_from_wire(schema: Schema, raw: Any) -> time:
    _check_int(schema, raw)
    if not 0 <= raw < _MILLIS_PER_DAY:
        raise DataError(f"{raw} is not a time of day in milliseconds (0 to {_MILLIS_PER_DAY - 1})")
    seconds, millis = divmod(raw, 1000)
    minutes, second = divmod(seconds, 60)
    hour, minute = divmod(minutes, 60)
    return time(hour, minute, second, millis * 1000)


def _check_timestamp(schema: Schema, value: Any) -> None:
    _check_base_type(schema)
    if not isinstance(value, datetime) or value.utcoffset() is None:
        raise DataError(
            f"{described(value)} is not a timezone-aware datetime.datetime, as "
            f"{TIMESTAMP_NAME} needs"
        )
    if (value - _EPOCH) % _MILLI:
        raise DataError(f"{value!r} is finer than the milliseconds {TIMESTAMP_NAME} holds")


def _timestamp_to_wire(schema: Schema, value: datetime) -> int:
    return (value - _EPOCH) // _MILLI


def _timestamp_from_wire(schema: Schema, raw: Any) -> datetime:
    _check_int(schema, raw)
    try:
        return _EPOCH + int(raw) * _MILLI
    except OverflowError:
        raise DataError(f"{raw} ms from the epoch is past the datetimes Python holds") from None


_LOGICAL_CHECKS: dict[str | None, Callable[[Schema, Any], None]] = {
    DECIMAL_NAME: _check_decimal,
    DATE_NAME: _check_date,
    TIME_NAME: _check_time,
    TIMESTAMP_NAME: _check_timestamp,
}
_FROM_LOGICAL: dict[str | None, Callable[[Schema, Any], Any]] = {
    DECIMAL_NAME: _decimal_to_wire,
    DATE_NAME: _date_to_wire,
    TIME_NAME: _time_to_wire,
    TIMESTAMP_NAME: _timestamp_to_wire,
}
_TO_LOGICAL: dict[str | None, Callable[[Schema, Any], Any]] = {
    DECIMAL_NAME: _decimal_from_wire,
    DATE_NAME: _date_from_wire,
    TIME_NAME: _time_from_wire,
    TIMESTAMP_NAME: _timestamp_from_wire,
}


# What an error may say of a record's value: its kind and size, never its content. An error
# about a value reaches the task's trace, which whoever may read a connector's status reads,
# and the logs; a value may be anything a source read (a file's lines, a database's rows).
_KINDS = {
    bool: "a boolean",
    int: "an integer",
    float: "a floating-point number",
    str: "text",
    bytes: "bytes",
    bytearray: "bytes",
    dict: "an object",
    list: "an array",
    tuple: "an array",
}


def described(value: Any) -> str:
    """``value``'s kind, and its size where it has one: ``text of 12 characters``, ``an object
    of 3 keys``, ``an integer``; its content never."""
    if value is None:
        return "null"
    kind = next((k for t, k in _KINDS.items() if type(value) is t), None)
    if kind is None:
        kind = f"a {type(value).__name__}"
    if isinstance(value, str | bytes | bytearray):
        unit = "characters" if isinstance(value, str) else "bytes"
        return f"{kind} of {len(value)} {unit}" if kind != "bytes" else f"{len(value)} bytes"
    if isinstance(value, Mapping):
        return f"{kind} of {len(value)} keys"
    if isinstance(value, Sized):
        return f"{kind} of {len(value)} items"
    return kind
