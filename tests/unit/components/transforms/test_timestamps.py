"""TimestampConverter, TimestampRouter and the SimpleDateFormat patterns they share."""

from __future__ import annotations

from datetime import UTC, date, datetime, time
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from headrace.components.java.datepattern import compile_pattern
from headrace.components.transforms import Transformation, new_transform
from headrace.sdk.data import (
    DATE_SCHEMA,
    INT32_SCHEMA,
    INT64_SCHEMA,
    OPTIONAL_DATE_SCHEMA,
    OPTIONAL_INT64_SCHEMA,
    OPTIONAL_STRING_SCHEMA,
    OPTIONAL_TIME_SCHEMA,
    OPTIONAL_TIMESTAMP_SCHEMA,
    STRING_SCHEMA,
    TIME_SCHEMA,
    TIMESTAMP_SCHEMA,
    Schema,
    Struct,
)
from headrace.sdk.errors import ConfigException, DataError
from headrace.sdk.records import SinkRecord
from tests.unit.components.transforms.support import refusal, source, xform

# One day and 1234 ms after the epoch, as Connect's own tests use.
MILLIS = 86_401_234
DATE_PLUS_TIME = datetime(1970, 1, 2, 0, 0, 1, 234000, tzinfo=UTC)
DATE = date(1970, 1, 2)
TIME = time(0, 0, 1, 234000)
FORMAT = "yyyy MM dd HH mm ss SSS z"
TEXT = "1970 01 02 00 00 01 234 UTC"


def converter(side: str = "Value", **config: str) -> Transformation:
    return xform(f"TimestampConverter${side}", **config)


def converted(transformation: Transformation, value: Any, schema: Schema | None = None) -> Any:
    result = transformation.apply(source(value, value_schema=schema))
    assert result is not None
    return result.value if schema is None else (result.value, result.value_schema)


# Configuration


@pytest.mark.parametrize(
    ("config", "key", "reason"),
    [
        ({}, "target.type", "is required"),
        ({"target.type": "invalid"}, "target.type", "must be one of string, unix, Date, Time"),
        ({"target.type": "date"}, "target.type", "must be one of"),
        ({"target.type": "unix", "unix.precision": "invalid"}, "unix.precision", "must be one of"),
        ({"target.type": "string"}, "format", "is required when target.type is string"),
        ({"target.type": "string", "format": "  "}, "format", "is required when target.type"),
        (
            {"target.type": "string", "format": "bad-format"},
            "format",
            "illegal pattern character 'b'",
        ),
        ({"target.type": "string", "format": "yyyy GG"}, "format", "letter 'G' is not supported"),
        ({"target.type": "string", "format": "yyyy'"}, "format", "unterminated quote"),
        ({"target.type": "unix", "fields": "a"}, "fields", "no such configuration key"),
    ],
)
def test_converter_refusals_name_the_key(config: dict[str, str], key: str, reason: str) -> None:
    assert refusal("TimestampConverter$Value", config, reason).startswith(f"{key}: ")


@pytest.mark.parametrize("precision", ["seconds", "milliseconds", "microseconds", "nanoseconds"])
def test_converter_accepts_every_unix_precision(precision: str) -> None:
    converter(target_type="unix", unix_precision=precision)


# Schemaless


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("Timestamp", DATE_PLUS_TIME),
        ("Date", DATE),
        ("Time", TIME),
        ("unix", MILLIS),
        ("string", TEXT),
    ],
)
def test_schemaless_timestamp_to_each_type(target: str, expected: Any) -> None:
    transformation = converter(target_type=target, format=FORMAT)
    assert converted(transformation, DATE_PLUS_TIME) == expected


@pytest.mark.parametrize("value", [DATE_PLUS_TIME, MILLIS, TEXT])
def test_schemaless_inputs_are_recognised_by_type(value: Any) -> None:
    assert converted(converter(target_type="Timestamp", format=FORMAT), value) == DATE_PLUS_TIME


def test_schemaless_date_and_time_to_timestamp() -> None:
    transformation = converter(target_type="Timestamp")
    assert converted(transformation, DATE) == datetime(1970, 1, 2, tzinfo=UTC)
    assert converted(transformation, TIME) == datetime(1970, 1, 1, 0, 0, 1, 234000, tzinfo=UTC)


@pytest.mark.parametrize("target", ["string", "unix", "Date", "Time", "Timestamp"])
def test_schemaless_null_stays_null(target: str) -> None:
    transformation = converter(target_type=target, format=FORMAT)
    assert converted(transformation, None) is None
    with_field = converter(target_type=target, format=FORMAT, field="ts")
    assert converted(with_field, {"ts": None, "other": "o"}) == {"ts": None, "other": "o"}
    assert converted(with_field, {"other": "o"}) == {"other": "o", "ts": None}


def test_schemaless_field_conversion_leaves_other_fields() -> None:
    transformation = converter(target_type="Date", field="ts")
    assert converted(transformation, {"ts": DATE_PLUS_TIME, "other": "o"}) == {
        "ts": DATE,
        "other": "o",
    }


@pytest.mark.parametrize(
    ("precision", "unix"),
    [
        ("seconds", 86_401),
        ("milliseconds", MILLIS),
        ("microseconds", MILLIS * 1000),
        ("nanoseconds", MILLIS * 1_000_000),
    ],
)
def test_unix_precision_applies_both_ways(precision: str, unix: int) -> None:
    to_unix = converter(target_type="unix", unix_precision=precision, format=FORMAT)
    assert converted(to_unix, TEXT) == unix
    from_unix = converter(target_type="string", unix_precision=precision, format=FORMAT)
    expected = "1970 01 02 00 00 01 000 UTC" if precision == "seconds" else TEXT
    assert converted(from_unix, unix) == expected


def test_finer_unix_units_lose_what_is_below_a_millisecond() -> None:
    micros = converter(target_type="Timestamp", unix_precision="microseconds")
    assert converted(micros, MILLIS * 1000 + 123) == DATE_PLUS_TIME
    nanos = converter(target_type="Timestamp", unix_precision="nanoseconds")
    assert converted(nanos, MILLIS * 1_000_000 + 123_456) == DATE_PLUS_TIME
    # Java's division truncates toward zero, also before the epoch.
    assert converted(micros, -1500) == datetime(1969, 12, 31, 23, 59, 59, 999000, tzinfo=UTC)


def test_before_the_epoch_dates_and_times_floor() -> None:
    stamp = datetime(1969, 12, 31, 23, 0, tzinfo=UTC)
    assert converted(converter(target_type="Date"), stamp) == date(1969, 12, 31)
    assert converted(converter(target_type="Time"), stamp) == time(23, 0)
    assert converted(converter(target_type="unix", unix_precision="seconds"), stamp) == -3600


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("not a date", "could not parse timestamp"),
        (1.5, "does not take a float as a timestamp"),
        (True, "does not take a bool as a timestamp"),
    ],
)
def test_schemaless_refusals(value: Any, reason: str) -> None:
    with pytest.raises(DataError, match=reason):
        converter(target_type="unix", format=FORMAT).apply(source(value))


def test_a_string_input_needs_a_format() -> None:
    with pytest.raises(DataError, match="needs the format key"):
        converter(target_type="unix").apply(source(TEXT))


# With a schema


@pytest.mark.parametrize(
    ("target", "schema", "expected"),
    [
        ("Timestamp", TIMESTAMP_SCHEMA, DATE_PLUS_TIME),
        ("Date", DATE_SCHEMA, DATE),
        ("Time", TIME_SCHEMA, TIME),
        ("unix", INT64_SCHEMA, MILLIS),
        ("string", STRING_SCHEMA, TEXT),
    ],
)
def test_with_schema_timestamp_to_each_type(target: str, schema: Schema, expected: Any) -> None:
    transformation = converter(target_type=target, format=FORMAT)
    assert converted(transformation, DATE_PLUS_TIME, TIMESTAMP_SCHEMA) == (expected, schema)


@pytest.mark.parametrize(
    ("schema", "value"),
    [
        (DATE_SCHEMA, DATE),
        (TIME_SCHEMA, TIME),
        (INT64_SCHEMA, MILLIS),
        (STRING_SCHEMA, TEXT),
    ],
)
def test_with_schema_each_type_to_timestamp(schema: Schema, value: Any) -> None:
    transformation = converter(target_type="Timestamp", format=FORMAT)
    expected = {
        DATE_SCHEMA: datetime(1970, 1, 2, tzinfo=UTC),
        TIME_SCHEMA: datetime(1970, 1, 1, 0, 0, 1, 234000, tzinfo=UTC),
    }.get(schema, DATE_PLUS_TIME)
    assert converted(transformation, value, schema) == (expected, TIMESTAMP_SCHEMA)


@pytest.mark.parametrize(
    ("target", "optional"),
    [
        ("Timestamp", OPTIONAL_TIMESTAMP_SCHEMA),
        ("Date", OPTIONAL_DATE_SCHEMA),
        ("Time", OPTIONAL_TIME_SCHEMA),
        ("unix", OPTIONAL_INT64_SCHEMA),
        ("string", OPTIONAL_STRING_SCHEMA),
    ],
)
def test_with_schema_null_values_and_fields_keep_optional_schemas(
    target: str, optional: Schema
) -> None:
    transformation = converter(target_type=target, format=FORMAT)
    assert converted(transformation, None, OPTIONAL_TIMESTAMP_SCHEMA) == (None, optional)
    struct_schema = Schema.struct([("ts", OPTIONAL_TIMESTAMP_SCHEMA), ("other", STRING_SCHEMA)])
    with_field = converter(target_type=target, format=FORMAT, field="ts")
    value, schema = converted(with_field, Struct(struct_schema, {"other": "o"}), struct_schema)
    assert value.to_dict() == {"ts": None, "other": "o"}
    assert [f.schema for f in schema.fields] == [optional, STRING_SCHEMA]
    optional_struct = struct_schema.as_optional()
    assert converted(with_field, None, optional_struct)[0] is None


def test_with_schema_field_conversion_keeps_other_fields_and_the_struct_name() -> None:
    schema = Schema.struct([("ts", TIMESTAMP_SCHEMA), ("other", STRING_SCHEMA)], name="Event")
    value = Struct(schema, {"ts": DATE_PLUS_TIME, "other": "o"})
    result, result_schema = converted(
        converter(target_type="unix", unix_precision="seconds", field="ts"), value, schema
    )
    assert result.to_dict() == {"ts": 86_401, "other": "o"}
    assert result_schema.name == "Event"
    assert [f.schema for f in result_schema.fields] == [INT64_SCHEMA, STRING_SCHEMA]


def test_with_schema_a_non_timestamp_schema_is_refused() -> None:
    with pytest.raises(DataError, match="no timestamp type"):
        converter(target_type="unix").apply(source(1, value_schema=INT32_SCHEMA))


@pytest.mark.parametrize(("replace", "expected"), [("true", 0), ("false", None)])
def test_with_schema_replace_null_with_default(replace: str, expected: int | None) -> None:
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    defaulted = Schema(
        TIMESTAMP_SCHEMA.type, optional=True, name=TIMESTAMP_SCHEMA.name, default=epoch
    )
    schema = Schema.struct([("ts", defaulted)])
    transformation = converter(target_type="unix", field="ts", replace_null_with_default=replace)
    value, _ = converted(transformation, Struct(schema, {"ts": None}), schema)
    assert value.get("ts") == expected


def test_key_variant_converts_the_key() -> None:
    result = converter("Key", target_type="Timestamp").apply(source("v", key=MILLIS))
    assert result is not None and (result.key, result.value) == (DATE_PLUS_TIME, "v")


# TimestampRouter


def router(**config: str) -> Transformation:
    transformation = new_transform("TimestampRouter")
    transformation.configure({k.replace("_", "."): v for k, v in config.items()})
    return transformation


def test_router_default_configuration() -> None:
    record = source("v", timestamp=1483425001864)
    result = router().apply(record)
    assert result is not None and result.topic == "test-20170103"
    assert result == source("v", topic="test-20170103", timestamp=1483425001864)


def test_router_formats_and_places() -> None:
    transformation = router(
        topic_format="${timestamp}_${topic}_${topic}", timestamp_format="yyyy-MM"
    )
    record = SinkRecord("orders", 1, 2, None, None, timestamp=1483425001864)
    result = transformation.apply(record)
    assert result is not None and result.topic == "2017-01_orders_orders"
    assert (result.partition, result.offset) == (1, 2)


def test_router_needs_a_timestamp() -> None:
    with pytest.raises(DataError, match="needs the record's timestamp"):
        router().apply(source("v"))


def test_router_refusals_name_the_key() -> None:
    with pytest.raises(
        ConfigException, match=r"^timestamp.format: .*illegal pattern character 'q'"
    ):
        router(timestamp_format="qq")
    with pytest.raises(ConfigException, match=r"^topic: TimestampRouter has no such"):
        new_transform("TimestampRouter").configure({"topic": "x"})


# SimpleDateFormat patterns


@pytest.mark.parametrize(
    ("pattern", "text"),
    [
        ("yyyyMMdd", "20170103"),
        ("yyyy-MM-dd'T'HH:mm:ss.SSSX", "2017-01-03T06:30:01.864Z"),
        ("yyyy-MM-dd'T'HH:mm:ss.SSSZ", "2017-01-03T06:30:01.864+0000"),
        ("yy-M-d H:m:s.S", "17-1-3 6:30:1.864"),
        ("EEE, d MMM yyyy hh:mm a", "Tue, 3 Jan 2017 06:30 AM"),
        ("EEEE MMMM dd yyyy 'at' HH 'o''clock'", "Tuesday January 03 2017 at 06 o'clock"),
        ("''yyyy''", "'2017'"),
        ("yyyy zzzz", "2017 Coordinated Universal Time"),
    ],
)
def test_patterns_format_as_java_does(pattern: str, text: str) -> None:
    assert compile_pattern(pattern).format(1483425001864) == text


@pytest.mark.parametrize(
    ("pattern", "text", "expected"),
    [
        ("yyyyMMdd", "20170103", datetime(2017, 1, 3, tzinfo=UTC)),
        ("yyyy-MM-dd", "2017-1-3", datetime(2017, 1, 3, tzinfo=UTC)),
        ("yyyy-MM-dd", "2017-01-03 and more", datetime(2017, 1, 3, tzinfo=UTC)),
        ("yyyy-MM-dd", "2017-13-01", datetime(2018, 1, 1, tzinfo=UTC)),
        ("yyyy-MM-dd", "2017-02-30", datetime(2017, 3, 2, tzinfo=UTC)),
        ("dd MMM yyyy", "03 jan 2017", datetime(2017, 1, 3, tzinfo=UTC)),
        ("dd MMM yyyy", "03 JANUARY 2017", datetime(2017, 1, 3, tzinfo=UTC)),
        ("hh:mm a", "12:30 AM", datetime(1970, 1, 1, 0, 30, tzinfo=UTC)),
        ("hh:mm a", "12:30 pm", datetime(1970, 1, 1, 12, 30, tzinfo=UTC)),
        ("HH:mm Z", "10:00 +0130", datetime(1970, 1, 1, 8, 30, tzinfo=UTC)),
        ("HH:mm X", "10:00 -05", datetime(1970, 1, 1, 15, 0, tzinfo=UTC)),
        ("HH:mm XXX", "10:00 +05:30", datetime(1970, 1, 1, 4, 30, tzinfo=UTC)),
        ("HH:mm z", "10:00 GMT+01:00", datetime(1970, 1, 1, 9, 0, tzinfo=UTC)),
        (
            "yyyyMMddHHmmssSSS",
            "20170103063001864",
            datetime(2017, 1, 3, 6, 30, 1, 864000, tzinfo=UTC),
        ),
    ],
)
def test_patterns_parse_as_java_does(pattern: str, text: str, expected: datetime) -> None:
    millis = compile_pattern(pattern).parse(text)
    assert millis == (expected - datetime(1970, 1, 1, tzinfo=UTC)).total_seconds() * 1000


def test_two_digit_years_fall_in_the_century_around_the_pivot() -> None:
    pattern = compile_pattern("yy", pivot_year=2024)
    years = {
        text: datetime.fromtimestamp(pattern.parse(text) / 1000, UTC).year
        for text in ("44", "43", "99")
    }
    assert years == {"44": 1944, "43": 2043, "99": 1999}
    assert compile_pattern("yyyy", pivot_year=2024).parse("44") == compile_pattern("y").parse(
        "0044"
    )


@pytest.mark.parametrize("text", ["", "2017", "2017-01", "x2017-01-03"])
def test_patterns_refuse_text_that_does_not_match(text: str) -> None:
    with pytest.raises(ValueError, match="does not match pattern"):
        compile_pattern("yyyy-MM-dd").parse(text)


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        ("yyyy-MM-dd bb", "illegal pattern character 'b'"),
        ("yyyy-ww", "letter 'w' is not supported"),
        ("D", "letter 'D' is not supported"),
        ("XXXX", "takes at most 3 letters"),
        ("'open", "unterminated quote"),
    ],
)
def test_patterns_refuse_letters_they_do_not_support(pattern: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        compile_pattern(pattern)


@given(st.integers(-62135596800000, 253402300799999))
def test_a_full_pattern_round_trips_every_instant(millis: int) -> None:
    pattern = compile_pattern("yyyy-MM-dd'T'HH:mm:ss.SSSZ")
    assert pattern.parse(pattern.format(millis)) == millis
