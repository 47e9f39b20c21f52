"""A transformation from the plugin path: upper-cases one field of a schemaless value and tags
the value with the version that did it (1.0.0)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from headrace.sdk import ConfigDef, ConfigException, ConfigType, DataError

VERSION = "1.0.0"


class UpperCase:
    def config_def(self) -> ConfigDef:
        return ConfigDef().define("field", ConfigType.STRING, doc="The field to upper-case.")

    def configure(self, config: Mapping[str, str]) -> None:
        unknown = sorted(set(config) - {"field"})
        if unknown:
            raise ConfigException(f"{unknown[0]}: not a key of UpperCase")
        self.field = config.get("field", "")
        if not self.field:
            raise ConfigException("field: name the field to upper-case")

    def apply(self, record: Any) -> Any:
        value = record.value
        if not isinstance(value, dict) or not isinstance(value.get(self.field), str):
            raise DataError(f"{self.field} is not a text field of the value")
        changed = {**value, self.field: value[self.field].upper(), "upper_version": VERSION}
        return dataclasses.replace(record, value=changed)

    def close(self) -> None:
        return None
