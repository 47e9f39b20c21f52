"""The string and byte-array converters (Connect's ``StringConverter``, ``ByteArrayConverter``)."""

from __future__ import annotations

import codecs
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from headrace.components.converters.base import NULL, SchemaAndValue
from headrace.sdk.columns import binary_column, is_arrow, string_column
from headrace.sdk.data import OPTIONAL_BYTES_SCHEMA, OPTIONAL_STRING_SCHEMA, Schema, Struct
from headrace.sdk.errors import ConfigException, DataError
from headrace.sdk.records import Column

if TYPE_CHECKING:
    import pyarrow as pa

_UTF8 = codecs.lookup("utf-8").name


ENCODING_KEYS = ("converter.encoding", "encoding")
"""Connect's key for StringConverter's encoding, and the shorter one headrace took first."""


class StringConverter:
    """Text in an encoding (``converter.encoding``, as Connect names it, or ``encoding``;
    default UTF-8); other values are written as ``str()``."""

    KEYS = ENCODING_KEYS

    def __init__(self, config: Mapping[str, str] | None = None, is_key: bool = False) -> None:
        given = {key: (config or {})[key] for key in ENCODING_KEYS if key in (config or {})}
        if len(set(given.values())) > 1:
            named = " and ".join(f"{k}={v!r}" for k, v in given.items())
            raise ConfigException(f"StringConverter: {named} disagree; give one of them")
        self.encoding = next(iter(given.values()), "utf-8")
        try:
            codecs.lookup(self.encoding)
        except LookupError:
            raise ConfigException(
                f"Unknown encoding {self.encoding!r} for StringConverter"
            ) from None
        self._utf8 = codecs.lookup(self.encoding).name == _UTF8

    def from_connect_column(
        self, topic: str, schema: Schema | None, values: Column
    ) -> list[bytes | None] | None:
        """A pyarrow string column as UTF-8 bytes, without a Python step per value; None when
        the column is anything else (then each value goes through ``from_connect_data``)."""
        if not (self._utf8 and is_arrow(values)):
            return None
        import pyarrow as pa

        if not (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)):
            return None
        binary = pa.binary() if pa.types.is_string(values.type) else pa.large_binary()
        encoded: list[bytes | None] = values.cast(binary).to_pylist()
        return encoded

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

    def to_connect_column(
        self, topic: str, data: Sequence[bytes | None]
    ) -> tuple[Schema, pa.Array] | None:
        """UTF-8 messages as a pyarrow string column, checked in native code; None for another
        encoding or text that is not UTF-8 (then each message is decoded on its own)."""
        if not self._utf8:
            return None
        import pyarrow as pa

        try:
            return OPTIONAL_STRING_SCHEMA, string_column(data)
        except pa.ArrowInvalid:
            return None

    def to_connect_data(self, topic: str, data: bytes | None) -> SchemaAndValue:
        if data is None:
            return NULL
        try:
            return SchemaAndValue(OPTIONAL_STRING_SCHEMA, bytes(data).decode(self.encoding))
        except UnicodeDecodeError as exc:
            raise DataError(f"not valid {self.encoding} text: {exc}") from exc


class ByteArrayConverter:
    """Bytes passed through untouched."""

    KEYS: tuple[str, ...] = ()

    def __init__(self, config: Mapping[str, str] | None = None, is_key: bool = False) -> None:
        pass

    def from_connect_column(
        self, topic: str, schema: Schema | None, values: Column
    ) -> list[bytes | None] | None:
        """A pyarrow binary column's bytes, or a list of bytes as it is; None when the column
        is anything else."""
        if is_arrow(values):
            import pyarrow as pa

            if not (pa.types.is_binary(values.type) or pa.types.is_large_binary(values.type)):
                return None
            encoded: list[bytes | None] = values.to_pylist()
            return encoded
        if isinstance(values, list) and all(type(v) is bytes for v in values):
            return values
        return None

    def from_connect_data(self, topic: str, schema: Schema | None, value: Any) -> bytes | None:
        if value is None:
            return None
        if not isinstance(value, bytes | bytearray | memoryview):
            raise DataError(f"ByteArrayConverter needs bytes, not {type(value).__name__}")
        return bytes(value)

    def to_connect_column(
        self, topic: str, data: Sequence[bytes | None]
    ) -> tuple[Schema, pa.Array] | None:
        """The messages as a pyarrow binary column."""
        return OPTIONAL_BYTES_SCHEMA, binary_column(data)

    def to_connect_data(self, topic: str, data: bytes | None) -> SchemaAndValue:
        if data is None:
            return NULL
        return SchemaAndValue(OPTIONAL_BYTES_SCHEMA, bytes(data))
