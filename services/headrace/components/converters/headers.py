"""Header converters: record header values between what tasks give and take and the bytes stored
in Kafka, as Connect's ``HeaderConverter`` does.

Chosen per connector by ``header.converter``, by Connect's class name, its simple name or a short
name; keys under ``header.converter.`` configure it, and any other key there is refused::

    header.converter=org.apache.kafka.connect.storage.StringConverter   (or: string)
    header.converter.encoding=UTF-16

| name | short | keys |
| --- | --- | --- |
| org.apache.kafka.connect.storage.SimpleHeaderConverter | simple | none |
| org.apache.kafka.connect.storage.StringConverter | string | ``encoding`` (default UTF-8) |
| org.apache.kafka.connect.converters.ByteArrayConverter | bytes | none |
| org.apache.kafka.connect.json.JsonConverter | json | ``schemas.enable`` (default false) |

What each puts in Kafka for a value a source task gave, and gives a sink task for what it
consumed:

- simple: text as UTF-8, bytes as they are, any other value as its text; the bytes as they came.
- string: text in the encoding, bytes as they are, any other value as its text; text.
- bytes: bytes only (anything else is a DataError); the bytes.
- json: the value as JSON; the decoded JSON value.

SimpleHeaderConverter is the default, as in Connect. A null header value stays null both ways,
whichever converter runs. A value's text is Connect's ``Values.convertToString``: ``42``, ``true``,
``1.0E10``, ``[1,2]``, ``{"a":1}``, base64 for bytes inside a list or map; the text
``headrace.components.transforms`` writes into headers (InsertHeader, HeaderFrom), so a header a
transformation made and one a task gave read alike.

What a sink task is given with SimpleHeaderConverter: the bytes as they came, where Connect's
parses the text into the value it looks like (``Values.parseString``: ``true`` a boolean, ``42`` a
byte, ``[1,2]`` an array, a date-shaped text a Date, anything else the text). headrace keeps bytes
because sink tasks were given bytes before ``header.converter`` was honoured, and the default must
not change what they receive; because that parse is a guess, which makes one header a number in
one record and text in the next, so a task must handle every type anyway; and because bytes lose
nothing, so a record a task reports as errant goes to the dead letter queue as it came. A task
that wants text names ``string``; one that wants typed values names ``json``.

The string converter reads Connect's own key for the encoding, ``converter.encoding``, as well as
``encoding`` (what headrace's value converter reads). Where Connect writes any other value with
Java's ``toString``, it writes the value's text: the same for numbers and booleans, Connect's
JSON-like form rather than ``[1, 2]`` or ``{a=1}`` for lists and maps. It writes bytes as they
are, where Connect's would write ``[B@1b6d3586``.

The JSON converter writes what the value converter of that name writes without a schema (bytes
as base64 text, which a sink is then given as text). ``schemas.enable`` defaults to false, where
Connect's defaults to true: headrace's headers carry no schema, so the envelope would only ever say
``"schema": null``. With ``schemas.enable=true`` headers are written in that envelope and read from
Connect's, schema and all: a sink task is given the value the schema describes (bytes for a
``bytes`` schema, a ``date`` for a Date). ``decimal.format`` is the value converter's.
``schemas.cache.size`` is accepted, so that a Connect
config carries over, and does nothing: there is no cache to size.

A header converter on the plugin path (manifest ``type`` ``header_converter``) is created as
``cls(config)``, ``config`` being the keys under ``header.converter.`` without that prefix
(``plugin.version`` aside), and implements ``from_header`` and ``to_header``.
"""

from __future__ import annotations

import codecs
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from headrace.components.converters.base import named_factory, sub_config
from headrace.components.converters.jsonconv import DECIMAL_FORMATS, JsonConverter
from headrace.components.transforms.headers import header_value
from headrace.sdk.components import HeaderConverter
from headrace.sdk.errors import ConfigException, DataError
from headrace.sdk.records import Headers

PREFIX = "header.converter"

Encoded = list[tuple[str, bytes | None]]
"""Headers as Kafka stores them: each value bytes, or None for a null value."""


class SimpleHeaderConverter:
    """Connect's default: text as UTF-8, bytes as they are, other values as their text; a sink
    task is given the bytes as they came (see the module docstring for why)."""

    def __init__(self, config: Mapping[str, str] | None = None) -> None:
        _only(config, "SimpleHeaderConverter", ())

    def from_header(self, topic: str, name: str, value: Any) -> bytes | None:
        return _as_bytes(name, value, "utf-8")

    def to_header(self, topic: str, name: str, data: bytes | None) -> Any:
        return data


class StringHeaderConverter:
    """Connect's ``StringConverter`` for headers: text in an encoding (``encoding``, or Connect's
    ``converter.encoding``; default UTF-8) both ways."""

    def __init__(self, config: Mapping[str, str] | None = None) -> None:
        config = _only(config, "StringConverter", ("encoding", "converter.encoding"))
        given = {
            k: _encoding(k, config[k]) for k in ("encoding", "converter.encoding") if k in config
        }
        if len({codecs.lookup(e).name for e in given.values()}) > 1:
            raise ConfigException(
                f"{PREFIX}.encoding: {given['encoding']!r} disagrees with "
                f"{PREFIX}.converter.encoding {given['converter.encoding']!r}; set one"
            )
        self.encoding = next(iter(given.values()), "utf-8")

    def from_header(self, topic: str, name: str, value: Any) -> bytes | None:
        return _as_bytes(name, value, self.encoding)

    def to_header(self, topic: str, name: str, data: bytes | None) -> str | None:
        if data is None:
            return None
        try:
            return bytes(data).decode(self.encoding)
        except UnicodeDecodeError as exc:
            raise DataError(f"header {name!r} is not {self.encoding} text: {exc}") from exc


class ByteArrayHeaderConverter:
    """Connect's ``ByteArrayConverter`` for headers: bytes only, as they are, both ways."""

    def __init__(self, config: Mapping[str, str] | None = None) -> None:
        _only(config, "ByteArrayConverter", ())

    def from_header(self, topic: str, name: str, value: Any) -> bytes | None:
        if value is None:
            return None
        if not isinstance(value, bytes | bytearray | memoryview):
            raise DataError(
                f"header {name!r}: ByteArrayConverter needs bytes, not {type(value).__name__}"
            )
        return bytes(value)

    def to_header(self, topic: str, name: str, data: bytes | None) -> bytes | None:
        return data


class JsonHeaderConverter:
    """Connect's ``JsonConverter`` for headers: plain JSON by default, Connect's envelope with
    ``schemas.enable=true`` (see the module docstring)."""

    def __init__(self, config: Mapping[str, str] | None = None) -> None:
        keys = ("schemas.enable", "decimal.format", "schemas.cache.size")
        config = _only(config, "JsonConverter", keys)
        schemas = config.get("schemas.enable", "false").strip().lower()
        if schemas not in ("true", "false"):
            raise ConfigException(
                f"{PREFIX}.schemas.enable: must be true or false, not {config['schemas.enable']!r}"
            )
        decimals = config.get("decimal.format", "BASE64").strip().upper()
        if decimals not in DECIMAL_FORMATS:
            raise ConfigException(
                f"{PREFIX}.decimal.format: must be one of {', '.join(DECIMAL_FORMATS)}, "
                f"not {config['decimal.format']!r}"
            )
        size = config.get("schemas.cache.size", "0").strip()
        if not size.isdecimal():
            raise ConfigException(
                f"{PREFIX}.schemas.cache.size: must be a whole number, not {size!r}"
            )
        self._json = JsonConverter({"schemas.enable": schemas, "decimal.format": decimals})

    @property
    def schemas_enable(self) -> bool:
        return self._json.schemas_enable

    def from_header(self, topic: str, name: str, value: Any) -> bytes | None:
        try:
            return self._json.from_connect_data(topic, None, value)
        except DataError as exc:  # text with a lone surrogate among them: no UTF-8 for it
            raise DataError(f"header {name!r}: {exc}") from exc

    def to_header(self, topic: str, name: str, data: bytes | None) -> Any:
        try:
            return self._json.to_connect_data(topic, data).value
        except DataError as exc:
            raise DataError(f"header {name!r}: {exc}") from exc


HeaderConverterFactory = Callable[[Mapping[str, str]], HeaderConverter]

HEADER_CONVERTERS: dict[str, HeaderConverterFactory] = {
    "org.apache.kafka.connect.storage.SimpleHeaderConverter": SimpleHeaderConverter,
    "org.apache.kafka.connect.storage.StringConverter": StringHeaderConverter,
    "org.apache.kafka.connect.converters.ByteArrayConverter": ByteArrayHeaderConverter,
    "org.apache.kafka.connect.json.JsonConverter": JsonHeaderConverter,
    "simple": SimpleHeaderConverter,
    "string": StringHeaderConverter,
    "bytes": ByteArrayHeaderConverter,
    "json": JsonHeaderConverter,
    # Simple class names, as Connect accepts aliases for its own plugins.
    "SimpleHeaderConverter": SimpleHeaderConverter,
    "StringConverter": StringHeaderConverter,
    "ByteArrayConverter": ByteArrayHeaderConverter,
    "JsonConverter": JsonHeaderConverter,
}

DEFAULT_HEADER_CONVERTER = "simple"


def header_converter_for(config: Mapping[str, str]) -> HeaderConverter:
    """The header converter a connector config selects (``header.converter``), configured by
    the keys under ``header.converter.``.

    ConfigException, its message starting with the key at fault, for a name nothing answers to
    (listing those that exist) and for a key under the prefix the converter does not take or a
    value it refuses.
    """
    name = (config.get(PREFIX) or "").strip() or DEFAULT_HEADER_CONVERTER
    factory = named_factory("header_converter", PREFIX, name, HEADER_CONVERTERS)
    converter: HeaderConverter = factory(sub_config(config, PREFIX))
    return converter


def encode_headers(converter: HeaderConverter, topic: str, headers: Headers) -> Encoded:
    """A source record's headers as Kafka stores them; the converter's DataError, naming the
    header, for a value it cannot write."""
    return [(name, converter.from_header(topic, name, value)) for name, value in headers]


_AS_CONSUMED = (SimpleHeaderConverter, ByteArrayHeaderConverter)
"""The converters that give a sink task each header's bytes as they came."""


def decode_headers(
    converter: HeaderConverter, topic: str, headers: Sequence[tuple[str, bytes | None]] | None
) -> Headers:
    """A consumed message's headers as a sink task is given them; the converter's DataError,
    naming the header, for one it cannot read."""
    if not headers:
        return ()
    if type(converter) in _AS_CONSUMED:  # no Python call per header for the default
        return tuple(headers)
    return tuple((name, converter.to_header(topic, name, data)) for name, data in headers)


def _as_bytes(name: str, value: Any, encoding: str) -> bytes | None:
    """Bytes as they are; text, or other values as their text, in ``encoding``."""
    if isinstance(value, memoryview):
        return bytes(value)
    try:
        plain = header_value(value)
    except DataError as exc:
        raise DataError(f"header {name!r}: {exc}") from exc
    if plain is None or isinstance(plain, bytes):
        return plain
    try:
        return plain.encode(encoding)
    except UnicodeEncodeError as exc:
        raise DataError(f"header {name!r}: cannot encode its text as {encoding}: {exc}") from exc


def _encoding(key: str, raw: str) -> str:
    """An encoding's name as given, once sure Python knows it."""
    name = raw.strip()
    try:
        codecs.lookup(name)
    except LookupError:
        raise ConfigException(f"{PREFIX}.{key}: unknown encoding {raw!r}") from None
    return name


def _only(
    config: Mapping[str, str] | None, converter: str, keys: Iterable[str]
) -> Mapping[str, str]:
    """``config``, once sure it has none but ``keys``; ConfigException naming the first other."""
    config = config or {}
    allowed = set(keys)
    unknown = sorted(k for k in config if k not in allowed)
    if unknown:
        takes = ", ".join(f"{PREFIX}.{k}" for k in sorted(allowed)) or "no keys"
        raise ConfigException(
            f"{PREFIX}.{unknown[0]}: unknown key for the header converter {converter} "
            f"(it takes {takes})"
        )
    return config
