"""Transformations of a record's headers: DropHeaders, InsertHeader, and HeaderFrom, which moves
or copies fields of the key or value into headers.

headrace's headers are text or bytes (``Headers``), where Connect's carry a schema and a value
that the header converter serialises. Header values here are what Connect's default
``SimpleHeaderConverter`` writes: text stays text, bytes stay bytes, null stays null, and any
other value becomes its ``Values.convertToString`` text (``42``, ``true``, ``[1,2]``,
``{"a":1}``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from headrace.components.java.text import to_text
from headrace.components.transforms.base import (
    REPLACE_NULL_WITH_DEFAULT,
    Plugin,
    R,
    SidedPlugin,
    build_struct,
    field_value,
    find_field,
    require_map,
    require_struct,
    struct_schema,
    with_replace_null_with_default,
)
from headrace.components.transforms.configs import invalid, non_empty_list, not_null, one_of
from headrace.sdk.config import ConfigDef, Importance
from headrace.sdk.config import Type as ConfigType
from headrace.sdk.errors import DataError


def header_value(value: Any) -> bytes | str | None:
    """A field's value as a header value (see the module docstring)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bytes | bytearray):
        return bytes(value)
    return to_text(value)


class DropHeaders(Plugin):
    """Removes every header with one of the names in ``headers``."""

    NAME = "DropHeaders"
    CONFIG = ConfigDef().define(
        "headers",
        ConfigType.LIST,
        importance=Importance.HIGH,
        doc="The names of the headers to remove.",
        validator=non_empty_list,
    )

    def configure(self, config: Mapping[str, str]) -> None:
        self._names = frozenset(self.parse(config)["headers"])

    def apply(self, record: R) -> R | None:
        kept = tuple(h for h in record.headers if h[0] not in self._names)
        return dataclasses.replace(record, headers=kept)


class InsertHeader(Plugin):
    """Adds a header ``header`` with the text ``value.literal`` to every record (after any
    headers of that name it already has)."""

    NAME = "InsertHeader"
    CONFIG = (
        ConfigDef()
        .define(
            "header",
            ConfigType.STRING,
            importance=Importance.HIGH,
            doc="The name of the header.",
            validator=not_null,
        )
        .define(
            "value.literal",
            ConfigType.STRING,
            importance=Importance.HIGH,
            doc="The value of the header on every record.",
            validator=not_null,
        )
    )

    def configure(self, config: Mapping[str, str]) -> None:
        values = self.parse(config)
        self._header: str = values["header"]
        self._literal: str = values["value.literal"]

    def apply(self, record: R) -> R | None:
        return dataclasses.replace(record, headers=(*record.headers, (self._header, self._literal)))


class HeaderFrom(SidedPlugin):
    """Adds a header per field in ``fields`` (named by the same position in ``headers``) with
    the field's value; ``operation=move`` also removes the fields, ``copy`` keeps them. The key
    or value must be a map or Struct (a null is a DataError, as in Connect)."""

    NAME = "HeaderFrom"
    CONFIG = with_replace_null_with_default(
        ConfigDef()
        .define(
            "fields",
            ConfigType.LIST,
            importance=Importance.HIGH,
            doc="Fields whose values become headers.",
            validator=non_empty_list,
        )
        .define(
            "headers",
            ConfigType.LIST,
            importance=Importance.HIGH,
            doc="Header names, in the order of fields.",
            validator=non_empty_list,
        )
        .define(
            "operation",
            ConfigType.STRING,
            importance=Importance.HIGH,
            doc="move (remove the fields) or copy (keep them).",
            validator=one_of("move", "copy"),
        )
    )

    def configure(self, config: Mapping[str, str]) -> None:
        values = self.parse(config)
        self._fields: list[str] = values["fields"]
        self._headers: list[str] = values["headers"]
        if len(self._fields) != len(self._headers):
            raise invalid(
                "headers",
                f"names {len(self._headers)} headers for {len(self._fields)} fields: "
                "fields and headers must have as many entries",
            )
        self._move = values["operation"] == "move"
        self._replace_null = bool(values[REPLACE_NULL_WITH_DEFAULT])

    def apply(self, record: R) -> R | None:
        schema, value = self.side.schema_of(record), self.side.value_of(record)
        purpose = f"HeaderFrom ({'move' if self._move else 'copy'})"
        headers = list(record.headers)
        if schema is None:
            original = require_map(value, purpose)
            updated = dict(original)
            for name, header in zip(self._fields, self._headers, strict=True):
                if self._move:
                    updated.pop(name, None)
                headers.append((header, header_value(original.get(name))))
            moved = self.side.replace(record, None, updated)
            return dataclasses.replace(moved, headers=tuple(headers))
        struct = require_struct(value, purpose)
        for name, header in zip(self._fields, self._headers, strict=True):
            if find_field(struct.schema, name) is None:
                raise DataError(f"{purpose}: the {self.side.name.lower()} has no field {name!r}")
            headers.append((header, header_value(field_value(struct, name, self._replace_null))))
        if self._move:
            kept = [(f.name, f.schema) for f in struct.schema.fields if f.name not in self._fields]
            schema = struct_schema(struct.schema, kept)
            values = {n: field_value(struct, n, self._replace_null) for n, _ in kept}
            struct = build_struct(schema, values)
        moved = self.side.replace(record, schema, struct)
        return dataclasses.replace(moved, headers=tuple(headers))
