"""Converters: record keys and values between Connect data and the bytes stored in Kafka.

Chosen per connector by ``key.converter`` and ``value.converter``, which accept Connect's class
names or short names; keys under ``<key|value>.converter.`` configure them::

    value.converter=org.apache.kafka.connect.json.JsonConverter   (or: json)
    value.converter.schemas.enable=true

| name | short | notes |
| --- | --- | --- |
| org.apache.kafka.connect.json.JsonConverter | json | ``schemas.enable`` (default true) |
| org.apache.kafka.connect.storage.StringConverter | string | ``converter.encoding``: UTF-8 |
| org.apache.kafka.connect.converters.ByteArrayConverter | bytes | bytes as they are |

Connect's ``ShortConverter``, ``IntegerConverter``, ``LongConverter``, ``FloatConverter``,
``DoubleConverter`` and ``BooleanConverter`` (in ``org.apache.kafka.connect.converters``, or by
their simple names) write what Kafka's serializers write (``numbers.py``).

When a connector names no converter, headrace uses JSON with schemas disabled, for keys and values
alike: plain JSON is what most producers write, and Connect's envelope doubles every message's
size. Naming the JSON converter gives Connect's behaviour, envelope included, unless
``<prefix>.schemas.enable=false`` says otherwise.

Header values have converters of their own, chosen by ``header.converter`` (``headers.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from headrace.components.converters.base import (
    NULL,
    Converter,
    SchemaAndValue,
    named_factory,
    sub_config,
)
from headrace.components.converters.headers import (
    HEADER_CONVERTERS,
    ByteArrayHeaderConverter,
    HeaderConverter,
    JsonHeaderConverter,
    SimpleHeaderConverter,
    StringHeaderConverter,
    decode_headers,
    encode_headers,
    header_converter_for,
)
from headrace.components.converters.jsonconv import JsonConverter
from headrace.components.converters.numbers import NUMBER_CONVERTERS
from headrace.components.converters.simple import ByteArrayConverter, StringConverter
from headrace.sdk.data import Schema
from headrace.sdk.errors import ConfigException
from headrace.sdk.records import Column

ConverterFactory = Callable[[Mapping[str, str], bool], Converter]

CONVERTERS: dict[str, ConverterFactory] = {
    "org.apache.kafka.connect.json.JsonConverter": JsonConverter,
    "org.apache.kafka.connect.storage.StringConverter": StringConverter,
    "org.apache.kafka.connect.converters.ByteArrayConverter": ByteArrayConverter,
    "json": JsonConverter,
    "string": StringConverter,
    "bytes": ByteArrayConverter,
    # Simple class names, as Connect accepts aliases for its own plugins.
    "JsonConverter": JsonConverter,
    "StringConverter": StringConverter,
    "ByteArrayConverter": ByteArrayConverter,
    **NUMBER_CONVERTERS,
    **{name.rpartition(".")[2]: factory for name, factory in NUMBER_CONVERTERS.items()},
}

REFUSED_KEYS = {
    "schemas.cache.size": "headrace's JsonConverter keeps no schema cache to size",
    "converter.type": "the runtime sets it from the converter's role (key, value or header)",
}
"""Keys of Connect's converters that headrace refuses, with the reason."""

DEFAULT_CONVERTER = "json"
DEFAULT_SUB_CONFIG = {"schemas.enable": "false"}  # for the converter used when none is named


def converter_for(config: Mapping[str, str], role: Literal["key", "value"]) -> Converter:
    """The converter a connector config selects for its keys or values.

    ConfigException names the key and the converters that exist when the name is unknown.
    """
    prefix = f"{role}.converter"
    named = (config.get(prefix) or "").strip()
    name = named or DEFAULT_CONVERTER
    factory = named_factory("converter", prefix, name, CONVERTERS)
    sub = sub_config(config, prefix)
    if not named:
        sub = {**DEFAULT_SUB_CONFIG, **sub}
    takes: tuple[str, ...] = getattr(factory, "KEYS", tuple(sub))
    for key in sorted(set(sub) - set(takes)):
        why = REFUSED_KEYS.get(key) or (
            f"{name} takes {', '.join(takes)}" if takes else f"{name} takes none"
        )
        raise ConfigException(f"{prefix}.{key}: not a key headrace's converter honours: {why}")
    return factory(sub, role == "key")


def encode_column(
    converter: Converter, topic: str, schema: Schema | None, values: Column
) -> list[bytes | None]:
    """A whole column of values as Kafka bytes: in one native step when the converter has one
    for this column (``from_connect_column``), else value by value. Raises the converter's
    DataError for the first value it cannot convert, without saying which: callers that must
    name the record convert one by one then."""
    bulk: Any = getattr(converter, "from_connect_column", None)
    if bulk is not None:
        encoded: list[bytes | None] | None = bulk(topic, schema, values)
        if encoded is not None:
            return encoded
    to_pylist = getattr(values, "to_pylist", None)
    python = values if to_pylist is None else to_pylist()
    return [converter.from_connect_data(topic, schema, v) for v in python]


def decode_column(
    converter: Converter, topic: str, data: Sequence[bytes | None], arrow: bool = False
) -> tuple[Schema | None, Column] | None:
    """Messages' keys or values as one column and its schema, when the converter can make one
    of all of them at once (``to_connect_column``: a pyarrow Array, or for JSON the list of
    decoded values); None otherwise. ``arrow`` asks for records read into Arrow where the
    converter reads them so (``to_arrow_column``: JSON objects as ``ArrowRecords``)."""
    if arrow:
        to_arrow: Any = getattr(converter, "to_arrow_column", None)
        read: tuple[Schema | None, Column] | None = to_arrow and to_arrow(topic, data)
        if read is not None:
            return read
    bulk: Any = getattr(converter, "to_connect_column", None)
    if bulk is None:
        return None
    column: tuple[Schema | None, Column] | None = bulk(topic, data)
    return column


__all__ = [
    "CONVERTERS",
    "HEADER_CONVERTERS",
    "NULL",
    "ByteArrayConverter",
    "ByteArrayHeaderConverter",
    "Converter",
    "HeaderConverter",
    "JsonConverter",
    "JsonHeaderConverter",
    "SchemaAndValue",
    "SimpleHeaderConverter",
    "StringConverter",
    "StringHeaderConverter",
    "converter_for",
    "decode_column",
    "decode_headers",
    "encode_column",
    "encode_headers",
    "header_converter_for",
]
