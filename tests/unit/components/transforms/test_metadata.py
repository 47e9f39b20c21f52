"""SetSchemaMetadata: the key's or value's schema renamed or versioned, its data unchanged."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from headrace.sdk.data import INT32_SCHEMA, OPTIONAL_STRING_SCHEMA, STRING_SCHEMA, Schema, Struct
from headrace.sdk.errors import DataError
from tests.unit.components.transforms.support import applied, refusal, sink, source, xform

PERSON = Schema.struct([("id", INT32_SCHEMA), ("name", OPTIONAL_STRING_SCHEMA)], name="old")


@given(name=st.text(min_size=1, max_size=20), version=st.integers(0, 2**31 - 1))
def test_a_struct_takes_the_new_name_and_version_and_keeps_its_fields(
    name: str, version: int
) -> None:
    value = Struct(PERSON, {"id": 7, "name": "ada"})
    result = applied(
        xform("SetSchemaMetadata$Value", schema_name=name, schema_version=str(version)),
        sink(value, value_schema=PERSON),
    )
    assert (result.value_schema.name, result.value_schema.version) == (name, version)
    assert result.value_schema.fields == PERSON.fields
    assert result.value.schema == result.value_schema
    assert result.value.to_dict() == {"id": 7, "name": "ada"}


def test_what_is_not_set_is_kept() -> None:
    versioned = Schema(STRING_SCHEMA.type, name="kept", version=3, doc="a doc")
    record = source("text", key="k", key_schema=versioned)
    result = applied(xform("SetSchemaMetadata$Key", schema_version="4"), record)
    assert (result.key_schema.name, result.key_schema.version, result.key_schema.doc) == (
        "kept",
        4,
        "a doc",
    )
    assert (result.key, result.value) == ("k", "text")


def test_a_null_field_reads_as_its_default_unless_told_otherwise() -> None:
    defaulted = Schema(OPTIONAL_STRING_SCHEMA.type, optional=True, default="none given")
    schema = Schema.struct([("name", defaulted)], name="p")
    value = Struct(schema, {"name": None})
    record = sink(value, value_schema=schema)
    as_default = applied(xform("SetSchemaMetadata$Value", schema_name="q"), record)
    assert as_default.value.get("name") == "none given"
    kept_null = xform("SetSchemaMetadata$Value", schema_name="q", replace_null_with_default="false")
    assert applied(kept_null, record).value.get("name") is None


def test_a_record_without_a_schema_on_that_side_is_refused() -> None:
    with pytest.raises(DataError, match="Schema required"):
        xform("SetSchemaMetadata$Value", schema_name="x").apply(sink({"id": 1}))


def test_a_config_that_sets_nothing_is_refused_naming_the_keys() -> None:
    assert "schema.version" in refusal("SetSchemaMetadata$Value", {}, "schema.name")
    refusal("SetSchemaMetadata$Value", {"schema.version": "one"}, "schema.version")


def test_connect_s_class_name_reaches_it() -> None:
    name = "org.apache.kafka.connect.transforms.SetSchemaMetadata$Value"
    result = applied(xform(name, schema_name="n"), sink(1, value_schema=INT32_SCHEMA))
    assert (result.value_schema.name, result.value) == ("n", 1)
