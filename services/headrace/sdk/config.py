"""``ConfigDef``: what a plugin's configuration keys are, and per-key validation results.

Connect's ``ConfigDef`` in Python: each key has a type, a default (or none, which makes it
required), an importance, a doc string, an optional validator and recommended values, and what
a UI shows of it (group, order in the group, width, display name, the keys that depend on it).
A ``Recommender`` computes a key's recommended values and visibility from the other keys' parsed
values. ``validate`` answers, per defined key, the value, its errors, recommended values and
visibility, the shape of Connect's validate call; keys the definition does not know are left to
the framework.

    CONFIG = (
        ConfigDef()
        .define("topic", Type.STRING, importance=Importance.HIGH, doc="Where records go.")
        .define("batch.size", Type.INT, 100, validator=Range(1, None), doc="Records per poll.")
    )
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any, Protocol

from headrace.sdk.errors import ConfigException


class Type(StrEnum):
    """Config value types; values arrive as strings and are parsed to these."""

    BOOLEAN = "BOOLEAN"
    STRING = "STRING"
    INT = "INT"
    LONG = "LONG"
    DOUBLE = "DOUBLE"
    LIST = "LIST"
    CLASS = "CLASS"
    PASSWORD = "PASSWORD"


class Importance(StrEnum):
    HIGH = "HIGH"
    MEDIUM = "MEDIUM"
    LOW = "LOW"


class Width(StrEnum):
    """How wide a UI should draw a key's field."""

    NONE = "NONE"
    SHORT = "SHORT"
    MEDIUM = "MEDIUM"
    LONG = "LONG"


class Recommender(Protocol):
    """Connect's ``ConfigDef.Recommender``: what a key may be set to, and whether it matters,
    given the parsed values of every key (None for a key that did not parse)."""

    def valid_values(self, name: str, parsed: Mapping[str, Any]) -> list[Any]: ...

    def visible(self, name: str, parsed: Mapping[str, Any]) -> bool: ...


class _NoDefault:
    def __repr__(self) -> str:
        return "NO_DEFAULT"


NO_DEFAULT: Any = _NoDefault()
"""The default of a required key."""

Validator = Callable[[str, Any], None]
"""Called with (name, parsed value); raises ConfigException to reject the value."""


def parse_value(name: str, type_: Type, raw: Any) -> Any:
    """Parses a raw (usually string) value to ``type_``; ConfigException says why it cannot."""
    if raw is None or not isinstance(raw, str):
        return raw
    text = raw.strip()
    try:
        if type_ is Type.BOOLEAN:
            if text.lower() not in ("true", "false"):
                raise ValueError(raw)
            return text.lower() == "true"
        if type_ in (Type.INT, Type.LONG):
            return int(text)
        if type_ is Type.DOUBLE:
            return float(text)
        if type_ is Type.LIST:
            return [part.strip() for part in text.split(",") if part.strip()]
    except ValueError:
        raise ConfigException(
            f"Invalid value {raw} for configuration {name}: not a valid {type_.lower()}"
        ) from None
    # STRING, CLASS and PASSWORD keep the text as given (passwords are masked in results).
    return raw


@dataclass(frozen=True)
class Range:
    """Accepts numbers within [low, high]; None leaves that side open."""

    low: float | None = None
    high: float | None = None

    def __call__(self, name: str, value: Any) -> None:
        if value is None:
            return
        if (self.low is not None and value < self.low) or (
            self.high is not None and value > self.high
        ):
            low = "..." if self.low is None else self.low
            high = "..." if self.high is None else self.high
            raise ConfigException(
                f"Invalid value {value} for configuration {name}: must be in [{low}, {high}]"
            )


@dataclass(frozen=True)
class ValidString:
    """Accepts one of a fixed set of strings."""

    values: tuple[str, ...]
    case_sensitive: bool = False

    def __call__(self, name: str, value: Any) -> None:
        if value is None:
            return
        allowed = self.values if self.case_sensitive else tuple(v.lower() for v in self.values)
        probe = value if self.case_sensitive else str(value).lower()
        if probe not in allowed:
            raise ConfigException(
                f"Invalid value {value} for configuration {name}: "
                f"must be one of {', '.join(self.values)}"
            )


def non_empty_string(name: str, value: Any) -> None:
    """Rejects an empty or blank string."""
    if value is not None and not str(value).strip():
        raise ConfigException(f"Invalid value for configuration {name}: must not be empty")


TOPIC_NAME_MAX = 249
_TOPIC_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


def topic_name(name: str, value: Any) -> None:
    """Accepts a name Kafka takes for a topic: 1 to 249 of ASCII letters, digits, ``.``, ``_``
    and ``-``, and not ``.`` or ``..``. Kafka would refuse any other, and a source writing to it
    would fail on every record."""
    non_empty_string(name, value)
    if value is None:
        return
    topic = str(value)
    bad = sorted(set(topic) - _TOPIC_CHARS)
    if bad:
        raise ConfigException(
            f"Invalid value {topic!r} for configuration {name}: a topic name has only ASCII "
            f"letters, digits, '.', '_' and '-', not {''.join(bad)!r}"
        )
    if topic in (".", "..") or len(topic) > TOPIC_NAME_MAX:
        raise ConfigException(
            f"Invalid value {topic!r} for configuration {name}: a topic name is not . or .. "
            f"and has at most {TOPIC_NAME_MAX} characters"
        )


@dataclass(frozen=True)
class ConfigKey:
    """The definition of one key."""

    name: str
    type: Type
    default: Any = NO_DEFAULT
    importance: Importance = Importance.MEDIUM
    doc: str = ""
    validator: Validator | None = None
    recommended_values: tuple[Any, ...] = ()
    group: str = ""
    order_in_group: int = -1
    width: Width = Width.NONE
    display_name: str = ""
    dependents: tuple[str, ...] = ()
    recommender: Recommender | None = None

    @property
    def required(self) -> bool:
        return self.default is NO_DEFAULT


@dataclass
class ConfigValue:
    """The validation result of one key: its value, errors and recommended values."""

    name: str
    value: Any
    errors: list[str] = field(default_factory=list)
    recommended_values: list[Any] = field(default_factory=list)
    visible: bool = True


def missing_required(key: str) -> str:
    """The error of a required key with no default that a config leaves out, as Connect says
    it."""
    return f'Missing required configuration "{key}" which has no default value.'


@dataclass(frozen=True)
class ConfigDef:
    """An immutable set of key definitions; ``define`` returns a new ConfigDef."""

    keys: Mapping[str, ConfigKey] = field(default_factory=dict)

    def define(
        self,
        name: str,
        type: Type,
        default: Any = NO_DEFAULT,
        importance: Importance = Importance.MEDIUM,
        doc: str = "",
        validator: Validator | None = None,
        recommended_values: Sequence[Any] = (),
        *,
        group: str = "",
        order_in_group: int = -1,
        width: Width = Width.NONE,
        display_name: str = "",
        dependents: Sequence[str] = (),
        recommender: Recommender | None = None,
    ) -> ConfigDef:
        """A ConfigDef with one more key. A key without a default is required."""
        if name in self.keys:
            raise ConfigException(f"Configuration {name} is defined twice")
        key = ConfigKey(
            name,
            type,
            default,
            importance,
            doc,
            validator,
            tuple(recommended_values),
            group,
            order_in_group,
            width,
            display_name or name,
            tuple(dependents),
            recommender,
        )
        return replace(self, keys={**self.keys, name: key})

    def validate(self, config: Mapping[str, Any]) -> list[ConfigValue]:
        """One result per defined key, in definition order; errors never raise. Recommended
        values and visibility come from each key's recommender, given every parsed value."""
        parsed = {k.name: self._parsed_or_none(k, config) for k in self.keys.values()}
        return [self._validate_key(key, config, parsed) for key in self.keys.values()]

    def _parsed_or_none(self, key: ConfigKey, config: Mapping[str, Any]) -> Any:
        try:
            return self._parse_key(key, config)
        except ConfigException:
            return None

    def parse(self, config: Mapping[str, Any]) -> dict[str, Any]:
        """The parsed value of every defined key; ConfigException listing every problem."""
        results = self.validate(config)
        errors = [e for r in results for e in r.errors]
        if errors:
            raise ConfigException("; ".join(errors))
        parsed = {k.name: self._parse_key(k, config) for k in self.keys.values()}
        return parsed

    @staticmethod
    def _parse_key(key: ConfigKey, config: Mapping[str, Any]) -> Any:
        if key.name in config:
            return parse_value(key.name, key.type, config[key.name])
        return None if key.required else key.default

    def _validate_key(
        self, key: ConfigKey, config: Mapping[str, Any], parsed: Mapping[str, Any]
    ) -> ConfigValue:
        result = ConfigValue(key.name, config.get(key.name, None))
        result.recommended_values = list(key.recommended_values)
        if key.recommender is not None:
            try:
                result.recommended_values = list(key.recommender.valid_values(key.name, parsed))
                result.visible = key.recommender.visible(key.name, parsed)
            except Exception as exc:  # noqa: BLE001 - a recommender's failure is the key's error
                result.errors.append(f"{key.name}: the recommender failed: {exc}")
        if key.name not in config and key.required:
            result.errors.append(missing_required(key.name))
            return result
        try:
            value = self._parse_key(key, config)
            result.value = "[hidden]" if key.type is Type.PASSWORD and value else value
            if key.validator is not None:
                key.validator(key.name, value)
        except ConfigException as exc:
            result.errors.append(str(exc))
        return result
