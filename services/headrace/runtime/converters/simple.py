"""The string and byte-array converters (Connect's ``StringConverter``, ``ByteArrayConverter``)."""

from __future__ import annotations

import codecs
from collections.abc import Mapping
from typing import Any

from headrace.runtime.converters.base import NULL, SchemaAndValue
from headrace.sdk.data import OPTIONAL_BYTES_SCHEMA, OPTIONAL_STRING_SCHEMA, Schema, Struct
from headrace.sdk.errors import ConfigException, DataError


class StringConverter:
    """Text in an encoding (``encoding``, default UTF-8); other values are written as ``str()``."""

    def __init__(self, config: Mapping[str, str] | None = None, is_key: bool = False) -> None:
        self.encoding = (config or {}).get("encoding", "utf-8")
        try:
            codecs.lookup(self.encoding)
        except LookupError:
            raise ConfigException(
                f"Unknown encoding {self.encoding!r} for StringConverter"
            ) from None

    def from_connect_data(self, topic: str, schema: Schema | None, value: Any) -> bytes | None:
        if value is None:
            return None
        if isinstance(value, bytes | bytearray):
            raise DataError("StringConverter cannot write bytes; use the ByteArrayConverter")
        text = str(value.to_dict()) if isinstance(value, Struct) else str(value)
        try:
            return text.encode(self.encoding)
        except UnicodeEncodeError as exc:
            raise DataError(f"cannot encode string as {self.encoding}: {exc}") from exc

    def to_connect_data(self, topic: str, data: bytes | None) -> SchemaAndValue:
        if data is None:
            return NULL
        try:
            return SchemaAndValue(OPTIONAL_STRING_SCHEMA, bytes(data).decode(self.encoding))
        except UnicodeDecodeError as exc:
            raise DataError(f"not valid {self.encoding} text: {exc}") from exc


class ByteArrayConverter:
    """Bytes passed through untouched."""

    def __init__(self, config: Mapping[str, str] | None = None, is_key: bool = False) -> None:
        pass

    def from_connect_data(self, topic: str, schema: Schema | None, value: Any) -> bytes | None:
        if value is None:
            return None
        if not isinstance(value, bytes | bytearray | memoryview):
            raise DataError(f"ByteArrayConverter needs bytes, not {type(value).__name__}")
        return bytes(value)

    def to_connect_data(self, topic: str, data: bytes | None) -> SchemaAndValue:
        if data is None:
            return NULL
        return SchemaAndValue(OPTIONAL_BYTES_SCHEMA, bytes(data))
