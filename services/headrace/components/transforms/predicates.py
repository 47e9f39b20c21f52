"""The predicates a transformation can be made conditional on: TopicNameMatches, HasHeaderKey
and RecordIsTombstone."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from headrace.components.java.regex import compile_java
from headrace.components.transforms.base import Plugin, Record
from headrace.components.transforms.configs import non_empty_string, valid_regex
from headrace.sdk.config import ConfigDef
from headrace.sdk.config import Type as ConfigType


def _non_empty_regex(name: str, value: Any) -> None:
    non_empty_string(name, value)
    valid_regex(name, value)


class TopicNameMatches(Plugin):
    """True for records whose whole topic matches ``pattern`` (a Java regular expression)."""

    NAME = "TopicNameMatches"
    CONFIG = ConfigDef().define(
        "pattern",
        ConfigType.STRING,
        doc="A Java regular expression matched against the whole topic.",
        validator=_non_empty_regex,
    )

    def configure(self, config: Mapping[str, str]) -> None:
        self._pattern = compile_java(self.parse(config)["pattern"])

    def test(self, record: Record) -> bool:
        return self._pattern.fullmatch(record.topic) is not None


class HasHeaderKey(Plugin):
    """True for records with at least one header called ``name``."""

    NAME = "HasHeaderKey"
    CONFIG = ConfigDef().define(
        "name", ConfigType.STRING, doc="The header name.", validator=non_empty_string
    )

    def configure(self, config: Mapping[str, str]) -> None:
        self._name: str = self.parse(config)["name"]

    def test(self, record: Record) -> bool:
        return any(name == self._name for name, _ in record.headers)


class RecordIsTombstone(Plugin):
    """True for tombstones: records whose value is null."""

    NAME = "RecordIsTombstone"

    def configure(self, config: Mapping[str, str]) -> None:
        self.parse(config)

    def test(self, record: Record) -> bool:
        return record.value is None
