"""The contracts of a transformation and a predicate, and the record plumbing they share.

A transformation (Connect's ``Transformation``) maps one record to one record, or to None to drop
it; a predicate (Connect's ``Predicate``) answers yes or no for a record. Both are configured once
from string keys (their ``config_def`` says which) and are pure afterwards: no I/O, no state
carried from one record to the next, so the runtime may apply them to records in any grouping.

Records are ``SourceRecord`` or ``SinkRecord``, frozen dataclasses: a transformation returns a
copy made with ``dataclasses.replace``, of the class it was given, with every field it does not
change carried over. Most transformations come in a key and a value variant (Connect's ``$Key``
and ``$Value``); ``Side`` says which half of the record they read and rewrite.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from enum import Enum
from typing import Any, ClassVar

from headrace.components.transforms.configs import parse_config
from headrace.sdk.components import Predicate as Predicate  # the SDK's, named here too
from headrace.sdk.components import R as R
from headrace.sdk.components import Record as Record
from headrace.sdk.components import Transformation as Transformation
from headrace.sdk.config import ConfigDef, Importance
from headrace.sdk.config import Type as ConfigType
from headrace.sdk.data import Field, Schema, Struct
from headrace.sdk.data import Type as SchemaType
from headrace.sdk.errors import DataError


class Side(Enum):
    """The half of a record a ``$Key`` or ``$Value`` transformation works on."""

    KEY = "Key"
    VALUE = "Value"

    def schema_of(self, record: Record) -> Schema | None:
        """The schema of this half of ``record`` (None: schemaless)."""
        return record.key_schema if self is Side.KEY else record.value_schema

    def value_of(self, record: Record) -> Any:
        """This half of ``record``: its key or its value."""
        return record.key if self is Side.KEY else record.value

    def replace(self, record: R, schema: Schema | None, value: Any) -> R:
        """A copy of ``record`` with this half replaced; everything else carried over."""
        if self is Side.KEY:
            return dataclasses.replace(record, key_schema=schema, key=value)
        return dataclasses.replace(record, value_schema=schema, value=value)


class Plugin:
    """What the built-in transformations and predicates share: a name, a ConfigDef, parsing."""

    NAME: ClassVar[str]
    CONFIG: ClassVar[ConfigDef] = ConfigDef()

    @property
    def name(self) -> str:
        """The name errors give it: Connect's class name without the package."""
        return self.NAME

    def config_def(self) -> ConfigDef:
        """The keys it understands."""
        return self.CONFIG

    def close(self) -> None:
        """Nothing to release: the built-in plugins hold no resources."""
        return None

    def parse(self, config: Mapping[str, str]) -> dict[str, Any]:
        """Every defined key's value; InvalidConfig naming each bad or unknown key."""
        return parse_config(self.CONFIG, config, self.name)


class SidedPlugin(Plugin):
    """A transformation with ``$Key`` and ``$Value`` variants."""

    def __init__(self, side: Side) -> None:
        self.side = side

    @property
    def name(self) -> str:
        """Connect's class name of the variant, ``InsertField$Value`` say."""
        return f"{self.NAME}${self.side.value}"


REPLACE_NULL_WITH_DEFAULT = "replace.null.with.default"


def with_replace_null_with_default(definition: ConfigDef) -> ConfigDef:
    """``definition`` with Connect's (KIP-1040) ``replace.null.with.default`` key."""
    return definition.define(
        REPLACE_NULL_WITH_DEFAULT,
        ConfigType.BOOLEAN,
        True,
        Importance.MEDIUM,
        "Whether a null field with a default value reads as its default (true) or as null.",
    )


def require_map(value: Any, purpose: str) -> dict[str, Any]:
    """``value`` as a schemaless map; DataError naming ``purpose`` when it is something else."""
    if not isinstance(value, dict):
        raise DataError(
            f"{purpose} needs a map (dict) when there is no schema, found {type_name(value)}"
        )
    return value


def require_struct(value: Any, purpose: str) -> Struct:
    """``value`` as a Struct; DataError naming ``purpose`` when it is something else."""
    if not isinstance(value, Struct):
        raise DataError(f"{purpose} needs a Struct with a schema, found {type_name(value)}")
    return value


def type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def find_field(schema: Schema, name: str) -> Field | None:
    """The field ``name`` of a struct schema, or None; DataError if the schema is no struct."""
    if schema.type is not SchemaType.STRUCT:
        raise DataError(f"cannot look up field {name!r} in a {schema.type} schema")
    return next((f for f in schema.fields if f.name == name), None)


def field_value(struct: Struct, name: str, replace_null_with_default: bool = True) -> Any:
    """A field's value, as Connect's ``Struct.get`` (or ``getWithoutDefault``) reads it.

    headrace's ``Struct.get`` gives the default for a field never set, and None for one set to
    None; Connect's ``get`` also gives the default for a field set to null. With
    ``replace_null_with_default`` false only the explicit None is kept (a field never set has,
    in headrace, no value but its default).
    """
    value = struct.get(name)
    if value is None and replace_null_with_default:
        return struct.schema.field(name).schema.default
    return value


def struct_schema(basics: Schema, fields: list[tuple[str, Schema]]) -> Schema:
    """A struct schema with ``fields`` and the name, version, doc and parameters of ``basics``
    (Connect's ``SchemaUtil.copySchemaBasics``); neither optional nor defaulted."""
    built = Schema.struct(fields, name=basics.name)
    return dataclasses.replace(
        built, version=basics.version, doc=basics.doc, parameters=basics.parameters
    )


def build_struct(schema: Schema, values: Mapping[str, Any]) -> Struct:
    """A Struct of ``schema`` holding ``values``; a value that does not fit is a DataError."""
    return Struct(schema, dict(values))
