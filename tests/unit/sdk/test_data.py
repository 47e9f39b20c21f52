"""Schema, SchemaBuilder, Struct and the logical types: values are checked against their schemas,
and logical values convert to Connect's wire form and back exactly."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta, timezone
from decimal import Context, Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from headrace.sdk import (
    DATE_NAME,
    DATE_SCHEMA,
    DECIMAL_NAME,
    OPTIONAL_DATE_SCHEMA,
    OPTIONAL_TIMESTAMP_SCHEMA,
    TIME_NAME,
    TIME_SCHEMA,
    TIMESTAMP_NAME,
    TIMESTAMP_SCHEMA,
    DataError,
    Schema,
    SchemaBuilder,
    SchemaType,
    Struct,
    decimal_scale,
    decimal_schema,
    from_logical,
    to_logical,
)
from headrace.sdk.data import (
    BOOLEAN_SCHEMA,
    BYTES_SCHEMA,
    FLOAT32_SCHEMA,
    FLOAT64_SCHEMA,
    INT8_SCHEMA,
    INT16_SCHEMA,
    INT32_SCHEMA,
    INT64_SCHEMA,
    OPTIONAL_INT32_SCHEMA,
    OPTIONAL_STRING_SCHEMA,
    STRING_SCHEMA,
)

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_EXACT = Context(prec=100)

PERSON = Schema.struct(
    [
        ("name", STRING_SCHEMA),
        ("age", INT32_SCHEMA),
        ("nick", OPTIONAL_STRING_SCHEMA),
        ("admin", Schema(BOOLEAN_SCHEMA.type, default=False)),
    ],
    name="Person",
)


def test_struct_puts_chain_and_defaults_fill_unset_fields() -> None:
    barbara = Struct(PERSON).put("name", "Barbara Liskov").put("age", 75)
    barbara.validate()
    assert barbara.to_dict() == {"name": "Barbara Liskov", "age": 75, "nick": None, "admin": False}
    assert barbara == Struct(PERSON, {"name": "Barbara Liskov", "age": 75})


@pytest.mark.parametrize(
    ("field", "value"),
    [("age", "75"), ("age", 2**31), ("age", True), ("name", 1), ("missing", 1)],
)
def test_put_rejects_values_that_do_not_fit(field: str, value: object) -> None:
    with pytest.raises(DataError):
        Struct(PERSON).put(field, value)


def test_validate_rejects_a_missing_required_field() -> None:
    with pytest.raises(DataError, match="null value for a required int32"):
        Struct(PERSON).put("name", "x").validate()


def test_int_bounds_follow_the_width() -> None:
    INT8_SCHEMA.validate_value(-128)
    with pytest.raises(DataError):
        INT8_SCHEMA.validate_value(128)


def test_nested_arrays_maps_and_structs_are_checked() -> None:
    schema = Schema.map(STRING_SCHEMA, Schema.array(PERSON))
    ok = Struct(PERSON, {"name": "a", "age": 1})
    schema.validate_value({"team": [ok]})
    with pytest.raises(DataError):
        schema.validate_value({"team": [{"name": "a", "age": 1}]})


def test_duplicate_field_names_are_refused() -> None:
    with pytest.raises(DataError, match="duplicate"):
        Schema.struct([("a", STRING_SCHEMA), ("a", STRING_SCHEMA)])


# Parameters


def test_parameters_are_looked_up_by_name_and_keep_schemas_hashable() -> None:
    schema = Schema(SchemaType.STRING, parameters=(("a", "1"), ("b", "2")))
    assert schema.parameter("b") == "2"
    assert schema.parameter("c") is None
    assert hash(schema) == hash(Schema(SchemaType.STRING, parameters=(("a", "1"), ("b", "2"))))


@pytest.mark.parametrize(
    ("parameters", "message"),
    [((("a", 1),), "pairs of str"), ((("a", "1"), ("a", "2")), "twice"), ({"a": "1"}, "pairs")],
)
def test_malformed_parameters_are_refused(parameters: Any, message: str) -> None:
    with pytest.raises(DataError, match=message):
        Schema(SchemaType.STRING, parameters=parameters)


# SchemaBuilder


@pytest.mark.parametrize(
    ("builder", "schema"),
    [
        (SchemaBuilder.int8(), INT8_SCHEMA),
        (SchemaBuilder.int16(), INT16_SCHEMA),
        (SchemaBuilder.int32(), INT32_SCHEMA),
        (SchemaBuilder.int64(), INT64_SCHEMA),
        (SchemaBuilder.float32(), FLOAT32_SCHEMA),
        (SchemaBuilder.float64(), FLOAT64_SCHEMA),
        (SchemaBuilder.boolean(), BOOLEAN_SCHEMA),
        (SchemaBuilder.string(), STRING_SCHEMA),
        (SchemaBuilder.bytes_(), BYTES_SCHEMA),
        (SchemaBuilder.int32().optional(), OPTIONAL_INT32_SCHEMA),
        (SchemaBuilder.array(STRING_SCHEMA).optional(), Schema.array(STRING_SCHEMA, optional=True)),
        (SchemaBuilder.map(STRING_SCHEMA, INT8_SCHEMA), Schema.map(STRING_SCHEMA, INT8_SCHEMA)),
        (SchemaBuilder.struct().name("Person"), Schema.struct([], name="Person")),
        (SchemaBuilder.bytes_().name(DECIMAL_NAME).parameter("scale", "2").version(1),
         decimal_schema(2)),
        (SchemaBuilder.int64().name(TIMESTAMP_NAME).version(1).optional(),
         OPTIONAL_TIMESTAMP_SCHEMA),
    ],
)  # fmt: skip
def test_the_builder_builds_what_the_constructors_build(
    builder: SchemaBuilder, schema: Schema
) -> None:
    assert builder.build() == schema


def test_a_built_struct_has_its_fields_in_order_and_every_attribute() -> None:
    built = (
        SchemaBuilder.struct()
        .name("x")
        .field("a", INT32_SCHEMA)
        .field("b", OPTIONAL_STRING_SCHEMA)
        .optional()
        .version(2)
        .doc("a doc")
        .parameter("k", "v")
        .parameters({"k": "w", "l": "z"})
        .build()
    )
    assert built == Schema(
        SchemaType.STRUCT,
        optional=True,
        name="x",
        version=2,
        doc="a doc",
        fields=Schema.struct([("a", INT32_SCHEMA), ("b", OPTIONAL_STRING_SCHEMA)]).fields,
        parameters=(("k", "w"), ("l", "z")),
    )


def test_the_builder_checks_the_default_against_the_finished_schema() -> None:
    built = SchemaBuilder.int32().default_value(7).build()
    assert built.default == 7
    built.validate_value(None)
    stamp = EPOCH + timedelta(days=1)
    logical = SchemaBuilder.int64().default_value(stamp).name(TIMESTAMP_NAME).build()
    assert logical.default == stamp
    with pytest.raises(DataError, match="default value does not fit"):
        SchemaBuilder.int32().default_value("seven").build()


@pytest.mark.parametrize(
    ("misuse", "message"),
    [
        (lambda: SchemaBuilder.struct().field("a", INT32_SCHEMA).field("a", INT8_SCHEMA), "dupl"),
        (lambda: SchemaBuilder.int32().field("a", INT32_SCHEMA), "only a struct has fields"),
        (lambda: SchemaBuilder.struct().field("", INT32_SCHEMA), "needs a name"),
        (lambda: SchemaBuilder.struct().field("a", "int32"), "needs a Schema"),  # type: ignore[arg-type]
        (lambda: SchemaBuilder.int32().name("a").name("b"), "name is already set"),
        (lambda: SchemaBuilder.int32().optional().required(), "optional is already set"),
    ],
)
def test_the_builder_refuses_misuse(misuse: Any, message: str) -> None:
    with pytest.raises(DataError, match=message):
        misuse()


def test_setting_an_attribute_again_to_the_same_value_is_harmless() -> None:
    assert SchemaBuilder.int32().optional().optional().build() == OPTIONAL_INT32_SCHEMA


# Logical types


def test_logical_schemas_are_connects() -> None:
    assert Schema(SchemaType.INT32, name=DATE_NAME, version=1) == DATE_SCHEMA
    assert DATE_SCHEMA.as_optional() == OPTIONAL_DATE_SCHEMA
    assert Schema(SchemaType.INT32, name=TIME_NAME, version=1) == TIME_SCHEMA
    assert Schema(SchemaType.INT64, name=TIMESTAMP_NAME, version=1) == TIMESTAMP_SCHEMA
    decimal = decimal_schema(2, optional=True)
    assert (decimal.type, decimal.name, decimal.version) == (SchemaType.BYTES, DECIMAL_NAME, 1)
    assert decimal.optional and decimal.parameter("scale") == "2" and decimal_scale(decimal) == 2


# Connect's own examples (its JsonConverterTest and the Decimal docs): value <-> wire form.
KNOWN = [
    (decimal_schema(2), Decimal("1.56"), b"\x00\x9c"),
    (decimal_schema(2), Decimal("-1.56"), b"\xff\x64"),
    (decimal_schema(2), Decimal("12.34"), b"\x04\xd2"),
    (decimal_schema(0), Decimal("0"), b"\x00"),
    (decimal_schema(0), Decimal("-128"), b"\x80"),
    (decimal_schema(0), Decimal("128"), b"\x00\x80"),
    (decimal_schema(-2), Decimal("1.20E+4"), b"\x78"),
    (DATE_SCHEMA, date(1997, 5, 19), 10000),
    (DATE_SCHEMA, date(1969, 12, 31), -1),
    (TIME_SCHEMA, time(4), 14400000),
    (TIME_SCHEMA, time(23, 59, 59, 999000), 86399999),
    (TIMESTAMP_SCHEMA, datetime(1970, 2, 16, 7, 6, 40, tzinfo=UTC), 4000000000),
    (TIMESTAMP_SCHEMA, datetime(1969, 12, 31, 23, 59, 59, 999000, tzinfo=UTC), -1),
]


@pytest.mark.parametrize(("schema", "value", "raw"), KNOWN)
def test_logical_values_convert_as_connect_converts_them(
    schema: Schema, value: Any, raw: Any
) -> None:
    assert from_logical(schema, value) == raw
    back = to_logical(schema, raw)
    assert back == value and repr(back) == repr(value)


def test_other_schemas_and_nulls_pass_through_unchanged() -> None:
    assert to_logical(INT64_SCHEMA, 5) == 5 and from_logical(INT64_SCHEMA, 5) == 5
    assert to_logical(OPTIONAL_DATE_SCHEMA, None) is None
    assert from_logical(OPTIONAL_DATE_SCHEMA, None) is None


def test_an_aware_timestamp_in_any_zone_is_the_same_instant_in_utc() -> None:
    paris = datetime(2024, 1, 1, 1, tzinfo=timezone(timedelta(hours=1)))
    assert to_logical(TIMESTAMP_SCHEMA, from_logical(TIMESTAMP_SCHEMA, paris)) == paris
    assert to_logical(TIMESTAMP_SCHEMA, 0).tzinfo is UTC


@pytest.mark.parametrize(
    ("schema", "value", "message"),
    [
        (decimal_schema(2), Decimal("12.3"), "scale 1 where its .* has scale 2"),
        (decimal_schema(2), Decimal("12.340"), "scale 3 where"),
        (decimal_schema(2), 12.34, "not a finite decimal.Decimal"),
        (decimal_schema(2), Decimal("NaN"), "not a finite decimal.Decimal"),
        (decimal_schema(2), b"\x04\xd2", "not a finite decimal.Decimal"),
        (Schema(SchemaType.BYTES, name=DECIMAL_NAME), Decimal(1), "integer 'scale' parameter"),
        (DATE_SCHEMA, 10000, "not a datetime.date"),
        (DATE_SCHEMA, EPOCH, "not a datetime.date"),
        (TIME_SCHEMA, 14400000, "not a naive datetime.time"),
        (TIME_SCHEMA, time(4, tzinfo=UTC), "not a naive datetime.time"),
        (TIME_SCHEMA, time(4, 0, 0, 1), "finer than the milliseconds"),
        (TIMESTAMP_SCHEMA, 4000000000, "not a timezone-aware datetime.datetime"),
        (TIMESTAMP_SCHEMA, datetime(2024, 1, 1), "not a timezone-aware datetime.datetime"),
        (TIMESTAMP_SCHEMA, date(2024, 1, 1), "not a timezone-aware datetime.datetime"),
        (TIMESTAMP_SCHEMA, EPOCH + timedelta(microseconds=1), "finer than the milliseconds"),
        (Schema(SchemaType.STRING, name=DATE_NAME), date(2024, 1, 1), "must be int32, not string"),
    ],
)
def test_validate_refuses_what_is_not_the_logical_types_python_value(
    schema: Schema, value: Any, message: str
) -> None:
    with pytest.raises(DataError, match=message):
        schema.validate_value(value)
    with pytest.raises(DataError, match=message):
        from_logical(schema, value)


@pytest.mark.parametrize(
    ("schema", "raw", "message"),
    [
        (decimal_schema(2), b"", "non-empty bytes"),
        (decimal_schema(2), 1234, "non-empty bytes"),
        (DATE_SCHEMA, 2**31, "not a valid int32"),
        (DATE_SCHEMA, True, "not a valid int32"),
        (DATE_SCHEMA, 3_000_000, "past the dates Python holds"),
        (TIME_SCHEMA, 86_400_000, "not a time of day"),
        (TIME_SCHEMA, -1, "not a time of day"),
        (TIMESTAMP_SCHEMA, 2**62, "past the datetimes Python holds"),
        (TIMESTAMP_SCHEMA, 1.5, "not a valid int64"),
    ],
)
def test_to_logical_refuses_what_is_not_the_wire_form(
    schema: Schema, raw: Any, message: str
) -> None:
    with pytest.raises(DataError, match=message):
        to_logical(schema, raw)


def test_a_struct_checks_its_logical_fields() -> None:
    order = Schema.struct([("price", decimal_schema(2)), ("day", OPTIONAL_DATE_SCHEMA)])
    Struct(order).put("price", Decimal("9.99")).put("day", date(1900, 1, 1)).validate()
    with pytest.raises(DataError, match="scale"):
        Struct(order).put("price", Decimal("9.9"))
    with pytest.raises(DataError, match="null value for a required bytes"):
        Struct(order).validate()


def decimals(scale: int) -> st.SearchStrategy[Decimal]:
    """Decimals of exactly ``scale`` places, with many more digits than a context rounds to."""
    return st.integers(-(10**40), 10**40).map(lambda n: scaled(n, scale))


def scaled(unscaled: int, scale: int) -> Decimal:
    sign, digits, _ = Decimal(unscaled).as_tuple()
    return Decimal((sign, digits, -scale))


def millis(t: Any) -> Any:
    return t.replace(microsecond=t.microsecond // 1000 * 1000)


@given(st.integers(-5, 12).flatmap(lambda scale: st.tuples(st.just(scale), decimals(scale))))
def test_decimals_round_trip_through_minimal_twos_complement(pair: tuple[int, Decimal]) -> None:
    scale, value = pair
    raw = from_logical(decimal_schema(scale), value)
    assert int.from_bytes(raw, "big", signed=True) == int(value.scaleb(scale, _EXACT))
    # Minimal, as Java's BigInteger.toByteArray: one byte fewer would change the value.
    assert len(raw) == 1 or int.from_bytes(raw[1:], "big", signed=True) != int.from_bytes(
        raw, "big", signed=True
    )
    back = to_logical(decimal_schema(scale), raw)
    assert back == value and back.as_tuple() == value.as_tuple()


@given(
    st.one_of(
        st.tuples(st.just(DATE_SCHEMA), st.dates()),
        st.tuples(st.just(TIME_SCHEMA), st.times().map(millis)),
        st.tuples(st.just(TIMESTAMP_SCHEMA), st.datetimes(timezones=st.just(UTC)).map(millis)),
    )
)
def test_dates_times_and_timestamps_round_trip(pair: tuple[Schema, Any]) -> None:
    schema, value = pair
    raw = from_logical(schema, value)
    schema.validate_value(value)
    assert isinstance(raw, int)
    assert to_logical(schema, raw) == value
