"""InsertField, ReplaceField, MaskField and ValueToKey, with and without schemas."""

from __future__ import annotations

from datetime import UTC, date, datetime, time
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from headrace.components.transforms import new_transform
from headrace.sdk.data import (
    BOOLEAN_SCHEMA,
    BYTES_SCHEMA,
    DATE_SCHEMA,
    FLOAT64_SCHEMA,
    INT8_SCHEMA,
    INT32_SCHEMA,
    INT64_SCHEMA,
    OPTIONAL_INT32_SCHEMA,
    OPTIONAL_STRING_SCHEMA,
    OPTIONAL_TIMESTAMP_SCHEMA,
    STRING_SCHEMA,
    TIMESTAMP_SCHEMA,
    Schema,
    Struct,
    decimal_schema,
)
from headrace.sdk.errors import ConfigException, DataError
from tests.unit.components.transforms.support import (
    applied,
    configured,
    refusal,
    sink,
    source,
    xform,
)

STAMP = 1483425001864  # 2017-01-03T06:30:01.864Z
SIMPLE = Schema.struct([("magic", INT64_SCHEMA)], name="name")
SIMPLE = Schema(SIMPLE.type, name="name", version=1, doc="doc", fields=SIMPLE.fields)


# InsertField

INSERT_ALL = {
    "topic.field": "topic_field!",
    "partition.field": "partition_field",
    "offset.field": "offset_field!",
    "timestamp.field": "timestamp_field?",
    "static.field": "instance_id",
    "static.value": "my-instance-id",
}


def test_insert_field_schemaless_adds_metadata_after_the_existing_fields() -> None:
    record = sink({"magic": 42}, timestamp=STAMP, key="k", headers=(("h", b"1"),))
    result = applied(configured("InsertField$Value", INSERT_ALL), record)
    assert result.value == {
        "magic": 42,
        "topic_field": "test",
        "partition_field": 0,
        "offset_field": 42,
        "timestamp_field": STAMP,
        "instance_id": "my-instance-id",
    }
    assert list(result.value)[:2] == ["magic", "topic_field"]
    assert result.value_schema is None
    assert (result.key, result.headers, result.offset) == ("k", (("h", b"1"),), 42)
    assert record.value == {"magic": 42}  # the input is not modified


def test_insert_field_with_schema_adds_fields_with_connect_schemas() -> None:
    record = sink(Struct(SIMPLE, {"magic": 42}), value_schema=SIMPLE, timestamp=STAMP)
    result = applied(configured("InsertField$Value", INSERT_ALL), record)
    schema = result.value_schema
    assert (schema.name, schema.version, schema.doc) == ("name", 1, "doc")
    assert [(f.name, f.schema) for f in schema.fields] == [
        ("magic", INT64_SCHEMA),
        ("topic_field", STRING_SCHEMA),
        ("partition_field", OPTIONAL_INT32_SCHEMA),
        ("offset_field", INT64_SCHEMA),
        ("timestamp_field", OPTIONAL_TIMESTAMP_SCHEMA),
        ("instance_id", OPTIONAL_STRING_SCHEMA),
    ]
    assert result.value.schema == schema
    assert result.value.to_dict() == {
        "magic": 42,
        "topic_field": "test",
        "partition_field": 0,
        "offset_field": 42,
        "timestamp_field": datetime(2017, 1, 3, 6, 30, 1, 864000, tzinfo=UTC),
        "instance_id": "my-instance-id",
    }


def test_insert_field_required_suffix_gives_required_schemas() -> None:
    transformation = xform("InsertField$Value", partition_field="p!", timestamp_field="ts!")
    record = sink(Struct(SIMPLE, {"magic": 1}), value_schema=SIMPLE, timestamp=0)
    fields = applied(transformation, record).value_schema.fields
    assert [f.schema for f in fields[1:]] == [INT32_SCHEMA, TIMESTAMP_SCHEMA]


def test_insert_field_skips_missing_partition_and_timestamp() -> None:
    transformation = configured(
        "InsertField$Value", {"partition.field": "p", "timestamp.field": "ts", "topic.field": "t"}
    )
    assert applied(transformation, source({"a": 1})).value == {"a": 1, "t": "test"}
    result = applied(transformation, source(Struct(SIMPLE, {"magic": 1}), value_schema=SIMPLE))
    # Connect's order: topic, partition, offset, timestamp, static.
    assert [f.name for f in result.value_schema.fields] == ["magic", "t", "p", "ts"]
    assert result.value.get("p") is None and result.value.get("ts") is None


def test_insert_field_passes_tombstones_through() -> None:
    transformation = configured("InsertField$Value", INSERT_ALL)
    record = sink(None)
    assert transformation.apply(record) is record
    record = sink(None, value_schema=SIMPLE)
    assert transformation.apply(record) is record


def test_insert_field_offset_needs_a_sink_record() -> None:
    transformation = xform("InsertField$Value", offset_field="offset")
    with pytest.raises(DataError, match=r"offset\.field needs sink records"):
        transformation.apply(source({"a": 1}))


def test_insert_field_key_variant_works_on_the_key() -> None:
    record = sink("value", key={"id": 1})
    result = applied(xform("InsertField$Key", topic_field="topic"), record)
    assert (result.key, result.value) == ({"id": 1, "topic": "test"}, "value")


def test_insert_field_needs_a_map_or_struct() -> None:
    transformation = xform("InsertField$Value", topic_field="t")
    with pytest.raises(DataError, match="needs a map"):
        transformation.apply(sink("text"))
    with pytest.raises(DataError, match="needs a Struct"):
        transformation.apply(sink({"a": 1}, value_schema=SIMPLE))


DEFAULTED = Schema.struct(
    [("n", Schema(INT32_SCHEMA.type, optional=True, default=7)), ("s", OPTIONAL_STRING_SCHEMA)]
)


@pytest.mark.parametrize(("replace", "expected"), [("true", 7), ("false", None)])
def test_insert_field_replace_null_with_default(replace: str, expected: int | None) -> None:
    transformation = xform("InsertField$Value", topic_field="t", replace_null_with_default=replace)
    record = sink(Struct(DEFAULTED, {"n": None}), value_schema=DEFAULTED)
    assert applied(transformation, record).value.get("n") == expected


@pytest.mark.parametrize(
    ("config", "key", "reason"),
    [
        ({}, None, "no field to insert"),
        ({"static.field": "s"}, "static.value", "is required when static.field is set"),
        (
            {"static.value": "v", "topic.field": "t"},
            "static.value",
            "no effect without static.field",
        ),
        ({"topic.field": "!"}, "topic.field", "names no field"),
        ({"topic.field": "t", "topic": "x"}, "topic", "has no such configuration key"),
        (
            {"topic.field": "t", "replace.null.with.default": "no"},
            "replace.null.with.default",
            "no",
        ),
    ],
)
def test_insert_field_refusals_name_the_key(
    config: dict[str, str], key: str | None, reason: str
) -> None:
    message = refusal("InsertField$Value", config, reason)
    assert message.startswith(f"{key}: " if key else "no field")


# ReplaceField


def test_replace_field_schemaless_excludes_and_renames() -> None:
    transformation = xform("ReplaceField$Value", exclude="dont", renames="abc:xyz,foo:bar")
    value = {"dont": "whatever", "abc": 42, "foo": True, "etc": "etc"}
    assert applied(transformation, sink(value)).value == {"xyz": 42, "bar": True, "etc": "etc"}


def test_replace_field_include_keeps_only_those_and_exclude_wins() -> None:
    transformation = xform("ReplaceField$Value", include="abc,foo", exclude="foo")
    assert applied(transformation, sink({"abc": 1, "foo": 2, "etc": 3})).value == {"abc": 1}


REPLACE_SCHEMA = Schema.struct(
    [
        ("dont", STRING_SCHEMA),
        ("abc", INT32_SCHEMA),
        ("foo", BOOLEAN_SCHEMA),
        ("etc", STRING_SCHEMA),
    ],
    name="Thing",
)


def test_replace_field_with_schema_renames_fields_in_schema_and_value() -> None:
    transformation = xform("ReplaceField$Value", include="abc,foo,etc", renames="abc:xyz,foo:bar")
    struct = Struct(REPLACE_SCHEMA, {"dont": "whatever", "abc": 42, "foo": True, "etc": "etc"})
    result = applied(transformation, sink(struct, value_schema=REPLACE_SCHEMA))
    assert result.value_schema.name == "Thing"
    assert [(f.name, f.schema) for f in result.value_schema.fields] == [
        ("xyz", INT32_SCHEMA),
        ("bar", BOOLEAN_SCHEMA),
        ("etc", STRING_SCHEMA),
    ]
    assert result.value.to_dict() == {"xyz": 42, "bar": True, "etc": "etc"}


def test_replace_field_deprecated_names_still_work() -> None:
    transformation = xform("ReplaceField$Value", whitelist="a,b", blacklist="b")
    assert applied(transformation, sink({"a": 1, "b": 2, "c": 3})).value == {"a": 1}


@pytest.mark.parametrize(
    ("config", "key", "reason"),
    [
        ({"whitelist": "a", "include": "b"}, "whitelist", "deprecated name of include"),
        ({"blacklist": "a", "exclude": "b"}, "blacklist", "deprecated name of exclude"),
        ({"renames": "a"}, "renames", "invalid rename mapping 'a'"),
        ({"renames": "a:b:c"}, "renames", "invalid rename mapping"),
        ({"renames": "a:"}, "renames", "invalid rename mapping"),
        ({"renames": "a:b,a:c"}, "renames", "renamed twice"),
        ({"renames": "a:c,b:c"}, "renames", "two fields are renamed to 'c'"),
        ({"rename": "a:b"}, "rename", "no such configuration key"),
    ],
)
def test_replace_field_refusals_name_the_key(config: dict[str, str], key: str, reason: str) -> None:
    assert refusal("ReplaceField$Value", config, reason).startswith(f"{key}: ")


def test_replace_field_passes_tombstones_and_works_on_keys() -> None:
    transformation = xform("ReplaceField$Key", renames="a:b")
    record = sink(None, key=None)
    assert transformation.apply(record) is record
    assert applied(transformation, sink("v", key={"a": 1})).key == {"b": 1}


@pytest.mark.parametrize(("replace", "expected"), [("true", 7), ("false", None)])
def test_replace_field_replace_null_with_default(replace: str, expected: int | None) -> None:
    transformation = xform("ReplaceField$Value", renames="n:m", replace_null_with_default=replace)
    result = applied(transformation, sink(Struct(DEFAULTED, {"n": None}), value_schema=DEFAULTED))
    assert result.value.get("m") == expected


names = st.text("abcdefgh", min_size=1, max_size=5)


@given(
    value=st.dictionaries(names, st.integers(-(2**63), 2**63 - 1), max_size=8),
    targets=st.lists(st.text("uvwxyz", min_size=1, max_size=5), unique=True, max_size=8),
)
def test_replace_field_renames_are_undone_by_their_inverse(
    value: dict[str, int], targets: list[str]
) -> None:
    renames = dict(zip(value, targets, strict=False))
    if not renames:
        return
    forward = xform("ReplaceField$Value", renames=",".join(f"{a}:{b}" for a, b in renames.items()))
    back = xform("ReplaceField$Value", renames=",".join(f"{b}:{a}" for a, b in renames.items()))
    renamed = applied(forward, sink(value)).value
    assert set(renamed) == {renames.get(k, k) for k in value}
    assert applied(back, sink(renamed)).value == value
    schema = Schema.struct([(k, INT64_SCHEMA) for k in value])
    struct = Struct(schema, value)
    there = applied(forward, sink(struct, value_schema=schema))
    again = applied(back, there)
    assert again.value == struct and again.value_schema == schema


# MaskField


def test_mask_field_schemaless_masks_with_null_equivalents() -> None:
    value = {
        "int": 42,
        "float": 4.2,
        "bool": True,
        "text": "secret",
        "decimal": Decimal("12.34"),
        "date": date(2020, 5, 17),
        "time": time(12, 0),
        "timestamp": datetime(2020, 5, 17, tzinfo=UTC),
        "list": [1, 2],
        "map": {"a": 1},
        "null": None,
        "kept": "visible",
    }
    masked = [k for k in value if k != "kept"]
    result = applied(xform("MaskField$Value", fields=",".join(masked)), sink(value)).value
    assert result == {
        "int": 0,
        "float": 0.0,
        "bool": False,
        "text": "",
        "decimal": Decimal("0.00"),
        "date": date(1970, 1, 1),
        "time": time(0),
        "timestamp": datetime(1970, 1, 1, tzinfo=UTC),
        "list": [],
        "map": {},
        "null": None,
        "kept": "visible",
    }
    assert str(result["decimal"]) == "0.00"


def test_mask_field_adds_a_missing_schemaless_field_as_null_like_connect() -> None:
    result = applied(xform("MaskField$Value", fields="gone"), sink({"a": 1})).value
    assert result == {"a": 1, "gone": None}


MASK_SCHEMA = Schema.struct(
    [
        ("small", INT8_SCHEMA),
        ("num", INT32_SCHEMA),
        ("big", INT64_SCHEMA),
        ("real", FLOAT64_SCHEMA),
        ("amount", decimal_schema(2)),
        ("text", STRING_SCHEMA),
        ("day", DATE_SCHEMA),
        ("kept", STRING_SCHEMA),
    ]
)
MASK_VALUE = {
    "small": 8,
    "num": 32,
    "big": 64,
    "real": 6.4,
    "amount": Decimal("1.50"),
    "text": "secret",
    "day": date(2020, 1, 2),
    "kept": "visible",
}


def test_mask_field_with_schema_keeps_the_schema() -> None:
    fields = ",".join(k for k in MASK_VALUE if k != "kept")
    record = sink(Struct(MASK_SCHEMA, MASK_VALUE), value_schema=MASK_SCHEMA)
    result = applied(xform("MaskField$Value", fields=fields), record)
    assert result.value_schema == MASK_SCHEMA
    assert result.value.to_dict() == {
        "small": 0,
        "num": 0,
        "big": 0,
        "real": 0.0,
        "amount": Decimal("0.00"),
        "text": "",
        "day": date(1970, 1, 1),
        "kept": "visible",
    }


@pytest.mark.parametrize(
    ("replacement", "expected"),
    [
        ("123", {"small": 123, "num": 123, "big": 123, "real": 123.0, "text": "123"}),
        ("300", {"small": 44, "num": 300, "big": 300, "real": 300.0, "text": "300"}),
        ("-1.9", {"small": -1, "num": -1, "big": -1, "real": -1.9, "text": "-1.9"}),
        ("1E3", {"small": -24, "num": 1000, "big": 1000, "real": 1000.0, "text": "1E3"}),
    ],
)
def test_mask_field_replacement_converts_as_java_does(
    replacement: str, expected: dict[str, Any]
) -> None:
    transformation = xform(
        "MaskField$Value", fields="small,num,big,real,text", replacement=replacement
    )
    record = sink(Struct(MASK_SCHEMA, MASK_VALUE), value_schema=MASK_SCHEMA)
    result = applied(transformation, record).value.to_dict()
    assert {k: result[k] for k in expected} == expected
    assert result["kept"] == "visible"


def test_mask_field_replacement_schemaless() -> None:
    transformation = xform("MaskField$Value", fields="n,s,d", replacement="12")
    value = {"n": 1, "s": "x", "d": Decimal("1.5")}
    assert applied(transformation, sink(value)).value == {"n": 12, "s": "12", "d": Decimal("12")}


@pytest.mark.parametrize(
    ("value", "replacement", "reason"),
    [
        ({"f": True}, "1", "cannot mask a bool value with a replacement"),
        ({"f": [1]}, "1", "cannot mask a list value with a replacement"),
        ({"f": 1}, "abc", "cannot convert replacement 'abc' to a number"),
        ({"f": 1}, "NaN", "cannot convert replacement 'NaN'"),
        ({"f": b"raw"}, None, "cannot mask a bytes value"),
    ],
)
def test_mask_field_refuses_values_it_cannot_mask(
    value: dict[str, Any], replacement: str | None, reason: str
) -> None:
    config = {"fields": "f"} | ({} if replacement is None else {"replacement": replacement})
    with pytest.raises(DataError, match=reason):
        configured("MaskField$Value", config).apply(sink(value))


def test_mask_field_fails_on_tombstones_as_connect_does() -> None:
    with pytest.raises(DataError, match="needs a map"):
        xform("MaskField$Value", fields="a").apply(sink(None))


def test_mask_field_key_variant() -> None:
    result = applied(xform("MaskField$Key", fields="id"), sink("v", key={"id": "secret"}))
    assert (result.key, result.value) == ({"id": ""}, "v")


@pytest.mark.parametrize(
    ("config", "key", "reason"),
    [
        ({}, "fields", "is required"),
        ({"fields": ""}, "fields", "must be a non-empty list"),
        ({"fields": "a", "replacement": ""}, "replacement", "must be a non-empty string"),
        ({"fields": "a", "mask": "x"}, "mask", "no such configuration key"),
    ],
)
def test_mask_field_refusals_name_the_key(config: dict[str, str], key: str, reason: str) -> None:
    assert refusal("MaskField$Value", config, reason).startswith(f"{key}: ")


@pytest.mark.parametrize(("replace", "expected"), [("true", 0), ("false", None)])
def test_mask_field_replace_null_with_default(replace: str, expected: int | None) -> None:
    transformation = xform("MaskField$Value", fields="n", replace_null_with_default=replace)
    result = applied(transformation, sink(Struct(DEFAULTED, {"n": None}), value_schema=DEFAULTED))
    assert result.value.get("n") == expected  # true: the default 7 is what is masked


# ValueToKey


def test_value_to_key_schemaless_copies_fields_into_a_new_key() -> None:
    record = sink({"a": 1, "b": 2, "c": 3}, key="old")
    result = applied(xform("ValueToKey", fields="a,b"), record)
    assert (result.key, result.key_schema, result.value) == (
        {"a": 1, "b": 2},
        None,
        {"a": 1, "b": 2, "c": 3},
    )
    assert applied(xform("ValueToKey", fields="a,gone"), record).key == {"a": 1, "gone": None}


def test_value_to_key_with_schema_builds_a_key_struct() -> None:
    schema = Schema.struct([("a", INT32_SCHEMA), ("b", INT32_SCHEMA), ("c", BYTES_SCHEMA)])
    struct = Struct(schema, {"a": 1, "b": 2, "c": b"3"})
    result = applied(xform("ValueToKey", fields="b,a"), source(struct, value_schema=schema))
    assert [(f.name, f.schema) for f in result.key_schema.fields] == [
        ("b", INT32_SCHEMA),
        ("a", INT32_SCHEMA),
    ]
    assert result.key.to_dict() == {"b": 2, "a": 1}
    assert result.value is struct and result.source_offset == {"line": 1}


def test_value_to_key_refusals() -> None:
    schema = Schema.struct([("a", INT32_SCHEMA)])
    with pytest.raises(DataError, match="no field 'b'"):
        xform("ValueToKey", fields="b").apply(sink(Struct(schema, {"a": 1}), value_schema=schema))
    with pytest.raises(DataError, match="needs a map"):
        xform("ValueToKey", fields="a").apply(sink(None))
    with pytest.raises(ConfigException, match=r"^fields: must be a non-empty list"):
        new_transform("ValueToKey").configure({"fields": ""})


@pytest.mark.parametrize(("replace", "expected"), [("true", 7), ("false", None)])
def test_value_to_key_replace_null_with_default(replace: str, expected: int | None) -> None:
    transformation = xform("ValueToKey", fields="n", replace_null_with_default=replace)
    result = applied(transformation, sink(Struct(DEFAULTED, {"n": None}), value_schema=DEFAULTED))
    assert result.key.get("n") == expected
