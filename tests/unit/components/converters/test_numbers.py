"""Connect's number and boolean converters write what Kafka's serializers write, and read it
back (``headrace.components.converters.numbers``)."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from headrace.components.converters import StringConverter, converter_for
from headrace.components.converters.numbers import (
    BooleanConverter,
    DoubleConverter,
    FloatConverter,
    IntegerConverter,
    LongConverter,
    ShortConverter,
)
from headrace.sdk.data import Type
from headrace.sdk.errors import ConfigException, DataError

INTEGRAL = [
    (ShortConverter, 16, Type.INT16),
    (IntegerConverter, 32, Type.INT32),
    (LongConverter, 64, Type.INT64),
]


@pytest.mark.parametrize(("converter", "bits", "kind"), INTEGRAL)
@given(data=st.data())
def test_an_integer_is_its_big_endian_two_s_complement_and_back(
    converter: Any, bits: int, kind: Type, data: st.DataObject
) -> None:
    value = data.draw(st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1))
    written = converter().from_connect_data("t", None, value)
    assert written == value.to_bytes(bits // 8, "big", signed=True)  # Kafka's serializer's
    read = converter().to_connect_data("t", written)
    assert (read.value, read.schema.type, read.schema.optional) == (value, kind, True)


@pytest.mark.parametrize(("converter", "bits", "kind"), INTEGRAL)
def test_an_integer_out_of_its_type_s_range_or_of_another_type_is_refused(
    converter: Any, bits: int, kind: Type
) -> None:
    with pytest.raises(DataError, match="out of its range"):
        converter().from_connect_data("t", None, 2 ** (bits - 1))
    for wrong in (1.5, "1", True):
        with pytest.raises(DataError, match=f"was {type(wrong).__name__}"):
            converter().from_connect_data("t", None, wrong)
    with pytest.raises(DataError, match=f"is not {bits // 8}"):
        converter().to_connect_data("t", b"\x00" * (bits // 8 + 1))


@given(value=st.floats(allow_nan=False))
def test_a_double_is_its_ieee_754_bytes_and_back(value: float) -> None:
    written = DoubleConverter().from_connect_data("t", None, value)
    assert DoubleConverter().to_connect_data("t", written).value == value


@given(value=st.floats(width=32, allow_nan=False))
def test_a_float_keeps_every_value_a_java_float_holds(value: float) -> None:
    written = FloatConverter().from_connect_data("t", None, value)
    assert written is not None and len(written) == 4
    assert FloatConverter().to_connect_data("t", written).value == value


def test_nan_and_an_integer_are_floats_too() -> None:
    nan = DoubleConverter().from_connect_data("t", None, math.nan)
    assert math.isnan(DoubleConverter().to_connect_data("t", nan).value)
    assert (
        DoubleConverter()
        .to_connect_data("t", DoubleConverter().from_connect_data("t", None, 3))
        .value
        == 3.0
    )


def test_a_boolean_is_one_byte_and_nothing_else_is_one() -> None:
    converter = BooleanConverter()
    assert [converter.from_connect_data("t", None, v) for v in (True, False)] == [b"\x01", b"\x00"]
    assert [converter.to_connect_data("t", b).value for b in (b"\x01", b"\x00")] == [True, False]
    with pytest.raises(DataError, match="Unexpected byte"):
        converter.to_connect_data("t", b"\x02")
    with pytest.raises(DataError, match="not 1"):
        converter.to_connect_data("t", b"\x00\x01")
    with pytest.raises(DataError, match="was int"):
        converter.from_connect_data("t", None, 1)


@pytest.mark.parametrize(
    "converter",
    [
        ShortConverter(),
        IntegerConverter(),
        LongConverter(),
        FloatConverter(),
        DoubleConverter(),
        BooleanConverter(),
    ],
)
def test_a_null_is_no_bytes_both_ways(converter: Any) -> None:
    assert converter.from_connect_data("t", None, None) is None
    read = converter.to_connect_data("t", None)
    assert read.value is None and read.schema is not None and read.schema.optional


@pytest.mark.parametrize(
    "name",
    ["org.apache.kafka.connect.converters.IntegerConverter", "IntegerConverter"],
)
def test_a_connector_names_one_as_connect_does(name: str) -> None:
    converter = converter_for({"key.converter": name}, "key")
    assert isinstance(converter, IntegerConverter)


def test_the_string_converter_takes_its_encoding_under_connect_s_key() -> None:
    assert StringConverter({"converter.encoding": "UTF-16"}).from_connect_data(
        "t", None, "é"
    ) == "é".encode("utf-16")
    assert (
        StringConverter({"encoding": "latin-1", "converter.encoding": "latin-1"}).encoding
        == "latin-1"
    )
    with pytest.raises(
        ConfigException, match=r"converter\.encoding='utf-8' and encoding='latin-1' disagree"
    ):
        StringConverter({"converter.encoding": "utf-8", "encoding": "latin-1"})
