"""Header converters: what each writes and gives back, what each refuses and how it says so,
Connect's names for them, and round trips (property-tested)."""

from __future__ import annotations

import json
from datetime import date
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from headrace.components import extensions
from headrace.components.converters import (
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
from headrace.sdk import ConfigException, DataError

CONNECT_NAMES = {
    "org.apache.kafka.connect.storage.SimpleHeaderConverter": SimpleHeaderConverter,
    "SimpleHeaderConverter": SimpleHeaderConverter,
    "simple": SimpleHeaderConverter,
    "org.apache.kafka.connect.storage.StringConverter": StringHeaderConverter,
    "StringConverter": StringHeaderConverter,
    "string": StringHeaderConverter,
    "org.apache.kafka.connect.converters.ByteArrayConverter": ByteArrayHeaderConverter,
    "ByteArrayConverter": ByteArrayHeaderConverter,
    "bytes": ByteArrayHeaderConverter,
    "org.apache.kafka.connect.json.JsonConverter": JsonHeaderConverter,
    "JsonConverter": JsonHeaderConverter,
    "json": JsonHeaderConverter,
}
LONE_SURROGATE = "a\udc80b"  # text no UTF-8 can hold

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=10,
)


@pytest.mark.parametrize(("name", "kind"), CONNECT_NAMES.items())
def test_connects_class_names_and_aliases_resolve(name: str, kind: type) -> None:
    assert type(header_converter_for({"header.converter": f" {name} "})) is kind
    assert name in HEADER_CONVERTERS


@pytest.mark.parametrize("config", [{}, {"header.converter": ""}, {"key.converter": "string"}])
def test_the_default_is_connects_simple_header_converter(config: dict[str, str]) -> None:
    assert type(header_converter_for(config)) is SimpleHeaderConverter


def test_an_unknown_name_is_refused_naming_the_key_and_what_exists() -> None:
    with pytest.raises(ConfigException) as info:
        header_converter_for({"header.converter": "AvroConverter"})
    message = str(info.value)
    assert message.startswith("header.converter: unknown header converter 'AvroConverter'")
    assert "org.apache.kafka.connect.storage.SimpleHeaderConverter" in message
    assert "json" in message


@pytest.mark.parametrize("name", ["simple", "string", "bytes", "json"])
def test_a_key_the_converter_does_not_take_is_refused_by_its_full_name(name: str) -> None:
    with pytest.raises(ConfigException, match=r"^header\.converter\.nope: unknown key"):
        header_converter_for({"header.converter": name, "header.converter.nope": "1"})


def test_the_plugin_version_key_is_not_the_converters() -> None:
    config = {"header.converter": "bytes", "header.converter.plugin.version": "1.0"}
    assert type(header_converter_for(config)) is ByteArrayHeaderConverter


def test_a_header_converter_from_the_plugin_path_wins_and_gets_its_keys(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class Upper:
        def __init__(self, config: dict[str, str]) -> None:
            self.config = config

        def from_header(self, topic: str, name: str, value: Any) -> bytes | None:
            return str(value).upper().encode()

        def to_header(self, topic: str, name: str, data: bytes | None) -> Any:
            return data

    def find(kind: str, name: str) -> type | None:
        return Upper if (kind, name) == ("header_converter", "string") else None

    monkeypatch.setattr(extensions, "find", find)
    found: Any = header_converter_for(
        {
            "header.converter": "string",
            "header.converter.shout": "yes",
            "header.converter.plugin.version": "2.0",
        }
    )
    assert isinstance(found, Upper)
    assert found.config == {"shout": "yes"}


def test_simple_writes_text_bytes_and_other_values_as_connect_does() -> None:
    simple = SimpleHeaderConverter()
    written = [
        ("héllo", "héllo".encode()),
        (b"\x00\xff", b"\x00\xff"),
        (bytearray(b"ab"), b"ab"),
        (memoryview(b"ab"), b"ab"),
        (42, b"42"),
        (True, b"true"),
        (1e10, b"1.0E10"),
        ([1, "a", b"\x00"], b'[1,"a","AA=="]'),
        ({"a": 1, "b": None}, b'{"a":1,"b":null}'),
        (date(2024, 5, 1), b"2024-05-01"),
        (None, None),
    ]
    for value, data in written:
        assert simple.from_header("t", "h", value) == data, value


def test_simple_gives_a_sink_the_bytes_as_they_came() -> None:
    simple = SimpleHeaderConverter()
    assert simple.to_header("t", "h", b"42") == b"42"
    assert simple.to_header("t", "h", b"\xff") == b"\xff"
    assert simple.to_header("t", "h", None) is None


@pytest.mark.parametrize(
    "converter", [SimpleHeaderConverter(), StringHeaderConverter(), JsonHeaderConverter()]
)
def test_text_no_utf8_can_hold_is_a_data_error_naming_the_header(
    converter: HeaderConverter,
) -> None:
    with pytest.raises(DataError, match=r"^header 'trace': .*surrogates not allowed"):
        converter.from_header("t", "trace", LONE_SURROGATE)


def test_a_value_with_no_text_is_a_data_error_naming_the_header() -> None:
    with pytest.raises(DataError, match=r"^header 'h': cannot write a set"):
        SimpleHeaderConverter().from_header("t", "h", {1})


def test_string_writes_and_reads_text_in_its_encoding() -> None:
    latin = header_converter_for(
        {"header.converter": "string", "header.converter.encoding": "ISO-8859-1"}
    )
    assert latin.from_header("t", "h", "é") == b"\xe9"
    assert latin.to_header("t", "h", b"\xe9") == "é"
    assert latin.from_header("t", "h", b"\x00\xff") == b"\x00\xff"  # bytes as they are
    assert latin.from_header("t", "h", 7) == b"7"
    assert latin.from_header("t", "h", None) is None
    assert latin.to_header("t", "h", None) is None


def test_string_reads_connects_own_key_for_the_encoding() -> None:
    config = {"header.converter": "string", "header.converter.converter.encoding": "UTF-16BE"}
    assert header_converter_for(config).from_header("t", "h", "a") == b"\x00a"
    agreeing = {**config, "header.converter.encoding": "utf_16_be"}
    assert header_converter_for(agreeing).to_header("t", "h", b"\x00a") == "a"


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        ({"encoding": "klingon"}, r"^header\.converter\.encoding: unknown encoding 'klingon'"),
        (
            {"converter.encoding": "klingon"},
            r"^header\.converter\.converter\.encoding: unknown encoding",
        ),
        (
            {"encoding": "utf-8", "converter.encoding": "latin-1"},
            r"^header\.converter\.encoding: 'utf-8' disagrees with",
        ),
    ],
)
def test_string_refuses_an_encoding_it_cannot_use(keys: dict[str, str], message: str) -> None:
    config = {"header.converter": "string", **{f"header.converter.{k}": v for k, v in keys.items()}}
    with pytest.raises(ConfigException, match=message):
        header_converter_for(config)


def test_string_refuses_bytes_not_in_its_encoding_naming_the_header() -> None:
    with pytest.raises(DataError, match=r"^header 'trace' is not utf-8 text"):
        StringHeaderConverter().to_header("t", "trace", b"\xff")


def test_bytes_takes_bytes_only_naming_the_header_it_refuses() -> None:
    converter = ByteArrayHeaderConverter()
    assert converter.from_header("t", "h", b"\x00") == b"\x00"
    assert converter.from_header("t", "h", bytearray(b"\x01")) == b"\x01"
    assert converter.from_header("t", "h", None) is None
    assert converter.to_header("t", "h", b"\x02") == b"\x02"
    for value in ("text", 1, [b"x"]):
        with pytest.raises(DataError, match=r"^header 'h': ByteArrayConverter needs bytes"):
            converter.from_header("t", "h", value)


def test_json_writes_plain_json_and_gives_the_decoded_value() -> None:
    converter = header_converter_for({"header.converter": "json"})
    assert json.loads(converter.from_header("t", "h", {"a": [1, None]}) or b"") == {"a": [1, None]}
    assert converter.from_header("t", "h", b"\x00\x01") == b'"AAE="'  # as Connect: base64 text
    assert converter.from_header("t", "h", None) is None
    assert converter.to_header("t", "h", b'{"n": 1.5}') == {"n": 1.5}
    assert converter.to_header("t", "h", b'"x"') == "x"
    assert converter.to_header("t", "h", None) is None


def test_json_refuses_bad_json_and_values_it_cannot_write_naming_the_header() -> None:
    converter = JsonHeaderConverter()
    with pytest.raises(DataError, match=r"^header 'h': not valid JSON"):
        converter.to_header("t", "h", b"{broken")
    with pytest.raises(DataError, match=r"^header 'h': cannot convert Decimal"):
        converter.from_header("t", "h", Decimal("1.5"))


def test_json_with_schemas_writes_and_reads_connects_envelope() -> None:
    converter = header_converter_for(
        {"header.converter": "json", "header.converter.schemas.enable": "true"}
    )
    assert converter.from_header("t", "h", [1]) == b'{"schema":null,"payload":[1]}'
    assert converter.to_header("t", "h", b'{"schema":null,"payload":[1]}') == [1]
    connects = b'{"schema":{"type":"bytes","optional":false},"payload":"AAE="}'
    assert converter.to_header("t", "h", connects) == b"\x00\x01"
    with pytest.raises(DataError, match=r"^header 'h': JsonConverter with schemas.enable"):
        converter.to_header("t", "h", b"[1]")


@pytest.mark.parametrize(
    ("key", "value"),
    [("schemas.enable", "yes"), ("decimal.format", "TEXT"), ("schemas.cache.size", "-1")],
)
def test_json_refuses_a_bad_value_naming_its_key(key: str, value: str) -> None:
    config = {"header.converter": "json", f"header.converter.{key}": value}
    with pytest.raises(ConfigException, match=rf"^header\.converter\.{key}: must be"):
        header_converter_for(config)


def test_json_takes_connects_other_keys() -> None:
    config = {
        "header.converter": "json",
        "header.converter.schemas.enable": "false",
        "header.converter.decimal.format": "numeric",
        "header.converter.schemas.cache.size": "1000",
    }
    converter = header_converter_for(config)
    assert isinstance(converter, JsonHeaderConverter) and not converter.schemas_enable


def test_headers_keep_their_order_and_repeated_names() -> None:
    headers = (("a", "1"), ("b", None), ("a", 2))
    encoded = encode_headers(SimpleHeaderConverter(), "t", headers)
    assert encoded == [("a", b"1"), ("b", None), ("a", b"2")]
    assert decode_headers(StringHeaderConverter(), "t", encoded) == (
        ("a", "1"),
        ("b", None),
        ("a", "2"),
    )
    assert decode_headers(SimpleHeaderConverter(), "t", encoded) == tuple(encoded)
    assert decode_headers(JsonHeaderConverter(), "t", None) == ()


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16", "gb18030"])
@given(text=st.text())
def test_text_round_trips_through_string(encoding: str, text: str) -> None:
    converter = StringHeaderConverter({"encoding": encoding})
    assert converter.to_header("t", "h", converter.from_header("t", "h", text)) == text


@given(value=json_values)
def test_json_values_round_trip_through_json(value: Any) -> None:
    for enabled in ("false", "true"):
        converter = JsonHeaderConverter({"schemas.enable": enabled})
        assert converter.to_header("t", "h", converter.from_header("t", "h", value)) == value


@given(data=st.binary())
def test_bytes_round_trip_untouched_through_bytes_and_simple(data: bytes) -> None:
    for converter in (ByteArrayHeaderConverter(), SimpleHeaderConverter()):
        assert converter.to_header("t", "h", converter.from_header("t", "h", data)) == data
