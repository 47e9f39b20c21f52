"""DropHeaders, InsertHeader and HeaderFrom, and the text forms header values take."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal

import pytest

from headrace.components.java.text import double_to_string, to_text
from headrace.components.transforms import Transformation, new_transform
from headrace.sdk.data import (
    INT32_SCHEMA,
    OPTIONAL_STRING_SCHEMA,
    STRING_SCHEMA,
    Schema,
    Struct,
)
from headrace.sdk.errors import ConfigException, DataError
from headrace.sdk.records import SourceRecord
from tests.unit.components.transforms.support import applied, refusal, sink, xform

# DropHeaders


def test_drop_headers_removes_every_header_of_the_names() -> None:
    headers = (("a", b"1"), ("b", "2"), ("a", None), ("c", b"3"))
    result = applied(xform("DropHeaders", headers="a,c"), sink("v", headers=headers))
    assert (result.headers, result.value) == ((("b", "2"),), "v")
    assert applied(xform("DropHeaders", headers="x"), sink("v", headers=headers)).headers == headers


def test_drop_headers_refusals_name_the_key() -> None:
    with pytest.raises(ConfigException, match=r"^headers: is required"):
        new_transform("DropHeaders").configure({})
    with pytest.raises(ConfigException, match=r"^headers: must be a non-empty list"):
        new_transform("DropHeaders").configure({"headers": " , "})


# InsertHeader


def test_insert_header_appends_the_literal() -> None:
    transformation = xform("InsertHeader", header="source", value_literal="orders-db")
    record = SourceRecord({}, {}, "t", "v", headers=(("source", b"old"),))
    result = applied(transformation, record)
    assert result.headers == (("source", b"old"), ("source", "orders-db"))
    empty = applied(xform("InsertHeader", header="h", value_literal=""), sink("v"))
    assert empty.headers == (("h", ""),)


@pytest.mark.parametrize(
    ("config", "key"),
    [
        ({"value.literal": "x"}, "header"),
        ({"header": "h"}, "value.literal"),
        ({"header": "h", "value.literal": "x", "value": "y"}, "value"),
    ],
)
def test_insert_header_refusals_name_the_key(config: dict[str, str], key: str) -> None:
    assert refusal("InsertHeader", config).startswith(f"{key}: ")


# HeaderFrom

SCHEMA = Schema.struct(
    [("field1", STRING_SCHEMA), ("field2", INT32_SCHEMA), ("field3", OPTIONAL_STRING_SCHEMA)],
    name="Thing",
)


def header_from(operation: str, side: str = "Value", **config: str) -> Transformation:
    return xform(
        f"HeaderFrom${side}",
        fields=config.pop("fields", "field1,field2"),
        headers=config.pop("headers", "inserted1,inserted2"),
        operation=operation,
        **config,
    )


@pytest.mark.parametrize("operation", ["copy", "move"])
def test_header_from_schemaless(operation: str) -> None:
    record = sink({"field1": "a", "field2": 2, "field3": None}, headers=(("existing", b"x"),))
    result = applied(header_from(operation), record)
    assert result.headers == (("existing", b"x"), ("inserted1", "a"), ("inserted2", "2"))
    if operation == "copy":
        assert result.value == {"field1": "a", "field2": 2, "field3": None}
    else:
        assert result.value == {"field3": None}


@pytest.mark.parametrize("operation", ["copy", "move"])
def test_header_from_with_schema(operation: str) -> None:
    struct = Struct(SCHEMA, {"field1": "a", "field2": 2})
    result = applied(header_from(operation), sink(struct, value_schema=SCHEMA))
    assert result.headers == (("inserted1", "a"), ("inserted2", "2"))
    if operation == "copy":
        assert result.value is struct and result.value_schema is SCHEMA
    else:
        assert result.value_schema.name == "Thing"
        assert [f.name for f in result.value_schema.fields] == ["field3"]
        assert result.value.to_dict() == {"field3": None}


def test_header_from_key_variant_and_missing_fields() -> None:
    transformation = header_from("move", side="Key", fields="id,gone", headers="id,gone")
    result = applied(transformation, sink("v", key={"id": 7, "k": 1}))
    assert (result.key, result.value) == ({"k": 1}, "v")
    assert result.headers == (("id", "7"), ("gone", None))
    with pytest.raises(DataError, match="the value has no field 'gone'"):
        header_from("copy", fields="gone", headers="h").apply(
            sink(Struct(SCHEMA, {"field1": "a", "field2": 2}), value_schema=SCHEMA)
        )


def test_header_from_values_are_text_as_connect_writes_them() -> None:
    value = {
        "bytes": b"\x01\x02",
        "list": [1, "two", None],
        "map": {"a": {"b": 1.5}},
        "struct": Struct(SCHEMA, {"field1": 'q"uote', "field2": 2}),
        "decimal": Decimal("1.50"),
        "flag": False,
        "day": date(2020, 1, 2),
    }
    names = ",".join(value)
    result = applied(header_from("copy", fields=names, headers=names), sink(value))
    assert dict(result.headers) == {
        "bytes": b"\x01\x02",
        "list": '[1,"two",null]',
        "map": '{"a":{"b":1.5}}',
        "struct": '{"field1":"q\\"uote","field2":2,"field3":null}',
        "decimal": "1.50",
        "flag": "false",
        "day": "2020-01-02",
    }


def test_header_from_fails_on_tombstones_as_connect_does() -> None:
    with pytest.raises(DataError, match=r"HeaderFrom \(move\) needs a map"):
        header_from("move").apply(sink(None))


@pytest.mark.parametrize(
    ("config", "key", "reason"),
    [
        ({"headers": "h", "operation": "copy"}, "fields", "is required"),
        ({"fields": "", "headers": "h", "operation": "copy"}, "fields", "non-empty list"),
        ({"fields": "a,b", "headers": "h", "operation": "copy"}, "headers", "as many entries"),
        ({"fields": "a", "headers": "h", "operation": "rename"}, "operation", "one of move, copy"),
        ({"fields": "a", "headers": "h", "operation": "MOVE"}, "operation", "one of move, copy"),
    ],
)
def test_header_from_refusals_name_the_key(config: dict[str, str], key: str, reason: str) -> None:
    assert refusal("HeaderFrom$Value", config, reason).startswith(f"{key}: ")


@pytest.mark.parametrize(("replace", "expected"), [("true", "7"), ("false", None)])
def test_header_from_replace_null_with_default(replace: str, expected: str | None) -> None:
    schema = Schema.struct([("n", Schema(INT32_SCHEMA.type, optional=True, default=7))])
    transformation = header_from("copy", fields="n", headers="n", replace_null_with_default=replace)
    result = applied(transformation, sink(Struct(schema, {"n": None}), value_schema=schema))
    assert result.headers == (("n", expected),)


# Java's text forms


@pytest.mark.parametrize(
    ("number", "text"),
    [
        (1.0, "1.0"),
        (-0.0, "-0.0"),
        (0.1, "0.1"),
        (100.0, "100.0"),
        (1234567.0, "1234567.0"),
        (1.0e7, "1.0E7"),
        (12345678.9, "1.23456789E7"),
        (0.001, "0.001"),
        (1.0e-4, "1.0E-4"),
        (-2.5e-10, "-2.5E-10"),
        (1.7976931348623157e308, "1.7976931348623157E308"),
        (float("inf"), "Infinity"),
        (float("nan"), "NaN"),
    ],
)
def test_doubles_print_as_java_prints_them(number: float, text: str) -> None:
    assert double_to_string(number) == text


@pytest.mark.parametrize(
    ("millis", "text"),
    [
        (0, "00:00:00.000Z"),
        (3_600_000, "01:00:00.000Z"),
        (86_400_000, "1970-01-02"),
        (86_401_234, "1970-01-02T00:00:01.234Z"),
        (-1, "23:59:59.999Z"),  # Connect's rule: anything before one day is a time
    ],
)
def test_instants_print_in_connects_iso_forms(millis: int, text: str) -> None:
    moment = datetime.fromtimestamp(millis / 1000, UTC)
    assert to_text(moment) == text


def test_to_text_refuses_values_outside_connects_data_api() -> None:
    assert to_text(None) is None
    with pytest.raises(DataError, match="cannot write a set"):
        to_text({1, 2})
