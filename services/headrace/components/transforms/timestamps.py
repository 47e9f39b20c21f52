"""Transformations about time: TimestampConverter changes how a timestamp is represented,
TimestampRouter puts the record's timestamp into its topic.

TimestampConverter's representations, Connect's ``target.type`` values:

| type | value | schema |
| --- | --- | --- |
| ``string`` | text in ``format`` (a SimpleDateFormat pattern, UTC) | STRING |
| ``unix`` | int, ``unix.precision`` units since the epoch | INT64 |
| ``Date`` | ``datetime.date`` | Connect's Date |
| ``Time`` | ``datetime.time`` | Connect's Time |
| ``Timestamp`` | aware ``datetime.datetime`` | Connect's Timestamp |

The input's representation comes from its schema or, without one, from its Python type. Every
conversion passes through whole milliseconds since the epoch, as Connect's does.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from datetime import UTC, date, datetime, time
from typing import Any

from headrace.components.java.datepattern import DatePattern, compile_pattern
from headrace.components.java.temporal import (
    date_from_millis,
    time_from_millis,
    timestamp_from_millis,
    to_millis,
)
from headrace.components.transforms.base import (
    REPLACE_NULL_WITH_DEFAULT,
    Plugin,
    R,
    SidedPlugin,
    build_struct,
    field_value,
    require_map,
    require_struct,
    struct_schema,
    type_name,
    with_replace_null_with_default,
)
from headrace.components.transforms.configs import invalid, one_of
from headrace.sdk.config import ConfigDef, Importance
from headrace.sdk.config import Type as ConfigType
from headrace.sdk.data import (
    DATE_NAME,
    DATE_SCHEMA,
    INT64_SCHEMA,
    STRING_SCHEMA,
    TIME_NAME,
    TIME_SCHEMA,
    TIMESTAMP_NAME,
    TIMESTAMP_SCHEMA,
    Schema,
    Struct,
)
from headrace.sdk.data import Type as SchemaType
from headrace.sdk.errors import DataError

STRING, UNIX, DATE, TIME, TIMESTAMP = "string", "unix", "Date", "Time", "Timestamp"
_SCHEMAS = {
    STRING: STRING_SCHEMA,
    UNIX: INT64_SCHEMA,
    DATE: DATE_SCHEMA,
    TIME: TIME_SCHEMA,
    TIMESTAMP: TIMESTAMP_SCHEMA,
}
_MILLIS_PER_UNIT = {"seconds": 1000, "milliseconds": 1}
_UNITS_PER_MILLI = {"microseconds": 1000, "nanoseconds": 1_000_000}
_INT64 = 2**63


def _current_year() -> int:
    # SimpleDateFormat anchors two-digit years at its creation; so does configure.
    return datetime.now(UTC).year


class TimestampConverter(SidedPlugin):
    """Converts a timestamp field, or the whole key or value, between string, unix, Date, Time
    and Timestamp. A null stays null; without a schema, a missing field is added as null."""

    NAME = "TimestampConverter"
    CONFIG = with_replace_null_with_default(
        ConfigDef()
        .define(
            "field",
            ConfigType.STRING,
            "",
            Importance.HIGH,
            "The field holding the timestamp, or empty if the whole value is the timestamp.",
        )
        .define(
            "target.type",
            ConfigType.STRING,
            importance=Importance.HIGH,
            doc="The representation wanted: string, unix, Date, Time or Timestamp.",
            validator=one_of(STRING, UNIX, DATE, TIME, TIMESTAMP),
        )
        .define(
            "format",
            ConfigType.STRING,
            "",
            doc="A SimpleDateFormat pattern: the output when target.type=string, and how to "
            "parse a string input.",
        )
        .define(
            "unix.precision",
            ConfigType.STRING,
            "milliseconds",
            Importance.LOW,
            "The unit of unix timestamps, in and out: seconds, milliseconds, microseconds or "
            "nanoseconds. Anything finer than a millisecond is lost.",
            validator=one_of("nanoseconds", "microseconds", "milliseconds", "seconds"),
        )
    )

    def configure(self, config: Mapping[str, str]) -> None:
        values = self.parse(config)
        self._field: str = values["field"]
        self._target: str = values["target.type"]
        self._precision: str = values["unix.precision"]
        self._replace_null = bool(values[REPLACE_NULL_WITH_DEFAULT])
        pattern: str = values["format"]
        self._format: DatePattern | None = None
        if pattern.strip():
            try:
                self._format = compile_pattern(pattern, _current_year())
            except ValueError as exc:
                raise invalid(
                    "format", f"not a supported SimpleDateFormat pattern: {exc}"
                ) from None
        elif self._target == STRING:
            raise invalid("format", "is required when target.type is string")

    def apply(self, record: R) -> R | None:
        schema, value = self.side.schema_of(record), self.side.value_of(record)
        if schema is None:
            if value is None or not self._field:
                return self.side.replace(record, None, self._convert(value, None))
            original = require_map(value, "TimestampConverter")
            updated = dict(original)
            updated[self._field] = self._convert(original.get(self._field), None)
            return self.side.replace(record, None, updated)
        if not self._field:
            converted = self._convert(value, _kind_of_schema(schema))
            return self.side.replace(record, self._target_schema(schema.optional), converted)
        struct = None if value is None else require_struct(value, "TimestampConverter")
        updated_schema = self._updated_schema(schema)
        return self.side.replace(
            record, updated_schema, self._convert_struct(struct, updated_schema)
        )

    def _target_schema(self, optional: bool) -> Schema:
        schema = _SCHEMAS[self._target]
        return schema.as_optional() if optional else schema

    def _updated_schema(self, schema: Schema) -> Schema:
        fields = [
            (f.name, self._target_schema(f.schema.optional) if f.name == self._field else f.schema)
            for f in schema.fields
        ]
        updated = dataclasses.replace(struct_schema(schema, fields), optional=schema.optional)
        if schema.default is None:
            return updated
        default = require_struct(schema.default, "TimestampConverter")
        return dataclasses.replace(updated, default=self._convert_struct(default, updated))

    def _convert_struct(self, struct: Struct | None, schema: Schema) -> Struct | None:
        if struct is None:
            return None
        values = {}
        for f in struct.schema.fields:
            current = field_value(struct, f.name, self._replace_null)
            if f.name == self._field:
                current = self._convert(current, _kind_of_schema(f.schema))
            values[f.name] = current
        return build_struct(schema, values)

    def _convert(self, value: Any, kind: str | None) -> Any:
        """``value``, of representation ``kind`` (None: from its Python type), converted."""
        if value is None:
            return None
        millis = self._to_millis(value, kind or _kind_of_value(value))
        return self._from_millis(millis)

    def _to_millis(self, value: Any, kind: str) -> int:
        if kind == STRING:
            if not isinstance(value, str):
                raise DataError(f"expected a string timestamp, found {type_name(value)}")
            if self._format is None:
                raise DataError("a string timestamp needs the format key to be parsed")
            try:
                return self._format.parse(value)
            except ValueError as exc:
                raise DataError(f"could not parse timestamp: {exc}") from None
        if kind == UNIX:
            if isinstance(value, bool) or not isinstance(value, int):
                raise DataError(f"expected a unix timestamp (int), found {type_name(value)}")
            if self._precision in _MILLIS_PER_UNIT:
                return _saturated(value * _MILLIS_PER_UNIT[self._precision])
            return _toward_zero(value, _UNITS_PER_MILLI[self._precision])
        if not isinstance(value, date | time):
            raise DataError(f"expected a {kind} (date, time or datetime), found {type_name(value)}")
        return to_millis(value)

    def _from_millis(self, millis: int) -> Any:
        if self._target == STRING:
            assert self._format is not None  # configure requires it
            return self._format.format(millis)
        if self._target == UNIX:
            if self._precision in _MILLIS_PER_UNIT:
                return _toward_zero(millis, _MILLIS_PER_UNIT[self._precision])
            return _saturated(millis * _UNITS_PER_MILLI[self._precision])
        if self._target == DATE:
            return date_from_millis(millis)
        if self._target == TIME:
            return time_from_millis(millis)
        return timestamp_from_millis(millis)


def _kind_of_schema(schema: Schema) -> str:
    kinds = {TIMESTAMP_NAME: TIMESTAMP, DATE_NAME: DATE, TIME_NAME: TIME}
    if schema.name in kinds:
        return kinds[schema.name]
    if schema.type is SchemaType.STRING:
        return STRING
    if schema.type is SchemaType.INT64:
        return UNIX
    raise DataError(f"a {schema.type} schema named {schema.name!r} is no timestamp type")


def _kind_of_value(value: Any) -> str:
    if isinstance(value, datetime):
        return TIMESTAMP
    if isinstance(value, date):
        return DATE
    if isinstance(value, time):
        return TIME
    if isinstance(value, int) and not isinstance(value, bool):
        return UNIX
    if isinstance(value, str):
        return STRING
    raise DataError(f"TimestampConverter does not take a {type_name(value)} as a timestamp")


def _toward_zero(number: int, divisor: int) -> int:
    """Java's integer division (``TimeUnit`` conversions to a coarser unit)."""
    quotient = abs(number) // divisor
    return quotient if number >= 0 else -quotient


def _saturated(number: int) -> int:
    """Java's ``TimeUnit`` conversions to a finer unit: clamped to a long."""
    return max(-_INT64, min(_INT64 - 1, number))


class TimestampRouter(Plugin):
    """Rewrites the topic from ``topic.format``, replacing ``${topic}`` with the topic and
    ``${timestamp}`` with the record's timestamp in ``timestamp.format`` (UTC). A record
    without a timestamp is a DataError."""

    NAME = "TimestampRouter"
    CONFIG = (
        ConfigDef()
        .define(
            "topic.format",
            ConfigType.STRING,
            "${topic}-${timestamp}",
            Importance.HIGH,
            "The new topic, with ${topic} and ${timestamp} as placeholders.",
        )
        .define(
            "timestamp.format",
            ConfigType.STRING,
            "yyyyMMdd",
            Importance.HIGH,
            "A SimpleDateFormat pattern for ${timestamp}.",
        )
    )

    def configure(self, config: Mapping[str, str]) -> None:
        values = self.parse(config)
        self._topic_format: str = values["topic.format"]
        try:
            self._format = compile_pattern(values["timestamp.format"], _current_year())
        except ValueError as exc:
            raise invalid(
                "timestamp.format", f"not a supported SimpleDateFormat pattern: {exc}"
            ) from None

    def apply(self, record: R) -> R | None:
        if record.timestamp is None:
            raise DataError("TimestampRouter needs the record's timestamp, and it has none")
        stamp = self._format.format(record.timestamp)
        topic = self._topic_format.replace("${topic}", record.topic)
        return dataclasses.replace(record, topic=topic.replace("${timestamp}", stamp))
