"""Converters: round trips (property-tested), Connect's wire formats, clear errors on bad input."""

from __future__ import annotations

import json
import re
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from headrace.runtime.converters import (
    ByteArrayConverter,
    JsonConverter,
    StringConverter,
    converter_for,
    decode_column,
    encode_column,
)
from headrace.sdk import ConfigException, DataError, Schema, SchemaType, Struct
from headrace.sdk.data import INT64_SCHEMA, OPTIONAL_STRING_SCHEMA, STRING_SCHEMA

INT_RANGES = {
    SchemaType.INT8: 2**7,
    SchemaType.INT16: 2**15,
    SchemaType.INT32: 2**31,
    SchemaType.INT64: 2**63,
}
PRIMITIVES = [t for t in SchemaType if t.is_primitive]
MAP_KEYS = [SchemaType.STRING, SchemaType.INT32, SchemaType.INT64, SchemaType.BOOLEAN]
field_names = st.text(st.characters(categories=("L", "N")), min_size=1, max_size=8)


def schemas() -> st.SearchStrategy[Schema]:
    primitive = st.builds(Schema, st.sampled_from(PRIMITIVES), optional=st.booleans())
    return st.recursive(
        primitive,
        lambda inner: st.one_of(
            st.builds(Schema.array, inner, optional=st.booleans()),
            st.builds(
                Schema.map,
                st.builds(Schema, st.sampled_from(MAP_KEYS)),
                inner,
                optional=st.booleans(),
            ),
            st.lists(st.tuples(field_names, inner), max_size=4, unique_by=lambda f: f[0]).flatmap(
                lambda fields: st.builds(
                    Schema.struct,
                    st.just(fields),
                    name=st.none() | field_names,
                    optional=st.booleans(),
                )
            ),
        ),
        max_leaves=8,
    )


def values(schema: Schema) -> st.SearchStrategy[Any]:
    required = _required_values(schema)
    return st.none() | required if schema.optional else required


def _required_values(schema: Schema) -> st.SearchStrategy[Any]:
    t = schema.type
    if t in INT_RANGES:
        return st.integers(-INT_RANGES[t], INT_RANGES[t] - 1)
    if t in (SchemaType.FLOAT32, SchemaType.FLOAT64):
        return st.floats(allow_nan=False, allow_infinity=False)
    if t is SchemaType.BOOLEAN:
        return st.booleans()
    if t is SchemaType.STRING:
        return st.text()
    if t is SchemaType.BYTES:
        return st.binary(max_size=16)
    if t is SchemaType.ARRAY:
        assert schema.value_schema is not None
        return st.lists(values(schema.value_schema), max_size=3)
    if t is SchemaType.MAP:
        assert schema.key_schema is not None and schema.value_schema is not None
        return st.dictionaries(
            _required_values(schema.key_schema), values(schema.value_schema), max_size=3
        )
    return st.fixed_dictionaries({f.name: values(f.schema) for f in schema.fields}).map(
        lambda fields: Struct(schema, fields)
    )


schema_and_value = schemas().flatmap(lambda s: st.tuples(st.just(s), values(s)))
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.text()
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=10,
)


@given(schema_and_value)
def test_json_with_schemas_round_trips_schema_and_value(pair: tuple[Schema, Any]) -> None:
    schema, value = pair
    converter = JsonConverter({"schemas.enable": "true"})
    data = converter.from_connect_data("t", schema, value)
    assert data is not None or value is None
    back = converter.to_connect_data("t", data)
    if data is None:
        return  # a null value is a tombstone in both modes
    assert back.schema == schema
    assert back.value == value


@given(json_values)
def test_json_without_schemas_round_trips_plain_values(value: Any) -> None:
    converter = JsonConverter({"schemas.enable": "false"})
    back = converter.to_connect_data("t", converter.from_connect_data("t", None, value))
    assert back.schema is None
    assert back.value == value


@given(st.text(st.characters(codec="utf-8")))
def test_string_round_trips(text: str) -> None:
    converter = StringConverter()
    data = converter.from_connect_data("t", None, text)
    assert converter.to_connect_data("t", data).value == text


@given(st.binary())
def test_bytes_round_trip_untouched(data: bytes) -> None:
    converter = ByteArrayConverter()
    assert converter.from_connect_data("t", None, data) == data
    assert converter.to_connect_data("t", data).value == data


def test_json_envelope_is_connects_format() -> None:
    schema = Schema.struct([("id", INT64_SCHEMA), ("name", OPTIONAL_STRING_SCHEMA)], name="r")
    data = JsonConverter({"schemas.enable": "true"}).from_connect_data(
        "t", schema, Struct(schema, {"id": 1})
    )
    assert json.loads(data or b"") == {
        "schema": {
            "type": "struct",
            "optional": False,
            "name": "r",
            "fields": [
                {"field": "id", "type": "int64", "optional": False},
                {"field": "name", "type": "string", "optional": True},
            ],
        },
        "payload": {"id": 1, "name": None},
    }


def test_json_reads_what_connect_writes() -> None:
    connect = b'{"schema":{"type":"bytes","optional":false},"payload":"aGk="}'
    back = JsonConverter({"schemas.enable": "true"}).to_connect_data("t", connect)
    assert back.value == b"hi"


def test_null_is_a_tombstone() -> None:
    for converter in (
        JsonConverter({"schemas.enable": "true"}),
        JsonConverter({"schemas.enable": "false"}),
        StringConverter(),
        ByteArrayConverter(),
    ):
        assert converter.from_connect_data("t", None, None) is None
        assert converter.to_connect_data("t", None).value is None


@pytest.mark.parametrize(
    ("converter", "data", "message"),
    [
        (JsonConverter({"schemas.enable": "false"}), b"{not json", "not valid JSON"),
        (
            JsonConverter({"schemas.enable": "true"}),
            b'{"id": 1}',
            'requires "schema" and "payload"',
        ),
        (
            JsonConverter({"schemas.enable": "true"}),
            b'{"schema": {"type": "int32"}, "payload": "x"}',
            "not a valid int32",
        ),
        (
            JsonConverter({"schemas.enable": "true"}),
            b'{"schema": {"type": "decimal"}, "payload": 1}',
            "unknown schema type",
        ),
        (
            JsonConverter({"schemas.enable": "true"}),
            b'{"schema": {"type": "string"}, "payload": null}',
            "null value for a required",
        ),
        (StringConverter(), b"\xff\xfe", "not valid utf-8"),
    ],
)
def test_malformed_input_is_a_data_error_that_says_why(
    converter: Any, data: bytes, message: str
) -> None:
    with pytest.raises(DataError, match=message):
        converter.to_connect_data("t", data)


def test_values_that_do_not_fit_are_data_errors() -> None:
    with pytest.raises(DataError):
        JsonConverter({"schemas.enable": "true"}).from_connect_data("t", STRING_SCHEMA, 1)
    with pytest.raises(DataError):
        ByteArrayConverter().from_connect_data("t", None, "text")
    with pytest.raises(DataError):
        JsonConverter({"schemas.enable": "false"}).from_connect_data("t", None, object())


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        (None, JsonConverter),
        ("org.apache.kafka.connect.json.JsonConverter", JsonConverter),
        ("json", JsonConverter),
        ("org.apache.kafka.connect.storage.StringConverter", StringConverter),
        ("string", StringConverter),
        ("org.apache.kafka.connect.converters.ByteArrayConverter", ByteArrayConverter),
        ("bytes", ByteArrayConverter),
    ],
)
def test_converters_are_chosen_by_connect_class_or_short_name(name: str | None, kind: type) -> None:
    config = {"value.converter": name} if name else {}
    assert isinstance(converter_for(config, "value"), kind)


def test_default_is_json_without_schemas_and_sub_keys_configure_it() -> None:
    default = converter_for({}, "value")
    assert isinstance(default, JsonConverter) and not default.schemas_enable
    enabled = converter_for(
        {
            "value.converter": "json",
            "value.converter.schemas.enable": "true",
            "key.converter.schemas.enable": "false",
        },
        "value",
    )
    assert isinstance(enabled, JsonConverter) and enabled.schemas_enable
    key = converter_for({"key.converter.schemas.enable": "true"}, "key")
    assert isinstance(key, JsonConverter) and key.schemas_enable and key.is_key


@pytest.mark.parametrize("name", ["org.apache.kafka.connect.json.JsonConverter", "json"])
def test_naming_the_json_converter_gives_connects_default_envelope(name: str) -> None:
    named = converter_for({"value.converter": name}, "value")
    assert isinstance(named, JsonConverter) and named.schemas_enable
    plain = converter_for(
        {"value.converter": name, "value.converter.schemas.enable": "false"}, "value"
    )
    assert isinstance(plain, JsonConverter) and not plain.schemas_enable


def test_unknown_converter_names_the_key_and_the_choices() -> None:
    with pytest.raises(ConfigException, match=r"value.converter: unknown converter .*json"):
        converter_for({"value.converter": "avro"}, "value")
    with pytest.raises(ConfigException, match=r"schemas\.enable"):
        converter_for({"key.converter.schemas.enable": "maybe"}, "key")


# Whole columns (the batch API) give the bytes the per-record path gives, value for value.

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)
COLUMN_CASES = [
    (StringConverter(), st.none() | st.text(), pa.string()),
    (StringConverter(), st.none() | st.text(), pa.large_string()),
    (StringConverter({"encoding": "utf-16"}), st.none() | st.text(), pa.string()),
    (StringConverter(), st.none() | st.integers(-(2**63), 2**63 - 1), pa.int64()),
    (ByteArrayConverter(), st.none() | st.binary(), pa.binary()),
    (converter_for({}, "value"), st.none() | st.text(), pa.string()),
]


@pytest.mark.parametrize(("converter", "values", "arrow_type"), COLUMN_CASES)
@given(data=st.data())
def test_a_column_converts_as_its_values_do_one_by_one(
    converter: Any, values: Any, arrow_type: pa.DataType, data: st.DataObject
) -> None:
    column = data.draw(st.lists(values, max_size=30))
    one_by_one = [converter.from_connect_data("t", None, v) for v in column]
    assert encode_column(converter, "t", None, pa.array(column, arrow_type)) == one_by_one
    assert encode_column(converter, "t", None, column) == one_by_one  # a plain list too


def test_a_column_with_a_value_the_converter_refuses_raises_its_error() -> None:
    with pytest.raises(DataError, match="cannot write bytes"):
        encode_column(StringConverter(), "t", None, pa.array([b"raw"], pa.binary()))


@pytest.mark.parametrize(
    ("converter", "messages"),
    [
        (StringConverter(), st.none() | st.text().map(str.encode)),
        (ByteArrayConverter(), st.none() | st.binary()),
        (converter_for({}, "value"), st.none() | JSON.map(lambda v: json.dumps(v).encode())),
    ],
)
@given(data=st.data())
def test_messages_decode_to_a_column_of_what_each_decodes_to(
    converter: Any, messages: Any, data: st.DataObject
) -> None:
    batch = data.draw(st.lists(messages, max_size=30))
    decoded = decode_column(converter, "t", batch)
    if decoded is None:
        # Only plain JSON declines a valid batch: when a number might exceed 64 bits.
        assert isinstance(converter, JsonConverter)
        assert any(re.search(rb"\d{19}", m or b"") for m in batch)
        return
    schema, column = decoded
    one_by_one = [converter.to_connect_data("t", m) for m in batch]
    assert (column.to_pylist() if isinstance(column, pa.Array) else column) == [
        d.value for d in one_by_one
    ]
    assert all(d.schema in (None, schema) for d in one_by_one)


def test_text_that_is_not_utf8_or_a_converter_without_columns_decodes_one_by_one() -> None:
    assert decode_column(StringConverter(), "t", [b"ok", b"\xff"]) is None
    assert decode_column(StringConverter({"encoding": "latin-1"}), "t", [b"\xff"]) is None
    assert decode_column(JsonConverter(), "t", [b'{"schema": null, "payload": 1}']) is None
    plain = converter_for({}, "value")  # plain JSON: orjson, but not what it refuses
    for refused in (b"NaN", b"Infinity", b"{bad", b"[2, 18446744073709551616]"):
        assert decode_column(plain, "t", [b"1", refused]) is None
    # orjson would make floats of these: they go one by one, and stay exact integers.
    for big in (2**64, -(2**63) - 1, 10**30):
        assert decode_column(plain, "t", [str(big).encode()]) is None
        assert plain.to_connect_data("t", str(big).encode()).value == big
