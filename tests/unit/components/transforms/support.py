"""What the tests of ``headrace.components.transforms`` share: configured transformations, records
to feed them, and the checks every transformation's tests make (a result of the record's own
class, a refusal named by its key)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from headrace.components.transforms import Transformation, new_transform
from headrace.sdk.errors import ConfigException
from headrace.sdk.records import SinkRecord, SourceRecord


def configured(type_name: str, config: Mapping[str, str]) -> Transformation:
    """A new transformation of ``type_name`` (a class name or alias) configured with ``config``."""
    transformation = new_transform(type_name)
    transformation.configure(config)
    return transformation


def xform(type_name: str, **config: str) -> Transformation:
    """``configured`` with the keys as keyword arguments, ``_`` standing for ``.``:
    ``xform("InsertField$Value", static_field="f")`` sets ``static.field``."""
    return configured(type_name, {k.replace("_", "."): v for k, v in config.items()})


def source(value: Any = None, *, topic: str = "test", **fields: Any) -> SourceRecord:
    """A source record of ``value`` read from line 1 of file ``f``; ``fields`` as the record's."""
    return SourceRecord({"file": "f"}, {"line": 1}, topic, value, **fields)


def sink(value: Any = None, *, topic: str = "test", **fields: Any) -> SinkRecord:
    """A sink record of ``value`` at offset 42 of partition 0; ``fields`` as the record's."""
    key = fields.pop("key", None)
    return SinkRecord(topic, 0, 42, key, value, **fields)


def applied(transformation: Transformation, record: Any) -> Any:
    """What ``transformation`` makes of ``record``, which must be a record of the same class."""
    result = transformation.apply(record)
    assert result is not None and type(result) is type(record)
    return result


def refusal(type_name: str, config: Mapping[str, str], reason: str | None = None) -> str:
    """The message of the ConfigException a new ``type_name`` raises for ``config``, which must
    match the regex ``reason`` when one is given."""
    with pytest.raises(ConfigException, match=reason) as caught:
        new_transform(type_name).configure(config)
    return str(caught.value)
