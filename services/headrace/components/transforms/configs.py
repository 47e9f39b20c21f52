"""Reading a transformation's or predicate's keys: every problem named by its key.

``parse_config`` checks a plugin's string configuration against its ``ConfigDef`` and refuses
keys the definition does not name, rather than ignoring them as Connect does. Problems are raised
together as one ``InvalidConfig``, a ConfigException that keeps each (key, problem) pair so the
chain can name the full key, ``transforms.<alias>.<key>``, of every one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from headrace.components.java.regex import compile_java
from headrace.sdk.config import ConfigDef, ConfigKey, parse_value
from headrace.sdk.errors import ConfigException


class InvalidConfig(ConfigException):
    """Configuration problems, each as (key, problem); key None for the configuration as a whole."""

    def __init__(self, problems: Iterable[tuple[str | None, str]]) -> None:
        self.problems = tuple(problems)
        super().__init__("; ".join(_line(key, problem) for key, problem in self.problems))

    def under(self, prefix: str, whole: str) -> InvalidConfig:
        """The same problems with every key prefixed; ``whole`` names the configuration itself."""
        return InvalidConfig(
            (whole if key is None else prefix + key, problem) for key, problem in self.problems
        )


def _line(key: str | None, problem: str) -> str:
    return problem if key is None else f"{key}: {problem}"


def invalid(key: str | None, problem: str) -> InvalidConfig:
    """One problem with one key."""
    return InvalidConfig([(key, problem)])


def parse_config(definition: ConfigDef, config: Mapping[str, str], owner: str) -> dict[str, Any]:
    """The parsed value of every key ``definition`` names (defaults filled in).

    Raises InvalidConfig naming every key that is missing, malformed, refused by its validator,
    or not defined at all (``owner`` names the plugin in that message).
    """
    problems: list[tuple[str | None, str]] = []
    for name in config:
        if name not in definition.keys:
            known = ", ".join(sorted(definition.keys)) or "none"
            problems.append((name, f"{owner} has no such configuration key (its keys: {known})"))
    parsed: dict[str, Any] = {}
    for key in definition.keys.values():
        try:
            parsed[key.name] = _parse_key(key, config)
        except ConfigException as exc:
            problems.append((key.name, _without_name(str(exc), key.name)))
    if problems:
        raise InvalidConfig(problems)
    return parsed


def _parse_key(key: ConfigKey, config: Mapping[str, str]) -> Any:
    if key.name not in config:
        if key.required:
            raise ConfigException("is required and has no default value")
        value = key.default
    else:
        value = parse_value(key.name, key.type, config[key.name])
    if key.validator is not None:
        key.validator(key.name, value)
    return value


def _without_name(message: str, name: str) -> str:
    """``headrace.sdk.config`` names the key in its messages; the caller names it already."""
    return message.replace(f" for configuration {name}", "")


# Validators: called with (name, parsed value); the problem text leaves the name to the caller.


def non_empty_list(name: str, value: Any) -> None:
    """Connect's ``NonEmptyListValidator``."""
    if not value:
        raise ConfigException("must be a non-empty list")


def non_empty_string(name: str, value: Any) -> None:
    """Connect's ``NonEmptyString``: None (unset) passes, the empty string does not."""
    if value is not None and value == "":
        raise ConfigException("must be a non-empty string")


def not_null(name: str, value: Any) -> None:
    """Connect's ``NonNullValidator``."""
    if value is None:
        raise ConfigException("must be set")


def one_of(*allowed: str, case_sensitive: bool = True) -> Any:
    """Connect's ``ValidString.in`` (or ``CaseInsensitiveValidString.in``)."""

    def check(name: str, value: Any) -> None:
        if value is None:
            return
        probe = value if case_sensitive else str(value).upper()
        choices = allowed if case_sensitive else tuple(a.upper() for a in allowed)
        if probe not in choices:
            raise ConfigException(f"invalid value {value!r}: must be one of {', '.join(allowed)}")

    return check


def valid_regex(name: str, value: Any) -> None:
    """Connect's ``RegexValidator``, for the Java regular expressions headrace understands."""
    try:
        compile_java(value)
    except ValueError as exc:
        raise ConfigException(f"invalid regex {value!r}: {exc}") from None
