"""A converter from the plugin path: text stored reversed, character by character."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from headrace.sdk import DataError, Schema
from headrace.sdk.components import NULL, SchemaAndValue


class ReversedStringConverter:
    def __init__(self, config: Mapping[str, str], is_key: bool) -> None:
        self.is_key = is_key

    def from_connect_data(self, topic: str, schema: Schema | None, value: Any) -> bytes | None:
        if value is None:
            return None
        return str(value)[::-1].encode()

    def to_connect_data(self, topic: str, data: bytes | None) -> SchemaAndValue:
        if data is None:
            return NULL
        try:
            return SchemaAndValue(None, data.decode()[::-1])
        except UnicodeDecodeError as exc:
            raise DataError(f"not UTF-8 text: {exc}") from exc
