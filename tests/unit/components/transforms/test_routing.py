"""RegexRouter and Filter, with Java's regex and replacement syntax on Python's re."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from headrace.components.java.regex import compile_java, parse_replacement
from headrace.components.transforms import Transformation, new_transform
from headrace.sdk.errors import ConfigException
from headrace.sdk.records import SinkRecord, SourceRecord
from tests.unit.components.transforms.support import configured, refusal


def router(regex: str, replacement: str) -> Transformation:
    return configured("RegexRouter", {"regex": regex, "replacement": replacement})


def routed(regex: str, replacement: str, topic: str) -> str:
    result = router(regex, replacement).apply(SinkRecord(topic, 0, 0, None, None))
    assert result is not None
    return result.topic


@pytest.mark.parametrize(
    ("regex", "replacement", "topic", "expected"),
    [
        ("foo", "bar", "foo", "bar"),
        ("foo", "bar", "orig", "orig"),
        ("(.*)", "$1", "orig", "orig"),
        ("(.*)", "prefix-$1", "orig", "prefix-orig"),
        ("(.*)", "$1-suffix", "orig", "orig-suffix"),
        ("(.*)-(\\d\\d\\d\\d\\d\\d\\d\\d)", "$1", "index-20160117", "index"),
        ("foo", "bar", "food", "food"),  # the regex must match the whole topic
        ("(?<name>[a-z]+)-(\\d+)", "${name}_$2", "orders-7", "orders_7"),
        ("(a)(b)?", "[$2]", "a", "[]"),
        ("(a)", "$10", "a", "a0"),  # no group 10: $1 then the text 0, as in Java
        ("(.*)", "\\$1", "x", "$1"),
        ("(.*)", "$0$0", "x", "xx"),
        ("a*?", "X", "aaa", "Xaaa"),  # replaceFirst replaces the first match found, not the whole
        ("\\Qa.b\\E", "lit", "a.b", "lit"),
        ("\\Qa.b\\E", "lit", "axb", "axb"),
    ],
)
def test_regex_router_renames_matching_topics(
    regex: str, replacement: str, topic: str, expected: str
) -> None:
    assert routed(regex, replacement, topic) == expected


def test_regex_router_keeps_the_record_otherwise() -> None:
    record = SourceRecord({"f": 1}, {"o": 2}, "in-topic", "v", key="k", partition=3)
    result = router("in-(.*)", "out-$1").apply(record)
    assert result == SourceRecord({"f": 1}, {"o": 2}, "out-topic", "v", key="k", partition=3)
    unchanged = SourceRecord({}, {}, "other", "v")
    assert router("in-(.*)", "out-$1").apply(unchanged) is unchanged


@pytest.mark.parametrize(
    ("config", "key", "reason"),
    [
        ({"replacement": "x"}, "regex", "is required"),
        ({"regex": "x"}, "replacement", "is required"),
        ({"regex": "(", "replacement": "x"}, "regex", "invalid regex '\\('"),
        ({"regex": "[a-z&&[^b]]", "replacement": "x"}, "regex", "invalid regex"),
        ({"regex": "\\p{Alpha}", "replacement": "x"}, "regex", "invalid regex"),
        ({"regex": "(a)", "replacement": "$2"}, "replacement", "no group 2"),
        ({"regex": "(a)", "replacement": "${b}"}, "replacement", "no group named 'b'"),
        ({"regex": "(a)", "replacement": "$x"}, "replacement", "is not a group reference"),
        ({"regex": "(a)", "replacement": "${1}"}, "replacement", "is not a group reference"),
        ({"regex": "(a)", "replacement": "cost $"}, "replacement", "'\\$' at the end"),
        ({"regex": "(a)", "replacement": "x\\"}, "replacement", "trailing backslash"),
        ({"regex": "a", "replacement": "b", "topic": "c"}, "topic", "no such configuration key"),
    ],
)
def test_regex_router_refusals_name_the_key(config: dict[str, str], key: str, reason: str) -> None:
    assert refusal("RegexRouter", config, reason).startswith(f"{key}: ")


topics = st.text(st.characters(codec="utf-8", exclude_characters="\n"), min_size=1, max_size=20)


@given(topic=topics, prefix=st.text("abc-_.", max_size=5), suffix=st.text("xyz-_.", max_size=5))
def test_regex_router_with_a_match_all_regex_wraps_every_topic(
    topic: str, prefix: str, suffix: str
) -> None:
    assert routed("(.*)", f"{prefix}$1{suffix}", topic) == prefix + topic + suffix
    assert routed(".*", "fixed", topic) == "fixed"


@given(topic=topics)
def test_regex_router_identity_leaves_every_topic(topic: str) -> None:
    assert routed("(.*)", "$1", topic) == topic


def test_java_named_groups_and_backreferences_translate() -> None:
    pattern = compile_java("(?<word>[a-z]+)-\\k<word>(?<=x)?")
    assert pattern.fullmatch("ab-ab") and not pattern.fullmatch("ab-ba")
    assert compile_java("[(?<x>)]").fullmatch("<")  # inside a class it is no group
    assert compile_java("a\\z").fullmatch("a") and not compile_java("a\\z").search("a\n")
    assert compile_java("a\\Z").search("a\n")


def test_replacements_parse_into_text_and_groups() -> None:
    pattern = compile_java("(a)(b)(c)(d)(e)(f)(g)(h)(i)(j)(k)")
    assert parse_replacement("$11-$1\\\\", pattern).parts == (11, "-", 1, "\\")


# Filter


def test_filter_drops_every_record_and_takes_no_keys() -> None:
    transformation = new_transform("Filter")
    transformation.configure({})
    assert transformation.apply(SinkRecord("t", 0, 0, None, "v")) is None
    assert transformation.apply(SourceRecord({}, {}, "t", None)) is None
    with pytest.raises(ConfigException, match=r"^predicate: Filter has no such configuration key"):
        transformation.configure({"predicate": "p"})
