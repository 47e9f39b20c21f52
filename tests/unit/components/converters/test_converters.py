"""Converters: round trips (property-tested), Connect's wire formats, clear errors on bad input."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from datetime import UTC, date, datetime, time
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from headrace.components.converters import (
    ByteArrayConverter,
    JsonConverter,
    StringConverter,
    converter_for,
    decode_column,
    encode_column,
)
from headrace.sdk import (
    DATE_SCHEMA,
    DECIMAL_NAME,
    LOGICAL_NAMES,
    OPTIONAL_DATE_SCHEMA,
    OPTIONAL_TIMESTAMP_SCHEMA,
    TIME_SCHEMA,
    TIMESTAMP_SCHEMA,
    ConfigException,
    DataError,
    Schema,
    SchemaBuilder,
    SchemaType,
    Struct,
    decimal_scale,
    decimal_schema,
)
from headrace.sdk.data import (
    BOOLEAN_SCHEMA,
    INT32_SCHEMA,
    INT64_SCHEMA,
    OPTIONAL_STRING_SCHEMA,
    STRING_SCHEMA,
)

INT_RANGES = {
    SchemaType.INT8: 2**7,
    SchemaType.INT16: 2**15,
    SchemaType.INT32: 2**31,
    SchemaType.INT64: 2**63,
}
PRIMITIVES = [t for t in SchemaType if t.is_primitive]
LOGICAL = [*(decimal_schema(s) for s in (-2, 0, 2, 9)), DATE_SCHEMA, TIME_SCHEMA, TIMESTAMP_SCHEMA]
MAP_KEYS = [STRING_SCHEMA, INT32_SCHEMA, INT64_SCHEMA, BOOLEAN_SCHEMA, DATE_SCHEMA, LOGICAL[2]]
field_names = st.text(st.characters(categories=("L", "N")), min_size=1, max_size=8)


def one_of_schemas(choices: list[Schema]) -> st.SearchStrategy[Schema]:
    """``st.sampled_from(choices)`` with a short repr: Hypothesis writes out strategies when a
    filtered draw keeps failing, and warns (an error here) when that text passes 35 kB."""
    return st.integers(0, len(choices) - 1).map(lambda i: choices[i])


def schemas() -> st.SearchStrategy[Schema]:
    primitive = st.builds(Schema, st.sampled_from(PRIMITIVES), optional=st.booleans())
    logical = st.builds(replace, one_of_schemas(LOGICAL), optional=st.booleans())
    return st.recursive(
        primitive | logical,
        lambda inner: st.one_of(
            st.builds(Schema.array, inner, optional=st.booleans()),
            st.builds(Schema.map, one_of_schemas(MAP_KEYS), inner, optional=st.booleans()),
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
    if schema.name in LOGICAL_NAMES:
        return _logical_values(schema)
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


def _logical_values(schema: Schema) -> st.SearchStrategy[Any]:
    """Python values of a logical schema: decimals of its scale, negative and of more digits than
    a decimal context keeps; dates, times and timestamps to the millisecond, before 1970 too."""
    if schema.name == DECIMAL_NAME:
        scale = decimal_scale(schema)
        return st.integers(-(10**40), 10**40).map(lambda n: _scaled(n, scale))
    if schema.name == DATE_SCHEMA.name:
        return st.dates()
    if schema.name == TIME_SCHEMA.name:
        return st.times().map(_to_millis)
    return st.datetimes(timezones=st.just(UTC)).map(_to_millis)


def _scaled(unscaled: int, scale: int) -> Decimal:
    sign, digits, _ = Decimal(unscaled).as_tuple()
    return Decimal((sign, digits, -scale))


def _to_millis(t: Any) -> Any:
    """``t`` to the millisecond, and without the ``fold`` that no wire form keeps."""
    return t.replace(microsecond=t.microsecond // 1000 * 1000, fold=0)


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


@pytest.mark.parametrize("decimal_format", ["BASE64", "NUMERIC"])
@given(pair=schema_and_value)
def test_json_with_schemas_round_trips_schema_and_value(
    decimal_format: str, pair: tuple[Schema, Any]
) -> None:
    schema, value = pair
    converter = JsonConverter({"schemas.enable": "true", "decimal.format": decimal_format})
    data = converter.from_connect_data("t", schema, value)
    assert data is not None or value is None
    back = converter.to_connect_data("t", data)
    if data is None:
        return  # a null value is a tombstone in both modes
    assert back.schema == schema
    assert back.value == value
    assert repr(back.value) == repr(value)  # same types, and decimals of the same scale


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


@pytest.mark.parametrize(
    "messages",
    [
        [b'{"id": 1}', None],  # a tombstone: a row of nulls, which put makes
        [b'{"id": 1}\n{"id": 2}', b""],  # two objects and none: as many lines as messages
        [b'{"id": 1}\r{"id": 2}'],  # pyarrow's reader breaks lines at a carriage return too
        [b'{"id": 9007199254740993}', b'{"id": 0.5}'],  # past 2**53 beside a fraction
        [b'{"a": [10000000000000001, 1.5]}'],  # the same in a list
        [b'{"id": -18446744073709551616}'],  # past 64 bits
        [b'{"x": Inf}'],  # the reader takes these; JSON does not
        [b'{"x": -NaN}'],
        [b'{"s": {"\xff": 1}}'],  # a nested name that is not UTF-8
        [b'{"s": "\xff"}'],  # text that is not UTF-8
        [b'{"a": 1, "a": 2}'],  # a key twice
        [b"[1, 2]"],  # not an object
        [b'{"a": ' + b"[" * 100 + b"1" + b"]" * 100 + b"}"],  # nested past MAX_ARROW_DEPTH
    ],
)
def test_json_that_arrow_would_hold_otherwise_than_it_came_is_not_read_into_arrow(
    messages: list[bytes | None],
) -> None:
    """Each of these, read by pyarrow's JSON reader, would be refused later, or become rows or
    values other than decoding it makes: the batch goes the way of Python values."""
    assert JsonConverter({"schemas.enable": "false"}).to_arrow_column("t", messages) is None


def test_json_objects_read_into_arrow_are_what_decoding_them_gives() -> None:
    messages = [b'{"id": 1, "at": "2020-01-01", "n": {"l": [1.5, 2]}}', b'{"id": 2, "x": null}']
    read = JsonConverter({"schemas.enable": "false"}).to_arrow_column("t", messages)
    assert read is not None
    schema, values = read
    assert schema is None
    assert values.to_arrow().schema.field("at").type == pa.string()  # not a timestamp
    decoded = [converter_for({}, "value").to_connect_data("t", m).value for m in messages]
    assert values.to_pylist() == decoded
    assert values[1] == {"id": 2, "x": None}
    assert values.nbytes >= values.to_arrow().nbytes + sum(map(len, messages))


# Logical types and schema parameters, in Connect's exact bytes.

CONNECT = JsonConverter({"schemas.enable": "true"})
NUMERIC = JsonConverter({"schemas.enable": "true", "decimal.format": "NUMERIC"})
D2 = (
    b'{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal",'
    b'"version":1,"parameters":{"scale":"2"}}'
)


@pytest.mark.parametrize(
    ("converter", "schema", "value", "expected"),
    [
        # 12.34 at scale 2 is unscaled 1234, the bytes 04 d2.
        (CONNECT, decimal_schema(2), Decimal("12.34"), b'{"schema":%b,"payload":"BNI="}' % D2),
        (CONNECT, decimal_schema(2), Decimal("-1.56"), b'{"schema":%b,"payload":"/2Q="}' % D2),
        (NUMERIC, decimal_schema(2), Decimal("12.30"), b'{"schema":%b,"payload":12.30}' % D2),
        (
            CONNECT,
            TIMESTAMP_SCHEMA,
            datetime(1970, 2, 16, 7, 6, 40, tzinfo=UTC),
            b'{"schema":{"type":"int64","optional":false,'
            b'"name":"org.apache.kafka.connect.data.Timestamp","version":1},"payload":4000000000}',
        ),
        (
            CONNECT,
            DATE_SCHEMA,
            date(1997, 5, 19),
            b'{"schema":{"type":"int32","optional":false,'
            b'"name":"org.apache.kafka.connect.data.Date","version":1},"payload":10000}',
        ),
        (
            CONNECT,
            TIME_SCHEMA,
            time(4),
            b'{"schema":{"type":"int32","optional":false,'
            b'"name":"org.apache.kafka.connect.data.Time","version":1},"payload":14400000}',
        ),
        (
            CONNECT,
            SchemaBuilder.boolean().name("bool").version(3).doc("the documentation")
            .parameter("foo", "bar").build(),
            True,
            b'{"schema":{"type":"boolean","optional":false,"name":"bool","version":3,'
            b'"doc":"the documentation","parameters":{"foo":"bar"}},"payload":true}',
        ),
    ],
)  # fmt: skip
def test_logical_values_and_parameters_are_written_byte_for_byte_as_connect_writes_them(
    converter: JsonConverter, schema: Schema, value: Any, expected: bytes
) -> None:
    assert converter.from_connect_data("t", schema, value) == expected
    back = converter.to_connect_data("t", expected)
    assert (back.schema, back.value) == (schema, value)


def test_a_struct_of_logical_fields_is_written_as_connect_writes_it() -> None:
    order = (
        SchemaBuilder.struct()
        .name("Order")
        .field("price", decimal_schema(2))
        .field("day", OPTIONAL_DATE_SCHEMA)
        .field("at", OPTIONAL_TIMESTAMP_SCHEMA)
        .build()
    )
    value = Struct(order, {"price": Decimal("-0.50"), "day": date(1969, 7, 20)})
    data = CONNECT.from_connect_data("t", order, value)
    assert data == (
        b'{"schema":{"type":"struct","fields":['
        b'{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal",'
        b'"version":1,"parameters":{"scale":"2"},"field":"price"},'
        b'{"type":"int32","optional":true,"name":"org.apache.kafka.connect.data.Date",'
        b'"version":1,"field":"day"},'
        b'{"type":"int64","optional":true,"name":"org.apache.kafka.connect.data.Timestamp",'
        b'"version":1,"field":"at"}],'
        b'"optional":false,"name":"Order"},'
        b'"payload":{"price":"zg==","day":-165,"at":null}}'
    )
    assert CONNECT.to_connect_data("t", data).value == value


@pytest.mark.parametrize(
    ("schema_json", "payload", "expected"),
    [
        # From Connect's JsonConverterTest: what its JsonConverter writes, as it writes it.
        ('{ "type": "bytes", "name": "org.apache.kafka.connect.data.Decimal", "version": 1, '
         '"parameters": { "scale": "2" } }', '"AJw="', Decimal("1.56")),
        ('{ "type": "bytes", "name": "org.apache.kafka.connect.data.Decimal", "version": 1, '
         '"optional": true, "parameters": { "scale": "2" } }', "null", None),
        ('{ "type": "int32", "name": "org.apache.kafka.connect.data.Date", "version": 1 }',
         "10000", date(1997, 5, 19)),
        ('{ "type": "int32", "name": "org.apache.kafka.connect.data.Time", "version": 1 }',
         "14400000", time(4)),
        ('{ "type": "int64", "name": "org.apache.kafka.connect.data.Timestamp", "version": 1 }',
         "4000000000", datetime(1970, 2, 16, 7, 6, 40, tzinfo=UTC)),
        # decimal.format=NUMERIC, read whatever this converter's own setting; fewer places are
        # filled in, and digits beyond a float's survive.
        (D2.decode(), "1.56", Decimal("1.56")),
        (D2.decode(), "1.5", Decimal("1.50")),
        (D2.decode(), "-2", Decimal("-2.00")),
        (D2.decode(), "1.500", Decimal("1.50")),
        (D2.decode(), "12345678901234567890123.45", Decimal("12345678901234567890123.45")),
    ],
)  # fmt: skip
def test_json_reads_the_logical_values_connect_writes(
    schema_json: str, payload: str, expected: Any
) -> None:
    data = f'{{ "schema": {schema_json}, "payload": {payload} }}'.encode()
    value = CONNECT.to_connect_data("t", data).value
    assert value == expected and repr(value) == repr(expected)


def test_a_logical_default_and_parameters_round_trip_in_the_schema() -> None:
    schema = replace(TIMESTAMP_SCHEMA, optional=True, default=datetime(2000, 1, 1, tzinfo=UTC))
    data = CONNECT.from_connect_data("t", schema, None)
    assert json.loads(data or b"")["schema"]["default"] == 946684800000
    back = CONNECT.to_connect_data("t", data)
    assert back.schema == schema and back.value == schema.default
    numeric = replace(decimal_schema(1), default=Decimal("0.5"))
    assert b'"default":0.5' in (NUMERIC.from_connect_data("t", numeric, None) or b"")


def test_floats_in_the_envelope_stay_floats() -> None:
    data = b'{"schema": null, "payload": {"a": [1.5, 2]}}'
    assert CONNECT.to_connect_data("t", data).value == {"a": [1.5, 2]}
    assert isinstance(CONNECT.to_connect_data("t", data).value["a"][0], float)
    double = b'{"schema": {"type": "double"}, "payload": 0.1}'
    assert CONNECT.to_connect_data("t", double).value == 0.1


@pytest.mark.parametrize(
    ("schema_json", "payload", "message"),
    [
        (D2.decode(), "1.555", "not a decimal of scale 2"),
        (D2.decode(), "1E+999999999", "not a decimal of scale 2"),
        (D2.decode(), "true", "base64 text or a JSON number"),
        (D2.decode(), '"AJw"', "invalid base64"),
        (D2.decode(), '""', "non-empty bytes"),
        ('{"type": "bytes", "name": "org.apache.kafka.connect.data.Decimal"}', '"AJw="',
         "integer 'scale' parameter"),
        ('{"type": "int64", "name": "org.apache.kafka.connect.data.Timestamp"}', "1.5",
         "JSON integers"),
        ('{"type": "int32", "name": "org.apache.kafka.connect.data.Date"}', '"1997-05-19"',
         "JSON integers"),
        ('{"type": "int32", "name": "org.apache.kafka.connect.data.Time"}', "86400000",
         "not a time of day"),
        ('{"type": "int32", "name": "org.apache.kafka.connect.data.Date"}', "2147483648",
         "not a valid int32"),
        ('{"type": "string", "parameters": {"a": 1}}', '"x"', "object of strings"),
        ('{"type": "string", "parameters": ["a"]}', '"x"', "object of strings"),
        ('{"type": "int32"}', "1.0", "not a valid int32"),
    ],
)  # fmt: skip
def test_logical_values_that_do_not_fit_are_data_errors_that_say_why(
    schema_json: str, payload: str, message: str
) -> None:
    data = f'{{"schema": {schema_json}, "payload": {payload}}}'.encode()
    with pytest.raises(DataError, match=message):
        CONNECT.to_connect_data("t", data)


@pytest.mark.parametrize(
    ("schema", "value", "message"),
    [
        (decimal_schema(2), Decimal("12.3"), "scale 1 where"),
        (decimal_schema(2), 12.34, "not a finite decimal.Decimal"),
        (TIMESTAMP_SCHEMA, 4000000000, "timezone-aware"),
        (TIMESTAMP_SCHEMA, datetime(2024, 1, 1), "timezone-aware"),
        (DATE_SCHEMA, datetime(2024, 1, 1, tzinfo=UTC), "not a datetime.date"),
    ],
)
def test_writing_a_value_its_logical_schema_refuses_is_a_data_error(
    schema: Schema, value: Any, message: str
) -> None:
    for converter in (CONNECT, NUMERIC):
        with pytest.raises(DataError, match=message):
            converter.from_connect_data("t", schema, value)


def test_decimal_format_is_base64_or_numeric_in_any_case() -> None:
    assert not JsonConverter().numeric_decimals
    assert JsonConverter({"decimal.format": "numeric"}).numeric_decimals
    assert converter_for(
        {"value.converter": "json", "value.converter.decimal.format": "NUMERIC"}, "value"
    ).from_connect_data("t", decimal_schema(0), Decimal(7)) == (
        b'{"schema":{"type":"bytes","optional":false,'
        b'"name":"org.apache.kafka.connect.data.Decimal","version":1,'
        b'"parameters":{"scale":"0"}},"payload":7}'
    )
    with pytest.raises(ConfigException, match=r"decimal\.format.*'FLOAT'"):
        JsonConverter({"decimal.format": "FLOAT"})


@pytest.mark.parametrize("schemas", ["true", "false"])
def test_json_refuses_text_no_utf8_can_hold_as_a_data_error(schemas: str) -> None:
    converter = JsonConverter({"schemas.enable": schemas})
    with pytest.raises(DataError, match="not valid Unicode"):
        converter.from_connect_data("t", None, {"name": "half a pair: \ud800"})


ORDER_SCHEMA = {
    "type": "struct",
    "optional": False,
    "fields": [
        {"field": "id", "type": "int64", "optional": False},
        {"field": "note", "type": "string", "optional": True, "default": "none"},
    ],
}


def test_schema_content_reads_bare_payloads_with_the_schema_it_gives() -> None:
    """KIP-1054: with ``schema.content`` the message is the payload; the envelope is not looked
    for, and writing still writes it."""
    config = {"schemas.enable": "true", "schema.content": json.dumps(ORDER_SCHEMA)}
    converter = JsonConverter(config)
    read = converter.to_connect_data("t", b'{"id": 7, "note": "rush"}')
    assert read.schema is not None and [f.name for f in read.schema.fields] == ["id", "note"]
    assert isinstance(read.value, Struct) and read.value.get("id") == 7
    assert read.value.get("note") == "rush"
    with pytest.raises(DataError):  # an id that is not an int64, as the schema says
        converter.to_connect_data("t", b'{"id": "seven"}')
    written = json.loads(converter.from_connect_data("t", read.schema, read.value) or b"")
    assert set(written) == {"schema", "payload"}
    # Without schemas.enable the content changes nothing: plain JSON, no schema.
    plain = JsonConverter({"schemas.enable": "false", "schema.content": json.dumps(ORDER_SCHEMA)})
    assert plain.to_connect_data("t", b'{"id": 7}').schema is None


def test_a_schema_content_that_is_no_schema_is_refused_naming_the_key() -> None:
    for content in ("{not json", '{"type": "nothing"}'):
        with pytest.raises(ConfigException, match=r"^schema\.content: not a Connect schema"):
            JsonConverter({"schema.content": content})


def test_replace_null_with_default_false_keeps_a_field_s_null() -> None:
    envelope = json.dumps({"schema": ORDER_SCHEMA, "payload": {"id": 1, "note": None}}).encode()
    replaced = JsonConverter({}).to_connect_data("t", envelope).value
    kept = JsonConverter({"replace.null.with.default": "false"}).to_connect_data("t", envelope)
    assert replaced.get("note") == "none" and kept.value.get("note") is None
    out = JsonConverter({"replace.null.with.default": "false"}).from_connect_data(
        "t", kept.schema, kept.value
    )
    assert json.loads(out or b"")["payload"] == {"id": 1, "note": None}
    default = JsonConverter({}).from_connect_data("t", kept.schema, kept.value)
    assert json.loads(default or b"")["payload"] == {"id": 1, "note": "none"}


@pytest.mark.parametrize(
    ("config", "says"),
    [
        ({"value.converter": "json", "value.converter.schemas.cache.size": "9"}, "no schema cache"),
        ({"value.converter": "json", "value.converter.schema.contents": "{}"}, "takes schemas."),
        ({"value.converter": "bytes", "value.converter.encoding": "utf-8"}, "takes none"),
        ({"value.converter": "string", "value.converter.converter.type": "key"}, "from the con"),
    ],
)
def test_a_converter_key_headrace_does_not_honour_is_refused(
    config: dict[str, str], says: str
) -> None:
    with pytest.raises(ConfigException, match=r"^value\.converter\.[a-z.]+: not a key") as info:
        converter_for(config, "value")
    assert says in str(info.value)
