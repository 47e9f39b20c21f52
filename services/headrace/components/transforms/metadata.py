"""SetSchemaMetadata: a key's or value's schema renamed or given a version, as Connect's
``org.apache.kafka.connect.transforms.SetSchemaMetadata$Key`` / ``$Value`` does.

``schema.name`` and ``schema.version`` replace the schema's own (one of them at least must be
set); everything else about the schema stays. A Struct is rebuilt on the new schema, its fields'
values as read with ``replace.null.with.default`` (KIP-1040). A record without a schema on that
side is a DataError, as on Connect.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from headrace.components.transforms.base import (
    REPLACE_NULL_WITH_DEFAULT,
    R,
    SidedPlugin,
    build_struct,
    field_value,
    with_replace_null_with_default,
)
from headrace.components.transforms.configs import invalid
from headrace.sdk.config import ConfigDef, Importance
from headrace.sdk.config import Type as ConfigType
from headrace.sdk.data import Struct
from headrace.sdk.errors import DataError

NAME_KEY = "schema.name"
VERSION_KEY = "schema.version"


class SetSchemaMetadata(SidedPlugin):
    """Sets the name and/or version of the key's or value's schema."""

    NAME = "SetSchemaMetadata"
    CONFIG = with_replace_null_with_default(
        ConfigDef()
        .define(NAME_KEY, ConfigType.STRING, None, Importance.HIGH, "Schema name to set.")
        .define(VERSION_KEY, ConfigType.INT, None, Importance.HIGH, "Schema version to set.")
    )

    def configure(self, config: Mapping[str, str]) -> None:
        parsed = self.parse(config)
        self._name: str | None = parsed[NAME_KEY]
        self._version: int | None = parsed[VERSION_KEY]
        self._replace_null: bool = parsed[REPLACE_NULL_WITH_DEFAULT]
        if self._name is None and self._version is None:
            raise invalid(NAME_KEY, f"neither {NAME_KEY} nor {VERSION_KEY} is set: set one")

    def apply(self, record: R) -> R | None:
        schema, value = self.side.schema_of(record), self.side.value_of(record)
        if schema is None:
            raise DataError("Schema required for [updating schema metadata]")
        updated = dataclasses.replace(
            schema,
            name=self._name if self._name is not None else schema.name,
            version=self._version if self._version is not None else schema.version,
        )
        if isinstance(value, Struct):
            fields = {f.name: field_value(value, f.name, self._replace_null) for f in schema.fields}
            value = build_struct(updated, fields)
        return self.side.replace(record, updated, value)
