"""A transformation from the plugin path with a PASSWORD key: replaces the text field `field` of
a schemaless value by its HMAC-SHA256 under `secret` (hex)."""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
from collections.abc import Mapping
from typing import Any

from headrace.sdk import ConfigDef, ConfigException, ConfigType, DataError


class SealField:
    def config_def(self) -> ConfigDef:
        return (
            ConfigDef()
            .define("field", ConfigType.STRING, doc="The field to seal.")
            .define("secret", ConfigType.PASSWORD, doc="The HMAC key.")
        )

    def configure(self, config: Mapping[str, str]) -> None:
        unknown = sorted(set(config) - {"field", "secret"})
        if unknown:
            raise ConfigException(f"{unknown[0]}: not a key of SealField")
        self.field = config.get("field", "")
        self.secret = config.get("secret", "")
        if not self.field or not self.secret:
            raise ConfigException("secret: name the field to seal and the secret to seal it with")

    def apply(self, record: Any) -> Any:
        value = record.value
        if not isinstance(value, dict) or not isinstance(value.get(self.field), str):
            raise DataError(f"{self.field} is not a text field of the value")
        digest = hmac.new(self.secret.encode(), value[self.field].encode(), hashlib.sha256)
        return dataclasses.replace(record, value={**value, self.field: digest.hexdigest()})

    def close(self) -> None:
        return None
