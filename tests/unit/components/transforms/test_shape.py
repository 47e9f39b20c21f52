"""ExtractField, HoistField and Flatten, with and without schemas."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from headrace.components.transforms import new_transform
from headrace.components.transforms.shape import parse_field_path
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
    Schema,
    Struct,
)
from headrace.sdk.errors import ConfigException, DataError
from tests.unit.components.transforms.support import applied, refusal, sink, source, xform

# ExtractField


def test_extract_field_schemaless_takes_a_map_entry() -> None:
    record = sink({"magic": 42, "other": 1}, key="k")
    result = applied(xform("ExtractField$Value", field="magic"), record)
    assert (result.value, result.value_schema, result.key) == (42, None, "k")
    assert applied(xform("ExtractField$Value", field="gone"), record).value is None


def test_extract_field_with_schema_takes_the_field_and_its_schema() -> None:
    schema = Schema.struct([("magic", INT32_SCHEMA), ("other", STRING_SCHEMA)])
    record = source(key=Struct(schema, {"magic": 42, "other": "x"}), key_schema=schema)
    result = applied(xform("ExtractField$Key", field="magic"), record)
    assert (result.key, result.key_schema) == (42, INT32_SCHEMA)
    assert result.source_partition == {"file": "f"}


def test_extract_field_passes_nulls_through() -> None:
    assert applied(xform("ExtractField$Value", field="a"), sink(None)).value is None
    schema = Schema.struct([("a", OPTIONAL_STRING_SCHEMA)], optional=True)
    result = applied(xform("ExtractField$Value", field="a"), sink(None, value_schema=schema))
    assert (result.value, result.value_schema) == (None, OPTIONAL_STRING_SCHEMA)


def test_extract_field_refuses_unknown_fields_and_wrong_values() -> None:
    schema = Schema.struct([("a", INT32_SCHEMA)])
    with pytest.raises(DataError, match="unknown field 'b'"):
        xform("ExtractField$Value", field="b").apply(
            sink(Struct(schema, {"a": 1}), value_schema=schema)
        )
    with pytest.raises(DataError, match="needs a map"):
        xform("ExtractField$Value", field="a").apply(sink("text"))
    with pytest.raises(DataError, match="needs a Struct"):
        xform("ExtractField$Value", field="a").apply(sink(1, value_schema=INT32_SCHEMA))
    with pytest.raises(DataError, match="cannot look up field 'a' in a int32 schema"):
        xform("ExtractField$Value", field="a").apply(sink(None, value_schema=INT32_SCHEMA))


NESTED = Schema.struct(
    [
        ("outer", Schema.struct([("inner", INT32_SCHEMA), ("a.b", STRING_SCHEMA)], optional=True)),
        ("top", INT32_SCHEMA),
    ]
)


def test_extract_field_v2_follows_a_nested_path() -> None:
    v2 = {"field_syntax_version": "V2"}
    value = {"outer": {"inner": 7, "a.b": "dotted"}, "top": 1}
    assert applied(xform("ExtractField$Value", field="outer.inner", **v2), sink(value)).value == 7
    got = applied(xform("ExtractField$Value", field="outer.`a.b`", **v2), sink(value))
    assert got.value == "dotted"
    assert (
        applied(xform("ExtractField$Value", field="top.x", **v2), sink({"top": None})).value is None
    )
    struct = Struct(
        NESTED, {"outer": Struct(NESTED.field("outer").schema, {"inner": 7, "a.b": "d"})}
    )
    result = applied(
        xform("ExtractField$Value", field="outer.inner", field_syntax_version="v2"),
        sink(struct, value_schema=NESTED),
    )
    assert (result.value, result.value_schema) == (7, INT32_SCHEMA)
    empty = Struct(NESTED, {"top": 1})
    result = applied(
        xform("ExtractField$Value", field="outer.inner", **v2), sink(empty, value_schema=NESTED)
    )
    assert (result.value, result.value_schema) == (None, INT32_SCHEMA)


def test_extract_field_v1_takes_a_dotted_name_literally() -> None:
    value = {"outer.inner": 1, "outer": {"inner": 2}}
    assert applied(xform("ExtractField$Value", field="outer.inner"), sink(value)).value == 1


@pytest.mark.parametrize(
    ("path", "steps"),
    [
        ("foobarbaz", ["foobarbaz"]),
        ("foo.bar.baz", ["foo", "bar", "baz"]),
        ("..", ["", "", ""]),
        ("foo..", ["foo", "", ""]),
        (".bar.", ["", "bar", ""]),
        ("..baz", ["", "", "baz"]),
        ("foo`bar`baz", ["foo`bar`baz"]),
        ("`foo.bar.baz`", ["foo.bar.baz"]),
        ("foo.`bar.baz`", ["foo", "bar.baz"]),
        ("`foo.bar`.baz", ["foo.bar", "baz"]),
        ("foo.`bar`.baz", ["foo", "bar", "baz"]),
        ("foo.``bar.baz`", ["foo", "`bar.baz"]),
        ("foo.`bar.baz``", ["foo", "bar.baz`"]),
        ("foo.`ba`r.baz`", ["foo", "ba`r.baz"]),
        ("foo.ba`r.baz", ["foo", "ba`r", "baz"]),
        ("foo.``bar``.baz", ["foo", "`bar`", "baz"]),
        ("``foo.bar.baz``", ["`foo.bar.baz`"]),
        ("foo.`bar\\`.baz`", ["foo", "bar`.baz"]),
        ("foo.`bar.`baz`", ["foo", "bar.`baz"]),
        ("foo.`bar\\`.`baz`", ["foo", "bar`.`baz"]),
        ("foo.`bar\\\\`.\\`baz`", ["foo", "bar\\`.\\`baz"]),
        ("", []),
    ],
)
def test_field_paths_split_as_kip_821_says(path: str, steps: list[str]) -> None:
    assert parse_field_path(path) == steps


@pytest.mark.parametrize(
    ("path", "position"),
    [
        ("`foo.bar.baz", 0),
        ("foo.`bar.baz", 4),
        ("foo.bar.`baz", 8),
        ("foo.bar.`baz\\`", 8),
    ],
)
def test_field_paths_refuse_an_unclosed_backtick(path: str, position: int) -> None:
    with pytest.raises(ValueError, match=f"backtick at position {position}"):
        parse_field_path(path)


@pytest.mark.parametrize(
    ("config", "key", "reason"),
    [
        ({}, "field", "is required"),
        ({"field": "`a.b", "field.syntax.version": "V2"}, "field", "incomplete backtick pair"),
        ({"field": "", "field.syntax.version": "V2"}, "field", "names no field"),
        ({"field": "a", "field.syntax.version": "V3"}, "field.syntax.version", "one of V1, V2"),
        ({"field": "a", "fields": "b"}, "fields", "no such configuration key"),
    ],
)
def test_extract_field_refusals_name_the_key(config: dict[str, str], key: str, reason: str) -> None:
    assert refusal("ExtractField$Value", config, reason).startswith(f"{key}: ")


@pytest.mark.parametrize(("replace", "expected"), [("true", 7), ("false", None)])
def test_extract_field_replace_null_with_default(replace: str, expected: int | None) -> None:
    schema = Schema.struct([("n", Schema(INT32_SCHEMA.type, optional=True, default=7))])
    transformation = xform("ExtractField$Value", field="n", replace_null_with_default=replace)
    result = applied(transformation, sink(Struct(schema, {"n": None}), value_schema=schema))
    assert result.value == expected


# HoistField


def test_hoist_field_docs_example_wraps_each_line_in_a_map() -> None:
    transformation = xform("HoistField$Value", field="line")
    assert [applied(transformation, sink(v)).value for v in ("Foo", "Bar")] == [
        {"line": "Foo"},
        {"line": "Bar"},
    ]


def test_hoist_field_with_schema_wraps_in_a_one_field_struct() -> None:
    result = applied(
        xform("HoistField$Key", field="magic"), sink("v", key=42, key_schema=INT32_SCHEMA)
    )
    assert [(f.name, f.schema) for f in result.key_schema.fields] == [("magic", INT32_SCHEMA)]
    assert result.key.to_dict() == {"magic": 42} and result.value == "v"


def test_hoist_field_wraps_null_too() -> None:
    assert applied(xform("HoistField$Value", field="f"), sink(None)).value == {"f": None}
    result = applied(
        xform("HoistField$Value", field="f"), sink(None, value_schema=OPTIONAL_INT32_SCHEMA)
    )
    assert result.value.get("f") is None
    with pytest.raises(DataError):
        xform("HoistField$Value", field="f").apply(sink(None, value_schema=INT32_SCHEMA))


def test_hoist_field_needs_a_field() -> None:
    with pytest.raises(ConfigException, match=r"^field: is required"):
        new_transform("HoistField$Value").configure({})


# Flatten


def test_flatten_schemaless_nested_maps() -> None:
    value = {
        "A": {
            "B": {"int8": 8, "float": 3.5, "bool": True, "text": "s", "bytes": b"b", "list": [1]},
            "null": None,
        },
        "top": 1,
    }
    result = applied(xform("Flatten$Value", delimiter="#"), sink(value))
    assert result.value == {
        "A#B#int8": 8,
        "A#B#float": 3.5,
        "A#B#bool": True,
        "A#B#text": "s",
        "A#B#bytes": b"b",
        "A#B#list": [1],
        "A#null": None,
        "top": 1,
    }


def test_flatten_schemaless_keeps_arrays_and_their_contents() -> None:
    value = {"a": [{"b": {"c": 1}}]}
    assert applied(xform("Flatten$Value"), sink(value)).value == value


def test_flatten_schemaless_refuses_values_outside_connects_data_api() -> None:
    with pytest.raises(DataError, match="does not support Decimal values without a schema"):
        xform("Flatten$Value").apply(sink({"a": {"b": Decimal(1)}}))


def test_flatten_passes_tombstones_and_works_on_keys() -> None:
    record = sink(None)
    assert xform("Flatten$Value").apply(record) is record
    assert applied(xform("Flatten$Key"), sink("v", key={"a": {"b": 1}})).key == {"a.b": 1}


SUPPORTED = Schema.struct(
    [
        ("int8", INT8_SCHEMA),
        ("int16", INT16_SCHEMA),
        ("int32", INT32_SCHEMA),
        ("int64", INT64_SCHEMA),
        ("float32", FLOAT32_SCHEMA),
        ("float64", FLOAT64_SCHEMA),
        ("boolean", BOOLEAN_SCHEMA),
        ("string", STRING_SCHEMA),
        ("bytes", BYTES_SCHEMA),
        ("array", Schema.array(INT32_SCHEMA)),
    ]
)
SUPPORTED_VALUES = {
    "int8": 8,
    "int16": 16,
    "int32": 32,
    "int64": 64,
    "float32": 32.5,
    "float64": 64.5,
    "boolean": True,
    "string": "s",
    "bytes": b"b",
    "array": [1, 2],
}


def test_flatten_with_schema_lifts_nested_struct_fields() -> None:
    middle = Schema.struct([("B", SUPPORTED)])
    outer = Schema.struct([("A", middle)], name="Outer")
    value = Struct(outer, {"A": Struct(middle, {"B": Struct(SUPPORTED, SUPPORTED_VALUES)})})
    result = applied(xform("Flatten$Value", delimiter="#"), sink(value, value_schema=outer))
    assert result.value_schema.name == "Outer"
    assert [(f.name, f.schema) for f in result.value_schema.fields] == [
        (f"A#B#{f.name}", f.schema) for f in SUPPORTED.fields
    ]
    assert result.value.to_dict() == {f"A#B#{k}": v for k, v in SUPPORTED_VALUES.items()}


def test_flatten_with_schema_makes_fields_under_an_optional_parent_optional() -> None:
    inner = Schema.struct([("x", INT32_SCHEMA)], optional=True)
    outer = Schema.struct([("a", inner), ("b", INT32_SCHEMA)])
    result = applied(xform("Flatten$Value"), sink(Struct(outer, {"b": 1}), value_schema=outer))
    assert [(f.name, f.schema) for f in result.value_schema.fields] == [
        ("a.x", OPTIONAL_INT32_SCHEMA),
        ("b", INT32_SCHEMA),
    ]
    assert result.value.to_dict() == {"a.x": None, "b": 1}


def test_flatten_with_schema_inherits_a_parent_default() -> None:
    inner = Schema.struct([("x", INT32_SCHEMA), ("y", Schema(INT32_SCHEMA.type, default=5))])
    inner = Schema(inner.type, optional=True, fields=inner.fields, default=Struct(inner, {"x": 3}))
    outer = Schema.struct([("a", inner)])
    result = applied(xform("Flatten$Value"), sink(Struct(outer, {}), value_schema=outer))
    fields = {f.name: f.schema for f in result.value_schema.fields}
    assert (fields["a.x"].default, fields["a.x"].optional) == (3, True)
    assert fields["a.y"].default == 5


def test_flatten_with_schema_refuses_map_fields() -> None:
    schema = Schema.struct([("m", Schema.map(STRING_SCHEMA, INT32_SCHEMA))])
    with pytest.raises(DataError, match="does not support map fields with a schema"):
        xform("Flatten$Value").apply(sink(Struct(schema, {"m": {}}), value_schema=schema))


def test_flatten_refusals() -> None:
    with pytest.raises(ConfigException, match=r"^separator: Flatten\$Value has no such"):
        new_transform("Flatten$Value").configure({"separator": "_"})
    with pytest.raises(DataError, match="needs a map"):
        xform("Flatten$Value").apply(sink([1, 2]))


keys = st.text("abcxyz", min_size=1, max_size=4)
leaves = st.none() | st.integers() | st.text(max_size=3) | st.booleans() | st.lists(st.integers())
nested = st.recursive(
    st.dictionaries(keys, leaves, min_size=1, max_size=3),
    lambda inner: st.dictionaries(keys, leaves | inner, min_size=1, max_size=3),
    max_leaves=12,
)


def leaf_paths(value: dict[str, Any], prefix: tuple[str, ...] = ()) -> dict[tuple[str, ...], Any]:
    paths: dict[tuple[str, ...], Any] = {}
    for key, item in value.items():
        if isinstance(item, dict):
            paths.update(leaf_paths(item, (*prefix, key)))
        else:
            paths[(*prefix, key)] = item
    return paths


@given(value=nested, delimiter=st.sampled_from([".", "_", "->"]))
def test_flatten_gives_every_leaf_under_its_joined_path(
    value: dict[str, Any], delimiter: str
) -> None:
    flat = applied(xform("Flatten$Value", delimiter=delimiter), sink(value)).value
    assert flat == {delimiter.join(path): leaf for path, leaf in leaf_paths(value).items()}
    for path, leaf in leaf_paths(value).items():
        extract = xform("ExtractField$Value", field=".".join(path), field_syntax_version="V2")
        assert applied(extract, sink(value)).value == leaf == flat[delimiter.join(path)]
