"""Cast: whole values and fields, with and without schemas, Java's conversions, logical types."""

from __future__ import annotations

import math
from datetime import UTC, date, datetime, time
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from headrace.components.transforms import Transformation, new_transform
from headrace.sdk.data import (
    BOOLEAN_SCHEMA,
    BYTES_SCHEMA,
    DATE_SCHEMA,
    FLOAT32_SCHEMA,
    FLOAT64_SCHEMA,
    INT8_SCHEMA,
    INT32_SCHEMA,
    INT64_SCHEMA,
    OPTIONAL_FLOAT32_SCHEMA,
    OPTIONAL_INT16_SCHEMA,
    OPTIONAL_TIMESTAMP_SCHEMA,
    STRING_SCHEMA,
    TIME_SCHEMA,
    TIMESTAMP_SCHEMA,
    Schema,
    Struct,
    decimal_schema,
)
from headrace.sdk.data import Type as T
from headrace.sdk.errors import ConfigException, DataError
from headrace.sdk.records import SinkRecord
from tests.unit.components.transforms.support import refusal, source, xform

DAY = date(1970, 1, 2)  # one day after the epoch


def cast(spec: str, side: str = "Value", **config: str) -> Transformation:
    return xform(f"Cast${side}", spec=spec, **config)


def whole(spec: str, value: Any, schema: Schema | None = None) -> Any:
    result = cast(spec).apply(source(value, value_schema=schema))
    assert result is not None
    return result.value, result.value_schema


# Configuration


@pytest.mark.parametrize(
    ("spec", "reason"),
    [
        ("", "must name at least one cast"),
        ("foo:faketype", "invalid type 'faketype'"),
        ("array", "does not cast to array"),
        ("foo:bytes", "does not cast to bytes"),
        ("foo:int8:extra", "invalid cast 'foo:int8:extra'"),
        (":int8", "the field name is empty"),
        ("int8,foo:int16", "a cast of the whole value must be the only cast"),
        ("a:int8,a:int16", "'a' is cast twice"),
    ],
)
def test_cast_refuses_a_bad_spec_naming_the_key(spec: str, reason: str) -> None:
    assert refusal("Cast$Value", {"spec": spec}, reason).startswith("spec: ")


def test_cast_requires_a_spec_and_refuses_other_keys() -> None:
    with pytest.raises(ConfigException, match=r"^spec: is required"):
        new_transform("Cast$Value").configure({})
    with pytest.raises(ConfigException, match=r"^specs: Cast\$Value has no such"):
        new_transform("Cast$Value").configure({"spec": "int8", "specs": "x"})


def test_cast_type_names_are_case_insensitive() -> None:
    assert whole("INT16", 42) == (42, None)
    assert whole(" Float64 ", 42) == (42.0, None)


# Whole values


@pytest.mark.parametrize(
    ("spec", "target", "expected"),
    [
        ("int8", T.INT8, 42),
        ("int16", T.INT16, 42),
        ("int32", T.INT32, 42),
        ("int64", T.INT64, 42),
        ("float32", T.FLOAT32, 42.0),
        ("float64", T.FLOAT64, 42.0),
        ("boolean", T.BOOLEAN, True),
        ("string", T.STRING, "42"),
    ],
)
def test_cast_whole_value_with_schema(spec: str, target: T, expected: Any) -> None:
    value, schema = whole(spec, 42, INT32_SCHEMA)
    assert (value, schema.type) == (expected, target)
    assert type(value) is type(expected)


@pytest.mark.parametrize(
    ("spec", "value", "expected"),
    [
        ("int8", 42, 42),
        ("int16", 42, 42),
        ("int32", 42, 42),
        ("int64", 42, 42),
        ("float32", 42, 42.0),
        ("float64", 42, 42.0),
        ("boolean", 42, True),
        ("boolean", 0, False),
        ("string", 42, "42"),
        ("int32", "42", 42),
        ("boolean", "TRUE", True),
        ("boolean", "yes", False),
        ("float64", "1e3", 1000.0),
        ("float64", " 2.5d ", 2.5),
        ("string", True, "true"),
        ("string", 1.0e7, "1.0E7"),
        ("string", 0.5, "0.5"),
        ("string", b"\xfe\xdc\xba\x98\x76\x54\x32\x10", "/ty6mHZUMhA="),
        ("int8", True, 1),
        ("float64", False, 0.0),
    ],
)
def test_cast_whole_value_schemaless(spec: str, value: Any, expected: Any) -> None:
    assert whole(spec, value) == (expected, None)


def test_cast_whole_value_casts_the_default_and_keeps_optional() -> None:
    schema = Schema(T.FLOAT32, optional=True, default=-42.125, name="n", doc="d")
    value, cast_schema = whole("int32", 42.125, schema)
    assert value == 42
    assert (cast_schema.type, cast_schema.default, cast_schema.optional) == (T.INT32, -42, True)
    assert (cast_schema.name, cast_schema.doc) == ("n", "d")


def test_cast_key_variant_leaves_the_value_alone() -> None:
    result = cast("int8", side="Key").apply(source("bogus", key=42, value_schema=STRING_SCHEMA))
    assert result is not None
    assert (result.key, result.key_schema, result.value) == (42, None, "bogus")


@pytest.mark.parametrize("schema", [None, INT32_SCHEMA])
def test_cast_passes_nulls_through(schema: Schema | None) -> None:
    record = source(None, value_schema=schema)
    assert cast("int8").apply(record) is record


# Java's conversions


@pytest.mark.parametrize(
    ("spec", "value", "expected"),
    [
        ("int8", 300, 44),
        ("int8", -129, 127),
        ("int16", 70000, 4464),
        ("int32", 2**31, -(2**31)),
        ("int8", 3.99, 3),
        ("int8", -3.99, -3),
        ("int8", 200.5, -56),
        ("int32", 3e10, 2**31 - 1),
        ("int32", -3e10, -(2**31)),
        ("int64", 1e300, 2**63 - 1),
        ("int16", 1e10, -1),
        ("int32", math.nan, 0),
        ("boolean", 0.5, False),
        ("boolean", -1.5, True),
    ],
)
def test_cast_narrows_numbers_as_java_casts_do(spec: str, value: Any, expected: Any) -> None:
    assert whole(spec, value) == (expected, None)


@pytest.mark.parametrize(
    ("spec", "value", "reason"),
    [
        ("int8", "128", "does not fit int8"),
        ("int32", "abc", "does not fit int32"),
        ("int32", " 1", "does not fit int32"),
        ("float64", "one", "not a floating-point number"),
        ("int32", b"\x01", "cannot cast a bytes to int32"),
        ("string", [1], "does not cast from array"),
        ("string", {"a": 1}, "does not cast from map"),
        ("string", Decimal(1), "given a Decimal, which Connect's data API lacks"),
    ],
)
def test_cast_refuses_values_it_cannot_cast(spec: str, value: Any, reason: str) -> None:
    with pytest.raises(DataError, match=reason):
        cast(spec).apply(source(value))


# Fields

# The primitive fields both field tests cast, with and without a schema: the casts, the values
# and what the values become.
PRIMITIVE_CASTS = (
    "int8:int16,int16:int32,int32:int64,int64:boolean,float32:float64,float64:boolean,"
    "boolean:int8,string:int32"
)
PRIMITIVES = {
    "int8": 8,
    "int16": 16,
    "int32": 32,
    "int64": 64,
    "float32": 32.0,
    "float64": -64.0,
    "boolean": True,
    "string": "42",
}
CAST_PRIMITIVES = {
    "int8": 8,
    "int16": 16,
    "int32": 32,
    "int64": True,
    "float32": 32.0,
    "float64": True,
    "boolean": 1,
    "string": 42,
}


def test_cast_fields_with_schema() -> None:
    spec = PRIMITIVE_CASTS + ",bigdecimal:string,date:string,optional:int32,bytes:string"
    schema = Schema.struct(
        [
            ("int8", INT8_SCHEMA),
            ("int16", OPTIONAL_INT16_SCHEMA),
            ("int32", Schema(T.INT32, default=2)),
            ("int64", INT64_SCHEMA),
            ("float32", FLOAT32_SCHEMA),
            ("float64", Schema(T.FLOAT64, default=-1.125)),
            ("boolean", BOOLEAN_SCHEMA),
            ("string", STRING_SCHEMA),
            ("bigdecimal", decimal_schema(0)),
            ("date", DATE_SCHEMA),
            ("optional", OPTIONAL_FLOAT32_SCHEMA),
            ("timestamp", TIMESTAMP_SCHEMA),
            ("bytes", BYTES_SCHEMA),
        ]
    )
    value = Struct(
        schema,
        {
            **PRIMITIVES,
            "bigdecimal": Decimal(42),
            "date": DAY,
            "timestamp": datetime(1970, 1, 1, tzinfo=UTC),
            "bytes": b"\xfe\xdc\xba\x98\x76\x54\x32\x10",
        },
    )
    cast_value, cast_schema = whole(spec, value, schema)
    assert cast_value.to_dict() == {
        **CAST_PRIMITIVES,
        "bigdecimal": "42",
        "date": "1970-01-02",
        "optional": None,
        "timestamp": datetime(1970, 1, 1, tzinfo=UTC),
        "bytes": "/ty6mHZUMhA=",
    }
    fields = {f.name: f.schema for f in cast_schema.fields}
    assert {name: s.type for name, s in fields.items()} == {
        "int8": T.INT16,
        "int16": T.INT32,
        "int32": T.INT64,
        "int64": T.BOOLEAN,
        "float32": T.FLOAT64,
        "float64": T.BOOLEAN,
        "boolean": T.INT8,
        "string": T.INT32,
        "bigdecimal": T.STRING,
        "date": T.STRING,
        "optional": T.INT32,
        "timestamp": T.INT64,
        "bytes": T.STRING,
    }
    assert fields["timestamp"] == TIMESTAMP_SCHEMA  # not cast: unchanged
    assert fields["int16"].optional and fields["optional"].optional
    assert (fields["int32"].default, fields["float64"].default) == (2, True)


def test_cast_fields_schemaless() -> None:
    value = {**PRIMITIVES, "other": "kept"}
    assert whole(PRIMITIVE_CASTS + ",missing:int8", value) == (
        {
            **CAST_PRIMITIVES,
            "other": "kept",
            "missing": None,  # Connect adds a cast field the map lacks, as null
        },
        None,
    )


def test_cast_logical_types_to_primitives() -> None:
    spec = (
        "date_to_int32:int32,timestamp_to_int64:int64,time_to_int64:int64,"
        "decimal_to_int32:int32,timestamp_to_float64:float64,null_timestamp_to_int32:int32"
    )
    schema = Schema.struct(
        [
            ("date_to_int32", DATE_SCHEMA),
            ("timestamp_to_int64", TIMESTAMP_SCHEMA),
            ("time_to_int64", TIME_SCHEMA),
            ("decimal_to_int32", decimal_schema(0)),
            ("timestamp_to_float64", TIMESTAMP_SCHEMA),
            ("null_timestamp_to_int32", OPTIONAL_TIMESTAMP_SCHEMA),
        ]
    )
    value = Struct(
        schema,
        {
            "date_to_int32": DAY,
            "timestamp_to_int64": datetime(1970, 1, 1, tzinfo=UTC),
            "time_to_int64": time(0, 0, 0, 1000),
            "decimal_to_int32": Decimal(2**31),
            "timestamp_to_float64": datetime(9999, 12, 31, tzinfo=UTC),
        },
    )
    cast_value, cast_schema = whole(spec, value, schema)
    assert cast_value.to_dict() == {
        "date_to_int32": 1,
        "timestamp_to_int64": 0,
        "time_to_int64": 1,
        "decimal_to_int32": -(2**31),
        "timestamp_to_float64": 253402214400000.0,
        "null_timestamp_to_int32": None,
    }
    assert [f.schema.type for f in cast_schema.fields] == [
        T.INT32,
        T.INT64,
        T.INT64,
        T.INT32,
        T.FLOAT64,
        T.INT32,
    ]


def test_cast_logical_types_to_string_in_connects_iso_forms() -> None:
    schema = Schema.struct(
        [
            ("date", DATE_SCHEMA),
            ("decimal", decimal_schema(0)),
            ("time", TIME_SCHEMA),
            ("timestamp", TIMESTAMP_SCHEMA),
        ]
    )
    stamp = datetime(2017, 1, 3, 6, 30, 1, 864000, tzinfo=UTC)
    value = Struct(
        schema,
        {"date": DAY, "decimal": Decimal(1982), "time": time(1), "timestamp": stamp},
    )
    cast_value, _ = whole("date:string,decimal:string,time:string,timestamp:string", value, schema)
    assert cast_value.to_dict() == {
        "date": "1970-01-02",
        "decimal": "1982",
        "time": "01:00:00.000Z",
        "timestamp": "2017-01-03T06:30:01.864Z",
    }


def test_cast_whole_logical_value_drops_the_logical_name() -> None:
    value, schema = whole("string", Decimal("42.50"), decimal_schema(2))
    assert (value, schema) == ("42.50", STRING_SCHEMA)
    value, schema = whole("int64", datetime(1970, 1, 2, tzinfo=UTC), TIMESTAMP_SCHEMA)
    assert (value, schema) == (86_400_000, INT64_SCHEMA)


@pytest.mark.parametrize(("replace", "expected"), [("true", 7), ("false", None)])
def test_cast_replace_null_with_default(replace: str, expected: int | None) -> None:
    schema = Schema.struct([("n", Schema(T.INT32, optional=True, default=7))])
    transformation = cast("n:int64", replace_null_with_default=replace)
    result = transformation.apply(source(Struct(schema, {"n": None}), value_schema=schema))
    assert result is not None and result.value.get("n") == expected


@given(st.integers(-(2**63), 2**63 - 1))
def test_cast_int_to_string_and_back_is_the_identity(number: int) -> None:
    text, _ = whole("string", number)
    assert whole("int64", text) == (number, None)


@given(st.floats(allow_nan=False))
def test_cast_float_to_string_and_back_is_the_identity(number: float) -> None:
    text, _ = whole("string", number)
    assert whole("float64", text) == (number, None)


def test_float32_fields_cast_to_float64_keep_their_value() -> None:
    assert whole("float64", 32.5, FLOAT32_SCHEMA) == (32.5, FLOAT64_SCHEMA)


def test_cast_keeps_the_sink_record_class_and_fields() -> None:
    record = SinkRecord("t", 3, 9, "k", "7", timestamp=5, headers=(("h", b"v"),))
    result = cast("int32").apply(record)
    assert result == SinkRecord("t", 3, 9, "k", 7, timestamp=5, headers=(("h", b"v"),))
