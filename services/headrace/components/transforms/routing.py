"""Transformations that decide where a record goes: RegexRouter renames its topic, Filter drops
it (meant to run under a predicate)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from headrace.components.java.regex import compile_java, parse_replacement
from headrace.components.transforms.base import Plugin, R
from headrace.components.transforms.configs import invalid, valid_regex
from headrace.sdk.config import ConfigDef, Importance
from headrace.sdk.config import Type as ConfigType


class RegexRouter(Plugin):
    """Renames the topic when ``regex`` matches all of it, to ``replacement`` with ``$n`` and
    ``${name}`` standing for the groups (Java's ``Matcher.replaceFirst``). Other topics are
    left alone."""

    NAME = "RegexRouter"
    CONFIG = (
        ConfigDef()
        .define(
            "regex",
            ConfigType.STRING,
            importance=Importance.HIGH,
            doc="Regular expression (Java syntax) matched against the whole topic.",
            validator=valid_regex,
        )
        .define("replacement", ConfigType.STRING, importance=Importance.HIGH, doc="The new topic.")
    )

    def configure(self, config: Mapping[str, str]) -> None:
        values = self.parse(config)
        self._regex = compile_java(values["regex"])
        try:
            self._replacement = parse_replacement(values["replacement"], self._regex)
        except ValueError as exc:
            raise invalid("replacement", str(exc)) from None

    def apply(self, record: R) -> R | None:
        if self._regex.fullmatch(record.topic) is None:
            return record
        topic = self._replacement.replace_first(self._regex, record.topic)
        return dataclasses.replace(record, topic=topic)


class Filter(Plugin):
    """Drops every record it is applied to: give it a predicate to drop some."""

    NAME = "Filter"

    def configure(self, config: Mapping[str, str]) -> None:
        self.parse(config)

    def apply(self, record: R) -> R | None:
        return None
