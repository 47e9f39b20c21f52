"""The contracts of the plugins a connector config names besides its connector (KIP-891):
converters, header converters, transformations and predicates.

headrace ships Connect's own (``JsonConverter``, ``InsertField$Value``, ``TopicNameMatches``...),
and a plugin version on the plugin path can add more: a manifest whose ``type`` is
``converter``, ``transformation`` or ``predicate`` and whose ``class`` implements one of the
protocols below. A config names it by class or simple class name, and pins a version with the
``.plugin.version`` key beside the name (``transforms.<alias>.plugin.version``,
``value.converter.plugin.version``); without one, the latest installed runs. Each is created
once per task, configured once, and then called for every record.

The protocols are structural: a class implements one by having its methods, and needs nothing
from headrace but this SDK.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from headrace.sdk.config import ConfigDef
from headrace.sdk.data import Schema
from headrace.sdk.records import SinkRecord, SourceRecord

R = TypeVar("R", SourceRecord, SinkRecord)
"""A record: the class a transformation is given is the class it returns."""

Record = SourceRecord | SinkRecord


class Transformation(Protocol):
    """One single message transform: configure once, then apply to each record.

    Records are frozen dataclasses: return a copy (``dataclasses.replace``) of the class given,
    with every field not changed carried over, or None to drop the record.
    """

    def config_def(self) -> ConfigDef:
        """The keys this transformation understands."""
        ...

    def configure(self, config: Mapping[str, str]) -> None:
        """Reads the keys; raises ConfigException naming the key and the problem."""
        ...

    def apply(self, record: R) -> R | None:
        """The transformed record, or None to drop it. DataError when the record cannot be."""
        ...

    def close(self) -> None:
        """Releases what ``configure`` acquired."""
        ...


class Predicate(Protocol):
    """A condition on a record, which decides whether a transformation applies to it."""

    def config_def(self) -> ConfigDef:
        """The keys this predicate understands."""
        ...

    def configure(self, config: Mapping[str, str]) -> None:
        """Reads the keys; raises ConfigException naming the key and the problem."""
        ...

    def test(self, record: Record) -> bool:
        """Whether the record satisfies the condition."""
        ...

    def close(self) -> None:
        """Releases what ``configure`` acquired."""
        ...


@dataclass(frozen=True)
class SchemaAndValue:
    """A converted value and its schema (None when the format carries none)."""

    schema: Schema | None
    value: Any


NULL = SchemaAndValue(None, None)


class Converter(Protocol):
    """Turns record keys or values into bytes and back. Pure: no I/O, no state between calls.

    A converter plugin's class is created as ``cls(config, is_key)``, ``config`` being the keys
    under ``key.converter.`` or ``value.converter.`` with that prefix removed. Both directions
    raise ``DataError`` on input they cannot handle; the runtime adds the topic, partition and
    offset the input came from.

    Its keys are said, optionally, by a ``config_def()`` callable on the class (a staticmethod
    or classmethod returning a ``ConfigDef``): its PASSWORD keys are then hidden in answers and
    logs under the prefix. Without one, every key of the converter is taken as secret.
    """

    def from_connect_data(self, topic: str, schema: Schema | None, value: Any) -> bytes | None:
        """Serialises a value (None stays None: a tombstone)."""
        ...

    def to_connect_data(self, topic: str, data: bytes | None) -> SchemaAndValue:
        """Deserialises bytes (None gives ``NULL``)."""
        ...


class HeaderConverter(Protocol):
    """Turns header values into bytes and back. Pure: no I/O, no state between calls.

    A header converter plugin's class is created as ``cls(config)``, ``config`` being the keys
    under ``header.converter.`` with that prefix removed. Its keys are said as a converter's
    (``config_def`` on the class).

    Both directions raise ``DataError`` naming the header on a value they cannot handle; the
    runtime adds where the record came from.
    """

    def from_header(self, topic: str, name: str, value: Any) -> bytes | None:
        """Serialises a header value a source task gave (None stays None: a null value)."""
        ...

    def to_header(self, topic: str, name: str, data: bytes | None) -> Any:
        """What a sink task is given for a header consumed as ``data`` (None stays None)."""
        ...
