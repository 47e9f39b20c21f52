"""ConfigDef: parsing, per-key validation results, the shape of Connect's validate call."""

from __future__ import annotations

import pytest

from headrace.sdk import (
    ConfigDef,
    ConfigException,
    ConfigType,
    ConfigValue,
    Importance,
    Range,
    ValidString,
    non_empty_string,
)

CONFIG = (
    ConfigDef()
    .define("topic", ConfigType.STRING, importance=Importance.HIGH, validator=non_empty_string)
    .define("batch.size", ConfigType.INT, 100, validator=Range(1, 1000))
    .define("ratio", ConfigType.DOUBLE, 0.5)
    .define("enabled", ConfigType.BOOLEAN, True)
    .define("fields", ConfigType.LIST, [])
    .define(
        "mode",
        ConfigType.STRING,
        "fast",
        validator=ValidString(("fast", "safe")),
        recommended_values=("fast", "safe"),
    )
    .define("secret", ConfigType.PASSWORD, None)
)


def by_name(config: dict[str, str]) -> dict[str, ConfigValue]:
    return {r.name: r for r in CONFIG.validate(config)}


def test_parse_converts_each_type_and_fills_defaults() -> None:
    parsed = CONFIG.parse(
        {"topic": "t", "batch.size": " 7 ", "enabled": "FALSE", "fields": "a, b,,c", "x": "y"}
    )
    assert parsed == {
        "topic": "t",
        "batch.size": 7,
        "ratio": 0.5,
        "enabled": False,
        "fields": ["a", "b", "c"],
        "mode": "fast",
        "secret": None,
    }


def test_a_missing_required_key_is_reported_with_connects_message() -> None:
    results = by_name({})
    assert results["topic"].errors == [
        'Missing required configuration "topic" which has no default value.'
    ]
    assert all(not r.errors for n, r in results.items() if n != "topic")


def test_validate_reports_every_bad_key_without_raising() -> None:
    results = by_name(
        {"topic": " ", "batch.size": "0", "ratio": "x", "enabled": "yes", "mode": "slow"}
    )
    bad = {n for n, r in results.items() if r.errors}
    assert bad == {"topic", "batch.size", "ratio", "enabled", "mode"}
    assert "must be in [1, 1000]" in results["batch.size"].errors[0]
    assert "must be one of fast, safe" in results["mode"].errors[0]


def test_results_carry_recommended_values_and_hide_passwords() -> None:
    results = by_name({"topic": "t", "secret": "hunter2"})
    assert results["mode"].recommended_values == ["fast", "safe"]
    assert results["secret"].value == "[hidden]"


def test_parse_raises_one_error_listing_all_problems() -> None:
    with pytest.raises(ConfigException) as info:
        CONFIG.parse({"batch.size": "-1"})
    assert "topic" in str(info.value) and "batch.size" in str(info.value)


def test_define_is_immutable_and_rejects_duplicates() -> None:
    base = ConfigDef()
    extended = base.define("a", ConfigType.STRING, "x")
    assert "a" not in base.keys and "a" in extended.keys
    with pytest.raises(ConfigException):
        extended.define("a", ConfigType.STRING)
