"""Cast: fields of a key or value, or the whole of it, to another primitive type.

``spec`` is either one type (the whole key or value) or ``field:type`` pairs; types are Connect's
``int8 int16 int32 int64 float32 float64 boolean string``. Inputs may be those types, bytes (to
string only, as base64) and, with a schema, the logical Decimal, Date, Time and Timestamp.

Conversions are Java's: integers narrow to their low bits (300 as int8 is 44), floats truncate
toward zero and saturate, a number is true when its long value is not 0, text parses as
``Long.parseLong`` or ``Double.parseDouble`` does and is true only when it says ``true``; a Date,
Time or Timestamp casts as its days, milliseconds of the day or milliseconds since the epoch, or
to text in Connect's ISO 8601 forms.
"""

from __future__ import annotations

import base64
import dataclasses
from collections.abc import Mapping
from datetime import date, time
from decimal import Decimal
from typing import Any

from headrace.components.java.temporal import MILLIS_PER_DAY, to_millis
from headrace.components.java.text import (
    date_text,
    double_to_string,
    parse_double,
    parse_integer,
    truncate_double,
    wrap,
)
from headrace.components.transforms.base import (
    REPLACE_NULL_WITH_DEFAULT,
    R,
    SidedPlugin,
    build_struct,
    field_value,
    require_map,
    require_struct,
    struct_schema,
    type_name,
    with_replace_null_with_default,
)
from headrace.sdk.config import ConfigDef, Importance
from headrace.sdk.config import Type as ConfigType
from headrace.sdk.data import (
    DATE_NAME,
    LOGICAL_NAMES,
    TIME_NAME,
    TIMESTAMP_NAME,
    Schema,
    Struct,
    described,
)
from headrace.sdk.data import Type as SchemaType
from headrace.sdk.errors import ConfigException, DataError

T = SchemaType
TARGETS = {
    "INT8": T.INT8,
    "INT16": T.INT16,
    "INT32": T.INT32,
    "INT64": T.INT64,
    "FLOAT32": T.FLOAT32,
    "FLOAT64": T.FLOAT64,
    "BOOLEAN": T.BOOLEAN,
    "STRING": T.STRING,
}
"""Connect's names of the types Cast casts to, upper case as ``Schema.Type.valueOf`` reads them."""
_OTHER_TYPES = ("BYTES", "ARRAY", "MAP", "STRUCT")
_INPUTS = frozenset(TARGETS.values()) | {T.BYTES}
_BITS = {T.INT8: 8, T.INT16: 16, T.INT32: 32, T.INT64: 64}
_WHOLE = ""


class Cast(SidedPlugin):
    """Casts fields, or the whole key or value, to primitive types. A null passes unchanged;
    without a schema, a field cast that the map lacks is added as null (as in Connect)."""

    NAME = "Cast"
    CONFIG = with_replace_null_with_default(
        ConfigDef().define(
            "spec",
            ConfigType.LIST,
            importance=Importance.HIGH,
            doc="field:type pairs, or a single type to cast the whole value. Types: int8, int16, "
            "int32, int64, float32, float64, boolean, string (bytes cast to string only).",
            validator=lambda name, value: _check_spec(value),
        )
    )

    def configure(self, config: Mapping[str, str]) -> None:
        values = self.parse(config)
        self._casts = parse_spec(values["spec"])
        self._whole = self._casts.get(_WHOLE)
        self._replace_null = bool(values[REPLACE_NULL_WITH_DEFAULT])

    def apply(self, record: R) -> R | None:
        schema, value = self.side.schema_of(record), self.side.value_of(record)
        if value is None:
            return record
        if schema is None:
            if self._whole is not None:
                return self.side.replace(record, None, cast_value(None, value, self._whole))
            original = require_map(value, "Cast")
            updated = dict(original)
            for name, target in self._casts.items():
                updated[name] = cast_value(None, original.get(name), target)
            return self.side.replace(record, None, updated)
        cast_schema = self._cast_schema(schema)
        if self._whole is not None:
            return self.side.replace(record, cast_schema, cast_value(schema, value, self._whole))
        struct = require_struct(value, "Cast")
        return self.side.replace(record, cast_schema, self._cast_struct(struct, cast_schema))

    def _cast_struct(self, struct: Struct, cast_schema: Schema) -> Struct:
        values = {}
        for f in struct.schema.fields:
            current = field_value(struct, f.name, self._replace_null)
            target = self._casts.get(f.name)
            values[f.name] = current if target is None else cast_value(f.schema, current, target)
        return build_struct(cast_schema, values)

    def _cast_schema(self, schema: Schema) -> Schema:
        if self._whole is not None:
            cast = _primitive_like(schema, self._whole)
        else:
            fields = []
            for f in schema.fields:
                target = self._casts.get(f.name)
                fields.append(
                    (f.name, f.schema if target is None else _cast_field(f.schema, target))
                )
            cast = dataclasses.replace(struct_schema(schema, fields), optional=schema.optional)
        if schema.default is None:
            return cast
        if self._whole is not None:
            default = cast_value(schema, schema.default, self._whole)
        else:
            # Connect cannot cast a struct default (it refuses STRUCT as input); cast its fields.
            default = self._cast_struct(require_struct(schema.default, "Cast"), cast)
        return dataclasses.replace(cast, default=default)


def _check_spec(mappings: list[str]) -> None:
    parse_spec(mappings)


def parse_spec(mappings: list[str]) -> dict[str, SchemaType]:
    """``spec`` as {field: type}, the whole value under the key ""; ConfigException says why not."""
    if not mappings:
        raise ConfigException("must name at least one cast")
    casts: dict[str, SchemaType] = {}
    for mapping in mappings:
        parts = mapping.split(":")
        if len(parts) > 2:
            raise ConfigException(f"invalid cast {mapping!r}: expected type or field:type")
        name = parts[0].strip() if len(parts) == 2 else _WHOLE
        if len(parts) == 2 and not name:
            raise ConfigException(f"invalid cast {mapping!r}: the field name is empty")
        if name in casts:
            raise ConfigException(f"{'the whole value' if not name else repr(name)} is cast twice")
        casts[name] = _target(parts[-1])
    if _WHOLE in casts and len(casts) > 1:
        raise ConfigException(
            "a cast of the whole value must be the only cast: "
            "a spec is either one type or field:type pairs"
        )
    return casts


def _target(text: str) -> SchemaType:
    upper = text.strip().upper()
    if upper in TARGETS:
        return TARGETS[upper]
    supported = ", ".join(t.lower() for t in TARGETS)
    if upper in _OTHER_TYPES:
        raise ConfigException(f"Cast does not cast to {text.strip()}; it casts to {supported}")
    raise ConfigException(f"invalid type {text.strip()!r} in the cast spec; types: {supported}")


def _primitive_like(schema: Schema, target: SchemaType) -> Schema:
    """A ``target`` schema with the name, version, doc and parameters of ``schema`` (Connect's
    copySchemaBasics), except a logical type's, which would misdescribe the cast value."""
    if schema.name in LOGICAL_NAMES:
        return Schema(target, optional=schema.optional, doc=schema.doc)
    return Schema(
        target,
        optional=schema.optional,
        name=schema.name,
        version=schema.version,
        doc=schema.doc,
        parameters=schema.parameters,
    )


def _cast_field(schema: Schema, target: SchemaType) -> Schema:
    default = None if schema.default is None else cast_value(schema, schema.default, target)
    return Schema(target, optional=schema.optional, default=default)


def _inferred_type(value: Any) -> SchemaType | None:
    """The Connect type of a schemaless value (``ConnectSchema.schemaType``); None if none."""
    for types, schema_type in (
        (bool, T.BOOLEAN),
        (int, T.INT64),
        (float, T.FLOAT64),
        (str, T.STRING),
        (bytes | bytearray, T.BYTES),
        (list | tuple, T.ARRAY),
        (dict, T.MAP),
        (Struct, T.STRUCT),
    ):
        if isinstance(value, types):
            return schema_type
    return None


def cast_value(schema: Schema | None, value: Any, target: SchemaType) -> Any:
    """``value`` (of ``schema``, or inferred from its Python type) cast to ``target``."""
    if value is None:
        return None
    source = schema.type if schema is not None else _inferred_type(value)
    if source is None:
        raise DataError(f"Cast was given a {type_name(value)}, which Connect's data API lacks")
    if source not in _INPUTS:
        raise DataError(f"Cast does not cast from {source}")
    if schema is not None and target is not T.STRING:
        value = _encoded(schema, value)
    if target in _BITS:
        return _to_integer(value, _BITS[target])
    if target in (T.FLOAT32, T.FLOAT64):
        return _to_float(value)
    if target is T.BOOLEAN:
        return _to_boolean(value)
    return _to_string(value)


def _encoded(schema: Schema, value: Any) -> Any:
    """A Date, Time or Timestamp as the number it travels as; anything else unchanged."""
    if schema.name == DATE_NAME and isinstance(value, date):
        return to_millis(value) // MILLIS_PER_DAY
    if schema.name in (TIME_NAME, TIMESTAMP_NAME) and isinstance(value, date | time):
        return to_millis(value)
    return value


def _to_integer(value: Any, bits: int) -> int:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return wrap(value, bits)
    if isinstance(value, float):
        return truncate_double(value, bits)
    if isinstance(value, Decimal):
        return wrap(int(value), bits)
    if isinstance(value, str):
        try:
            return parse_integer(value, bits)
        except ValueError as exc:
            raise DataError(f"Cast: {described(value)} does not fit int{bits}: {exc}") from None
    raise DataError(f"Cast cannot cast a {type_name(value)} to int{bits}")


def _to_float(value: Any) -> float:
    if isinstance(value, bool | int | Decimal):
        return float(value)
    if isinstance(value, float):
        return value
    if isinstance(value, str):
        try:
            return parse_double(value)
        except ValueError as exc:
            raise DataError(f"Cast: {exc}") from None
    raise DataError(f"Cast cannot cast a {type_name(value)} to a floating-point type")


def _to_boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return wrap(value, 64) != 0
    if isinstance(value, float):
        return truncate_double(value, 64) != 0
    if isinstance(value, Decimal):
        return wrap(int(value), 64) != 0
    if isinstance(value, str):
        return value.lower() == "true"
    raise DataError(f"Cast cannot cast a {type_name(value)} to boolean")


def _to_string(value: Any) -> str:
    if isinstance(value, date | time):
        return date_text(to_millis(value))
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return double_to_string(value)
    if isinstance(value, int | str | Decimal):
        return str(value)
    raise DataError(f"Cast cannot cast a {type_name(value)} to string")
