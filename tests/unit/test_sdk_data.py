"""Schema and Struct: values are checked against their schemas."""

from __future__ import annotations

import pytest

from headrace.sdk import DataError, Schema, Struct
from headrace.sdk.data import (
    BOOLEAN_SCHEMA,
    INT8_SCHEMA,
    INT32_SCHEMA,
    OPTIONAL_STRING_SCHEMA,
    STRING_SCHEMA,
)

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
