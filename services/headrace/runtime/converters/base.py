"""The converter contract: Connect data (schema, value) <-> the bytes stored in Kafka."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from headrace.sdk.data import Schema


@dataclass(frozen=True)
class SchemaAndValue:
    """A converted value and its schema (None when the format carries none)."""

    schema: Schema | None
    value: Any


NULL = SchemaAndValue(None, None)


class Converter(Protocol):
    """Turns record keys or values into bytes and back. Pure: no I/O, no state between calls.

    Both directions raise ``headrace.sdk.DataError`` on input they cannot handle; the runtime
    adds the topic, partition and offset the input came from.
    """

    def from_connect_data(self, topic: str, schema: Schema | None, value: Any) -> bytes | None:
        """Serialises a value (None stays None: a tombstone)."""
        ...

    def to_connect_data(self, topic: str, data: bytes | None) -> SchemaAndValue:
        """Deserialises bytes (None gives ``NULL``)."""
        ...
