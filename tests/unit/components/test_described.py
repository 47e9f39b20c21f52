"""A converter's or a transform's error names what was wrong with a value, never the value: it
reaches the task's trace, which whoever may read the connector's status reads (found by the
second perimeter review: Cast quoted a file's line in its error)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from headrace.components.converters import JsonConverter
from headrace.components.transforms import new_transform
from headrace.sdk.data import described
from headrace.sdk.errors import DataError
from tests.unit.components.transforms.support import source

LINE = "root:x:0:0:s3cr3t-line-of-a-file"


def cast(spec: str, value: Any) -> None:
    transform = new_transform("Cast$Value")
    transform.configure({"spec": spec})
    transform.apply(source(value))


def converted(envelope: Any) -> None:
    converter = JsonConverter({"schemas.enable": "true"})
    converter.to_connect_data("t", json.dumps(envelope).encode())


def timestamp(value: str) -> None:
    transform = new_transform("TimestampConverter$Value")
    transform.configure({"target.type": "unix", "format": "yyyy-MM-dd"})
    transform.apply(source(value))


FAILING: list[Callable[[], None]] = [
    lambda: cast("int32", LINE),
    lambda: cast("float64", LINE),
    lambda: cast("int8", "9" * 40),
    lambda: converted({"schema": {"type": "int32"}, "payload": LINE}),
    lambda: converted({"schema": {"type": "array", "items": {"type": "int8"}}, "payload": LINE}),
    lambda: converted({"schema": {"type": "struct", "fields": []}, "payload": LINE}),
    lambda: converted({"schema": {"type": "bytes"}, "payload": [LINE]}),
    lambda: converted({"schema": {"type": "map", "keys": {"type": "string"}}, "payload": LINE}),
    lambda: converted({"schema": LINE, "payload": 1}),
    lambda: converted({"schema": {"type": "struct", "fields": [LINE]}, "payload": {}}),
    lambda: timestamp(LINE),
]


@pytest.mark.parametrize("failing", FAILING)
def test_an_error_about_a_record_never_quotes_it(failing: Callable[[], None]) -> None:
    with pytest.raises(DataError) as raised:
        failing()
    said = str(raised.value)
    assert "s3cr3t" not in said and "9" * 10 not in said, said


def test_a_value_is_described_by_its_kind_and_size() -> None:
    assert described(LINE) == f"text of {len(LINE)} characters"
    assert described(b"\x00\x01") == "2 bytes"
    assert described({"a": 1, "b": 2}) == "an object of 2 keys"
    assert described([1, 2, 3]) == "an array of 3 items"
    assert described(7) == "an integer" and described(None) == "null"
