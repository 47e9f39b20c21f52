"""Converters: record keys and values between Connect data and the bytes stored in Kafka.

Chosen per connector by ``key.converter`` and ``value.converter``, which accept Connect's class
names or short names; keys under ``<key|value>.converter.`` configure them::

    value.converter=org.apache.kafka.connect.json.JsonConverter   (or: json)
    value.converter.schemas.enable=true

| name | short | notes |
| --- | --- | --- |
| org.apache.kafka.connect.json.JsonConverter | json | ``schemas.enable`` (default true) |
| org.apache.kafka.connect.storage.StringConverter | string | ``encoding`` (default UTF-8) |
| org.apache.kafka.connect.converters.ByteArrayConverter | bytes | bytes as they are |

When a connector names no converter, headrace uses JSON with schemas disabled, for keys and values
alike: plain JSON is what most producers write, and Connect's envelope doubles every message's
size. Naming the JSON converter gives Connect's behaviour, envelope included, unless
``<prefix>.schemas.enable=false`` says otherwise.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Literal

from headrace.runtime.converters.base import NULL, Converter, SchemaAndValue
from headrace.runtime.converters.jsonconv import JsonConverter
from headrace.runtime.converters.simple import ByteArrayConverter, StringConverter
from headrace.sdk.errors import ConfigException

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
}

DEFAULT_CONVERTER = "json"
DEFAULT_SUB_CONFIG = {"schemas.enable": "false"}  # for the converter used when none is named


def converter_for(config: Mapping[str, str], role: Literal["key", "value"]) -> Converter:
    """The converter a connector config selects for its keys or values.

    ConfigException names the key and the converters that exist when the name is unknown.
    """
    prefix = f"{role}.converter"
    named = (config.get(prefix) or "").strip()
    name = named or DEFAULT_CONVERTER
    factory = CONVERTERS.get(name)
    if factory is None:
        known = ", ".join(k for k in CONVERTERS if "." in k or k.islower())
        raise ConfigException(f"{prefix}: unknown converter {name!r} (known: {known})")
    sub = {k[len(prefix) + 1 :]: v for k, v in config.items() if k.startswith(prefix + ".")}
    if not named:
        sub = {**DEFAULT_SUB_CONFIG, **sub}
    return factory(sub, role == "key")


__all__ = [
    "CONVERTERS",
    "NULL",
    "ByteArrayConverter",
    "Converter",
    "JsonConverter",
    "SchemaAndValue",
    "StringConverter",
    "converter_for",
]
