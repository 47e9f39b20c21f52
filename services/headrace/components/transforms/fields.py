"""Transformations that edit the fields of a key or value: InsertField, ReplaceField, MaskField
and ValueToKey.

Each works on a ``Struct`` when the half it reads has a schema (and then derives the new schema
from the Struct's), and on a ``dict`` when it has none. Without a schema, fields keep their order
and new ones come last.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime, time
from decimal import Decimal
from typing import Any

from headrace.components.java.temporal import EPOCH, timestamp_from_millis
from headrace.components.java.text import wrap
from headrace.components.transforms.base import (
    REPLACE_NULL_WITH_DEFAULT,
    Plugin,
    R,
    Side,
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
from headrace.components.transforms.configs import invalid, non_empty_list, non_empty_string
from headrace.sdk.config import ConfigDef, Importance
from headrace.sdk.config import Type as ConfigType
from headrace.sdk.data import (
    INT32_SCHEMA,
    INT64_SCHEMA,
    OPTIONAL_INT32_SCHEMA,
    OPTIONAL_INT64_SCHEMA,
    OPTIONAL_STRING_SCHEMA,
    OPTIONAL_TIMESTAMP_SCHEMA,
    STRING_SCHEMA,
    TIMESTAMP_SCHEMA,
    Schema,
)
from headrace.sdk.data import Type as SchemaType
from headrace.sdk.errors import ConfigException, DataError
from headrace.sdk.records import SinkRecord

_OPTIONALITY = "Suffix ! makes the field required, ? optional (the default)."


_METADATA = (
    # Connect's order: the key naming the field, its schema when required and when optional.
    ("topic.field", STRING_SCHEMA, OPTIONAL_STRING_SCHEMA),
    ("partition.field", INT32_SCHEMA, OPTIONAL_INT32_SCHEMA),
    ("offset.field", INT64_SCHEMA, OPTIONAL_INT64_SCHEMA),
    ("timestamp.field", TIMESTAMP_SCHEMA, OPTIONAL_TIMESTAMP_SCHEMA),
    ("static.field", STRING_SCHEMA, OPTIONAL_STRING_SCHEMA),
)


@dataclass(frozen=True)
class _Insertion:
    """A field InsertField adds: the key configuring it, its name and its schema."""

    key: str
    name: str
    schema: Schema

    @staticmethod
    def parse(key: str, spec: str, required: Schema, optional: Schema) -> _Insertion:
        """``name!`` is required, ``name?`` and ``name`` optional."""
        name, is_optional = spec, True
        if spec.endswith(("!", "?")):
            name, is_optional = spec[:-1], spec.endswith("?")
        if not name:
            raise invalid(key, f"{spec!r} names no field")
        return _Insertion(key, name, optional if is_optional else required)


class InsertField(SidedPlugin):
    """Adds fields from the record's metadata (topic, partition, offset, timestamp) or a fixed
    string. A null key or value passes unchanged; ``offset.field`` needs sink records; a record
    without a partition or timestamp gets no value (null, with a schema) for that field."""

    NAME = "InsertField"
    CONFIG = with_replace_null_with_default(
        ConfigDef()
        .define("topic.field", ConfigType.STRING, None, doc="Field for the topic. " + _OPTIONALITY)
        .define("partition.field", ConfigType.STRING, None, doc="Field for the partition.")
        .define("offset.field", ConfigType.STRING, None, doc="Field for the offset (sinks).")
        .define("timestamp.field", ConfigType.STRING, None, doc="Field for the timestamp.")
        .define("static.field", ConfigType.STRING, None, doc="Field for static.value.")
        .define("static.value", ConfigType.STRING, None, doc="The value of static.field.")
    )

    def configure(self, config: Mapping[str, str]) -> None:
        values = self.parse(config)
        self._insertions = [
            _Insertion.parse(key, values[key], required, optional)
            for key, required, optional in _METADATA
            if values[key] is not None
        ]
        if not self._insertions:
            keys = ", ".join(key for key, _, _ in _METADATA)
            raise invalid(None, f"no field to insert: set one of {keys}")
        self._static_value: str | None = values["static.value"]
        static_field = values["static.field"] is not None
        if static_field and self._static_value is None:
            raise invalid("static.value", "is required when static.field is set")
        if not static_field and self._static_value is not None:
            raise invalid("static.value", "has no effect without static.field")
        self._replace_null = bool(values[REPLACE_NULL_WITH_DEFAULT])

    def apply(self, record: R) -> R | None:
        schema, value = self.side.schema_of(record), self.side.value_of(record)
        if value is None:
            return record
        inserted = self._inserted(record, with_schema=schema is not None)
        if schema is None:
            updated = {**require_map(value, "InsertField"), **inserted}
            return self.side.replace(record, None, updated)
        struct = require_struct(value, "InsertField")
        fields = [(f.name, f.schema) for f in struct.schema.fields]
        fields += [(insertion.name, insertion.schema) for insertion in self._insertions]
        updated_schema = struct_schema(struct.schema, fields)
        values = {
            f.name: field_value(struct, f.name, self._replace_null) for f in struct.schema.fields
        }
        struct = build_struct(updated_schema, values | inserted)
        return self.side.replace(record, updated_schema, struct)

    def _inserted(self, record: R, with_schema: bool) -> dict[str, Any]:
        """The value of every insertion that has one for this record."""
        inserted = {}
        for insertion in self._insertions:
            value = self._metadata(insertion.key, record, with_schema)
            if value is not None:
                inserted[insertion.name] = value
        return inserted

    def _metadata(self, key: str, record: R, with_schema: bool) -> Any:
        if key == "topic.field":
            return record.topic
        if key == "partition.field":
            return record.partition
        if key == "offset.field":
            if not isinstance(record, SinkRecord):
                raise DataError("InsertField's offset.field needs sink records, which have offsets")
            return record.offset
        if key == "timestamp.field":
            # Connect's Timestamp with a schema; the milliseconds without.
            if with_schema and record.timestamp is not None:
                return timestamp_from_millis(record.timestamp)
            return record.timestamp
        return self._static_value


_DEPRECATED = {"whitelist": "include", "blacklist": "exclude"}


class ReplaceField(SidedPlugin):
    """Keeps (``include``), drops (``exclude``, which wins) and renames fields. A null key or
    value passes unchanged. ``whitelist`` and ``blacklist`` are the old names of ``include`` and
    ``exclude``; setting both names of one key is refused."""

    NAME = "ReplaceField"
    CONFIG = with_replace_null_with_default(
        ConfigDef()
        .define("exclude", ConfigType.LIST, [], doc="Fields to drop; wins over include.")
        .define("include", ConfigType.LIST, [], doc="Fields to keep; empty keeps all.")
        .define(
            "renames",
            ConfigType.LIST,
            [],
            doc="Renames as from:to pairs, e.g. foo:bar,abc:xyz.",
            validator=lambda name, value: _check_renames(value),
        )
        .define("blacklist", ConfigType.LIST, None, Importance.LOW, "Deprecated: use exclude.")
        .define("whitelist", ConfigType.LIST, None, Importance.LOW, "Deprecated: use include.")
    )

    def configure(self, config: Mapping[str, str]) -> None:
        values = self.parse(config)
        for old, new in _DEPRECATED.items():
            if old in config and new in config:
                raise invalid(old, f"is the deprecated name of {new}, which is also set")
            if old in config:
                values[new] = values[old]
        self._exclude = frozenset(values["exclude"])
        self._include = frozenset(values["include"])
        self._renames = _parse_renames(values["renames"])
        self._originals = {new: old for old, new in self._renames.items()}
        self._replace_null = bool(values[REPLACE_NULL_WITH_DEFAULT])

    def _kept(self, name: str) -> bool:
        return name not in self._exclude and (not self._include or name in self._include)

    def apply(self, record: R) -> R | None:
        value = self.side.value_of(record)
        if value is None:
            return record
        if self.side.schema_of(record) is None:
            kept = require_map(value, "ReplaceField")
            updated = {self._renames.get(k, k): v for k, v in kept.items() if self._kept(k)}
            return self.side.replace(record, None, updated)
        struct = require_struct(value, "ReplaceField")
        fields = [
            (self._renames.get(f.name, f.name), f.schema)
            for f in struct.schema.fields
            if self._kept(f.name)
        ]
        schema = struct_schema(struct.schema, fields)
        values = {
            name: field_value(struct, self._originals.get(name, name), self._replace_null)
            for name, _ in fields
        }
        return self.side.replace(record, schema, build_struct(schema, values))


def _check_renames(mappings: list[str]) -> None:
    _parse_renames(mappings)


def _parse_renames(mappings: list[str]) -> dict[str, str]:
    """``from:to`` pairs as a dict; ConfigException for a malformed or ambiguous one."""
    renames: dict[str, str] = {}
    for mapping in mappings:
        parts = mapping.split(":")
        if len(parts) != 2 or not all(parts):
            raise ConfigException(f"invalid rename mapping {mapping!r}: expected from:to")
        old, new = parts
        if old in renames:
            raise ConfigException(f"field {old!r} is renamed twice")
        if new in renames.values():
            raise ConfigException(f"two fields are renamed to {new!r}")
        renames[old] = new
    return renames


_JAVA_BIG_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_INT_BITS = {SchemaType.INT8: 8, SchemaType.INT16: 16, SchemaType.INT32: 32}


class MaskField(SidedPlugin):
    """Replaces fields with their type's null equivalent (0, false, "", empty list or map, the
    epoch) or, for numbers and strings, with ``replacement`` converted to their type.

    As in Connect, the value must be a map or Struct: a null key or value is a DataError (pair
    the transform with a negated RecordIsTombstone predicate to let tombstones through)."""

    NAME = "MaskField"
    CONFIG = with_replace_null_with_default(
        ConfigDef()
        .define(
            "fields",
            ConfigType.LIST,
            importance=Importance.HIGH,
            doc="Names of fields to mask.",
            validator=non_empty_list,
        )
        .define(
            "replacement",
            ConfigType.STRING,
            None,
            Importance.LOW,
            "A replacement for every masked value (numeric or non-empty text fields only).",
            validator=non_empty_string,
        )
    )

    def configure(self, config: Mapping[str, str]) -> None:
        values = self.parse(config)
        self._fields: list[str] = list(dict.fromkeys(values["fields"]))
        self._replacement: str | None = values["replacement"]
        self._replace_null = bool(values[REPLACE_NULL_WITH_DEFAULT])

    def apply(self, record: R) -> R | None:
        value = self.side.value_of(record)
        if self.side.schema_of(record) is None:
            original = require_map(value, "MaskField")
            updated = dict(original)
            for name in self._fields:
                updated[name] = self._masked(original.get(name), None)
            return self.side.replace(record, None, updated)
        struct = require_struct(value, "MaskField")
        masked = {}
        for f in struct.schema.fields:
            current = field_value(struct, f.name, self._replace_null)
            masked[f.name] = self._masked(current, f.schema) if f.name in self._fields else current
        return self.side.replace(record, struct.schema, build_struct(struct.schema, masked))

    def _masked(self, value: Any, schema: Schema | None) -> Any:
        if value is None:
            return None
        if self._replacement is None:
            return _null_equivalent(value)
        return _replacement_for(value, self._replacement, schema)


def _null_equivalent(value: Any) -> Any:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return 0
    if isinstance(value, float):
        return 0.0
    if isinstance(value, Decimal):
        # Zero with the value's places: a Decimal schema holds one scale only.
        return (value * 0).copy_abs()
    if isinstance(value, str):
        return ""
    if isinstance(value, datetime):
        return EPOCH
    if isinstance(value, date):
        return EPOCH.date()
    if isinstance(value, time):
        return time(0)
    if isinstance(value, list | tuple):
        return []
    if isinstance(value, dict):
        return {}
    raise DataError(f"MaskField cannot mask a {type_name(value)} value")


def _replacement_for(value: Any, replacement: str, schema: Schema | None) -> Any:
    if isinstance(value, str):
        return replacement
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        raise DataError(f"MaskField cannot mask a {type_name(value)} value with a replacement")
    if not _JAVA_BIG_DECIMAL.fullmatch(replacement):
        raise DataError(f"MaskField cannot convert replacement {replacement!r} to a number")
    number = Decimal(replacement)
    if isinstance(value, Decimal):
        return number
    if isinstance(value, float):
        return float(number)
    # Java's Values.convertToLong and narrowing casts: toward zero, then the low bits.
    bits = _INT_BITS.get(schema.type, 64) if schema is not None else 64
    return wrap(int(number), bits)


class ValueToKey(Plugin):
    """Replaces the key with the named fields of the value: a map of them without a schema, a
    Struct of them with one. The value must be a map or Struct (a null value is a DataError)."""

    NAME = "ValueToKey"
    CONFIG = with_replace_null_with_default(
        ConfigDef().define(
            "fields",
            ConfigType.LIST,
            importance=Importance.HIGH,
            doc="Field names of the value that form the key.",
            validator=non_empty_list,
        )
    )

    def configure(self, config: Mapping[str, str]) -> None:
        values = self.parse(config)
        self._fields: list[str] = values["fields"]
        self._replace_null = bool(values[REPLACE_NULL_WITH_DEFAULT])

    def apply(self, record: R) -> R | None:
        if record.value_schema is None:
            value = require_map(record.value, "ValueToKey")
            key = {name: value.get(name) for name in self._fields}
            return Side.KEY.replace(record, None, key)
        struct = require_struct(record.value, "ValueToKey")
        fields = []
        for name in self._fields:
            found = find_field(struct.schema, name)
            if found is None:
                raise DataError(f"ValueToKey: the value has no field {name!r}")
            fields.append((name, found.schema))
        schema = Schema.struct(fields)
        values = {name: field_value(struct, name, self._replace_null) for name in self._fields}
        return Side.KEY.replace(record, schema, build_struct(schema, values))
