"""A converter from the plugin path with a PASSWORD key: text stored after the hex HMAC-SHA256 of
it under `signing.key` and a dot; reading checks the signature. Its keys are said by a
`config_def` on the class, as the SDK asks of converters."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from typing import Any

from headrace.sdk import ConfigDef, ConfigException, ConfigType, DataError, Schema
from headrace.sdk.components import NULL, SchemaAndValue


class SignedStringConverter:
    @staticmethod
    def config_def() -> ConfigDef:
        return ConfigDef().define("signing.key", ConfigType.PASSWORD, doc="The HMAC key.")

    def __init__(self, config: Mapping[str, str], is_key: bool) -> None:
        self.key = config.get("signing.key", "").encode()
        if not self.key:
            raise ConfigException("signing.key: give the key to sign with")

    def _signature(self, text: bytes) -> bytes:
        return hmac.new(self.key, text, hashlib.sha256).hexdigest().encode()

    def from_connect_data(self, topic: str, schema: Schema | None, value: Any) -> bytes | None:
        if value is None:
            return None
        text = str(value).encode()
        return self._signature(text) + b"." + text

    def to_connect_data(self, topic: str, data: bytes | None) -> SchemaAndValue:
        if data is None:
            return NULL
        signature, _, text = data.partition(b".")
        if not hmac.compare_digest(signature, self._signature(text)):
            raise DataError("the signature does not match the text")
        return SchemaAndValue(None, text.decode())
