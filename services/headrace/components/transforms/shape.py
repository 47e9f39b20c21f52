"""Transformations that change the shape of a key or value: ExtractField takes one field out,
HoistField wraps the whole in one field, Flatten lifts nested fields to the top level.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from headrace.components.transforms.base import (
    REPLACE_NULL_WITH_DEFAULT,
    R,
    SidedPlugin,
    build_struct,
    field_value,
    find_field,
    require_map,
    require_struct,
    struct_schema,
    type_name,
    with_replace_null_with_default,
)
from headrace.components.transforms.configs import invalid, one_of
from headrace.sdk.config import ConfigDef, Importance
from headrace.sdk.config import Type as ConfigType
from headrace.sdk.data import Field, Schema, Struct
from headrace.sdk.data import Type as SchemaType
from headrace.sdk.errors import DataError

FIELD_SYNTAX_VERSION = "field.syntax.version"


class ExtractField(SidedPlugin):
    """Replaces the key or value with one of its fields (and, with a schema, that field's
    schema). A null passes through. With ``field.syntax.version=V2`` the field is a dotted path
    into nested fields, a name containing dots in backticks (KIP-821)."""

    NAME = "ExtractField"
    CONFIG = with_replace_null_with_default(
        ConfigDef()
        .define("field", ConfigType.STRING, doc="Field name to extract.")
        .define(
            FIELD_SYNTAX_VERSION,
            ConfigType.STRING,
            "V1",
            Importance.HIGH,
            "V1: field names a top-level field. V2: a dotted path, `quoted` where a name has dots.",
            validator=one_of("V1", "V2", case_sensitive=False),
        )
    )

    def configure(self, config: Mapping[str, str]) -> None:
        values = self.parse(config)
        self._field: str = values["field"]
        if values[FIELD_SYNTAX_VERSION].upper() == "V2":
            try:
                self._path = parse_field_path(self._field)
            except ValueError as exc:
                raise invalid("field", str(exc)) from None
            if not self._path:
                raise invalid("field", "an empty path names no field")
        else:
            self._path = [self._field]
        self._replace_null = bool(values[REPLACE_NULL_WITH_DEFAULT])

    def apply(self, record: R) -> R | None:
        schema, value = self.side.schema_of(record), self.side.value_of(record)
        if schema is None:
            if value is None:
                return self.side.replace(record, None, None)
            return self.side.replace(record, None, _from_map(self._path, value))
        struct = None if value is None else require_struct(value, "ExtractField")
        found = _field_at(schema, self._path)
        if found is None:
            raise DataError(f"ExtractField: unknown field {self._field!r}")
        extracted = None if struct is None else _from_struct(self._path, struct, self._replace_null)
        return self.side.replace(record, found.schema, extracted)


def parse_field_path(path: str) -> list[str]:
    """The steps of a KIP-821 (V2) field path: split at dots, except within a backtick pair; a
    backslash before a closing backtick keeps it in the name. ValueError for an unclosed pair."""
    steps: list[str] = []
    i, n = 0, len(path)
    while i < n:
        if path[i] != "`":
            dot = path.find(".", i)
            steps.append(path[i:] if dot < 0 else path[i:dot])
            i = n if dot < 0 else dot + 1
            continue
        opening, i = i, i + 1
        start, name = i, ""
        while True:
            close = path.find("`", i)
            if close < 0:
                raise _unclosed(path, opening)
            escaped = path[close - 1] == "\\"
            if close == n - 1:
                if escaped:
                    raise _unclosed(path, opening)
                steps.append(name + path[start:close])
                i = n
                break
            if path[close + 1] != ".":
                i = close + 1  # a backtick inside the name
            elif escaped:
                name += path[start : close - 1] + "`"
                i = start = close + 1
            else:
                steps.append(name + path[start:close])
                i = close + 2
                break
    if path.endswith("."):
        steps.append("")
    return steps


def _unclosed(path: str, at: int) -> ValueError:
    return ValueError(
        f"incomplete backtick pair in path {path!r}: escape the backtick at position {at} "
        "with a backslash if it belongs to the name"
    )


def _field_at(schema: Schema, path: list[str]) -> Field | None:
    current = schema
    for step in path[:-1]:
        found = find_field(current, step)
        if found is None:
            return None
        current = found.schema
    return find_field(current, path[-1])


def _from_struct(path: list[str], struct: Struct, replace_null: bool) -> Any:
    current = struct
    for step in path[:-1]:
        if find_field(current.schema, step) is None:
            return None
        nested = field_value(current, step)
        if nested is None:
            return None
        current = require_struct(nested, "ExtractField (nested field access)")
    if find_field(current.schema, path[-1]) is None:
        return None
    return field_value(current, path[-1], replace_null)


def _from_map(path: list[str], value: Any) -> Any:
    current = require_map(value, "ExtractField")
    for step in path[:-1]:
        nested = current.get(step)
        if nested is None:
            return None
        current = require_map(nested, "ExtractField (nested field access)")
    return current.get(path[-1])


class HoistField(SidedPlugin):
    """Wraps the key or value in a single field: a one-entry map without a schema, a one-field
    Struct with one."""

    NAME = "HoistField"
    CONFIG = ConfigDef().define(
        "field", ConfigType.STRING, doc="Name of the single field of the resulting Struct or map."
    )

    def configure(self, config: Mapping[str, str]) -> None:
        self._field: str = self.parse(config)["field"]

    def apply(self, record: R) -> R | None:
        schema, value = self.side.schema_of(record), self.side.value_of(record)
        if schema is None:
            return self.side.replace(record, None, {self._field: value})
        hoisted = Schema.struct([(self._field, schema)])
        return self.side.replace(record, hoisted, build_struct(hoisted, {self._field: value}))


_FLAT_TYPES = (bool, int, float, str, bytes, bytearray, list, tuple)


class Flatten(SidedPlugin):
    """Lifts the fields of nested maps or Structs to the top, named by their path joined with
    ``delimiter``. Arrays and their contents stay as they are; with a schema, a map field is a
    DataError. A field under an optional parent becomes optional, and inherits the parent's
    default. A null key or value passes unchanged."""

    NAME = "Flatten"
    CONFIG = ConfigDef().define(
        "delimiter",
        ConfigType.STRING,
        ".",
        doc="Put between the names of nested fields to name the flattened one.",
    )

    def configure(self, config: Mapping[str, str]) -> None:
        self._delimiter: str = self.parse(config)["delimiter"]

    def _name(self, prefix: str, name: str) -> str:
        return f"{prefix}{self._delimiter}{name}" if prefix else name

    def apply(self, record: R) -> R | None:
        schema, value = self.side.schema_of(record), self.side.value_of(record)
        if value is None:
            return record
        if schema is None:
            flat: dict[str, Any] = {}
            self._flatten_map(require_map(value, "Flatten"), "", flat)
            return self.side.replace(record, None, flat)
        struct = require_struct(value, "Flatten")
        fields: list[tuple[str, Schema]] = []
        self._flatten_schema(schema, "", schema.optional, None, fields)
        flat_schema = struct_schema(schema, fields)
        values: dict[str, Any] = {}
        self._flatten_struct(struct, "", values)
        return self.side.replace(record, flat_schema, build_struct(flat_schema, values))

    def _flatten_map(self, value: dict[str, Any], prefix: str, out: dict[str, Any]) -> None:
        for key, item in value.items():
            if not isinstance(key, str):
                raise DataError(f"Flatten needs text map keys, found {type_name(key)} {key!r}")
            name = self._name(prefix, key)
            if isinstance(item, dict):
                self._flatten_map(item, name, out)
            elif item is None or isinstance(item, _FLAT_TYPES):
                out[name] = item
            else:
                raise DataError(
                    f"Flatten does not support {type_name(item)} values without a schema "
                    f"(field {name!r})"
                )

    def _flatten_schema(
        self,
        schema: Schema,
        prefix: str,
        optional: bool,
        parent_default: Struct | None,
        out: list[tuple[str, Schema]],
    ) -> None:
        for f in schema.fields:
            name = self._name(prefix, f.name)
            field_optional = optional or f.schema.optional
            default = f.schema.default
            if default is None and parent_default is not None:
                default = field_value(parent_default, f.name)
            if f.schema.type is SchemaType.STRUCT:
                self._flatten_schema(f.schema, name, field_optional, default, out)
            elif f.schema.type is SchemaType.MAP:
                raise DataError(f"Flatten does not support map fields with a schema ({name!r})")
            else:
                flat = dataclasses.replace(f.schema, optional=field_optional, default=default)
                out.append((name, flat))

    def _flatten_struct(self, struct: Struct, prefix: str, out: dict[str, Any]) -> None:
        for f in struct.schema.fields:
            name = self._name(prefix, f.name)
            item = field_value(struct, f.name)
            if f.schema.type is SchemaType.STRUCT:
                if item is not None:
                    self._flatten_struct(require_struct(item, "Flatten"), name, out)
            else:
                out[name] = item
