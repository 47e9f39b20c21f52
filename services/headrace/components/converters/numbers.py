"""Connect's number and boolean converters: a value as the bytes Kafka's own serializers write.

| class (``org.apache.kafka.connect.converters.``) | schema | bytes |
| --- | --- | --- |
| ``ShortConverter`` | INT16 | 2, big-endian two's complement |
| ``IntegerConverter`` | INT32 | 4, big-endian two's complement |
| ``LongConverter`` | INT64 | 8, big-endian two's complement |
| ``FloatConverter`` | FLOAT32 | 4, IEEE 754 big-endian |
| ``DoubleConverter`` | FLOAT64 | 8, IEEE 754 big-endian |
| ``BooleanConverter`` | BOOLEAN | 1: 1 for true, 0 for false |

A null is no bytes, both ways. A value of another type, an integer out of its type's range, or
bytes of the wrong length (or a boolean byte other than 0 and 1) is a DataError naming what it
got, as Connect's DataException does.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any

from headrace.components.converters.base import SchemaAndValue
from headrace.sdk.data import (
    OPTIONAL_BOOLEAN_SCHEMA,
    OPTIONAL_FLOAT32_SCHEMA,
    OPTIONAL_FLOAT64_SCHEMA,
    OPTIONAL_INT16_SCHEMA,
    OPTIONAL_INT32_SCHEMA,
    OPTIONAL_INT64_SCHEMA,
    Schema,
    described,
)
from headrace.sdk.errors import DataError


class _NumberConverter:
    """One fixed-width type: its schema, its struct format, the Python types it takes."""

    schema: Schema
    name: str
    format: str
    integral: bool
    KEYS: tuple[str, ...] = ()

    def __init__(self, config: Mapping[str, str] | None = None, is_key: bool = False) -> None:
        self._struct = struct.Struct(self.format)

    def from_connect_data(self, topic: str, schema: Schema | None, value: Any) -> bytes | None:
        if value is None:
            return None
        takes = int if self.integral else (int, float)
        if isinstance(value, bool) or not isinstance(value, takes):
            raise DataError(f"Failed to serialize to {self.name} (was {type(value).__name__})")
        try:
            return self._struct.pack(value)
        except struct.error as exc:
            raise DataError(
                f"Failed to serialize to {self.name}: {described(value)} is out of its range"
            ) from exc

    def to_connect_data(self, topic: str, data: bytes | None) -> SchemaAndValue:
        if data is None:
            return SchemaAndValue(self.schema, None)
        if len(data) != self._struct.size:
            raise DataError(
                f"Size of data received by the {self.name} deserializer is not "
                f"{self._struct.size}: {len(data)} bytes"
            )
        value: Any = self._struct.unpack(bytes(data))[0]
        return SchemaAndValue(self.schema, value)


class ShortConverter(_NumberConverter):
    schema, name, format, integral = OPTIONAL_INT16_SCHEMA, "Short", ">h", True


class IntegerConverter(_NumberConverter):
    schema, name, format, integral = OPTIONAL_INT32_SCHEMA, "Integer", ">i", True


class LongConverter(_NumberConverter):
    schema, name, format, integral = OPTIONAL_INT64_SCHEMA, "Long", ">q", True


class FloatConverter(_NumberConverter):
    schema, name, format, integral = OPTIONAL_FLOAT32_SCHEMA, "Float", ">f", False


class DoubleConverter(_NumberConverter):
    schema, name, format, integral = OPTIONAL_FLOAT64_SCHEMA, "Double", ">d", False


class BooleanConverter:
    """A boolean as one byte, as Kafka's BooleanSerializer writes it."""

    KEYS: tuple[str, ...] = ()

    def __init__(self, config: Mapping[str, str] | None = None, is_key: bool = False) -> None:
        pass

    def from_connect_data(self, topic: str, schema: Schema | None, value: Any) -> bytes | None:
        if value is None:
            return None
        if not isinstance(value, bool):
            raise DataError(f"Failed to serialize to Boolean (was {type(value).__name__})")
        return b"\x01" if value else b"\x00"

    def to_connect_data(self, topic: str, data: bytes | None) -> SchemaAndValue:
        if data is None:
            return SchemaAndValue(OPTIONAL_BOOLEAN_SCHEMA, None)
        if len(data) != 1:
            raise DataError(f"Size of data received by BooleanDeserializer is not 1: {len(data)}")
        if data[0] not in (0, 1):
            raise DataError(f"Unexpected byte received by BooleanDeserializer: {data[0]}")
        return SchemaAndValue(OPTIONAL_BOOLEAN_SCHEMA, data[0] == 1)


NUMBER_CONVERTERS = {
    f"org.apache.kafka.connect.converters.{c.__name__}": c
    for c in (
        ShortConverter,
        IntegerConverter,
        LongConverter,
        FloatConverter,
        DoubleConverter,
        BooleanConverter,
    )
}
"""By Connect's class names."""
