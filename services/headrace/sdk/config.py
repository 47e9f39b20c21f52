"""``ConfigDef``: what a plugin's configuration keys are, and per-key validation results.

A minimal take on Connect's ``ConfigDef``: each key has a type, a default (or none, which makes it
required), an importance, a doc string, an optional validator and recommended values.
``validate`` answers, per defined key, the parsed value, its errors and recommended values, the
shape of Connect's validate call; keys the definition does not know are left to the framework.

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
from typing import Any

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
    ) -> ConfigDef:
        """A ConfigDef with one more key. A key without a default is required."""
        if name in self.keys:
            raise ConfigException(f"Configuration {name} is defined twice")
        key = ConfigKey(name, type, default, importance, doc, validator, tuple(recommended_values))
        return replace(self, keys={**self.keys, name: key})

    def validate(self, config: Mapping[str, Any]) -> list[ConfigValue]:
        """One result per defined key, in definition order; errors never raise."""
        return [self._validate_key(key, config) for key in self.keys.values()]

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

    def _validate_key(self, key: ConfigKey, config: Mapping[str, Any]) -> ConfigValue:
        result = ConfigValue(key.name, config.get(key.name, None))
        result.recommended_values = list(key.recommended_values)
        if key.name not in config and key.required:
            result.errors.append(
                f'Missing required configuration "{key.name}" which has no default value.'
            )
            return result
        try:
            value = self._parse_key(key, config)
            result.value = "[hidden]" if key.type is Type.PASSWORD and value else value
            if key.validator is not None:
                key.validator(key.name, value)
        except ConfigException as exc:
            result.errors.append(str(exc))
        return result
