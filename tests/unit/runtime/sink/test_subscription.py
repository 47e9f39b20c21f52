"""``topics.regex`` takes the topics Connect's would: a Java regex, matched against the whole
topic name (aiokafka's own pattern would take a prefix), never an internal topic, and within a
bound on time."""

from __future__ import annotations

import re
from itertools import count

import pytest
from hypothesis import given
from hypothesis import strategies as st

from headrace.components.java.regex import compile_java
from headrace.runtime.sink.records import TopicMatcher, subscription, topics_pattern
from headrace.sdk.errors import ConfigException

TOPIC_CHARS = "abcxyzABC019._-"
# Kafka's internal topics ("__...") no regex takes; they have a test of their own.
topic_names = st.text(TOPIC_CHARS, max_size=12).filter(lambda t: not t.startswith("__"))
# Any quantifier, or any group (whose "(?" reads as one): only flat bodies are quantified.
_QUANTIFIED = re.compile(r"[*+?]|\{\d")


def subscribes(regex: str, topic: str) -> bool:
    """Whether a consumer subscribed with ``regex`` takes ``topic``, as its subscription asks."""
    return TopicMatcher(regex, "hr").match(topic)


@pytest.mark.parametrize(
    ("regex", "taken", "left"),
    [
        ("orders", ["orders"], ["orders-archive", "orders.v2", "old-orders"]),
        ("orders-.*", ["orders-", "orders-eu"], ["orders", "eu-orders-1"]),
        ("orders-[0-9]+", ["orders-7", "orders-42"], ["orders-7-archive", "orders-"]),
        ("a|ab", ["a", "ab"], ["abc", "b"]),  # the alternation is anchored as a whole
        ("orders|payments", ["orders", "payments"], ["orders-x", "payments-x"]),
        ("orders$", ["orders"], ["orders-x"]),
        ("orders\\z", ["orders"], ["orders-x"]),
        ("orders\\Z", ["orders"], ["orders-x"]),
        ("(?i)orders", ["orders", "ORDERS"], ["ORDERS-x"]),
        ("(?i)(?s)or.ers", ["OR.ERS"], ["OR.ERS-x"]),
        ("\\Qt.1\\E", ["t.1"], ["tx1", "t.1.2"]),
        ("\\Qt.1", ["t.1"], ["t.1.2"]),  # quoting runs to the end without \E, as in Java
        ("(?<env>[a-z]+)-\\k<env>", ["eu-eu"], ["eu-us", "eu-eu-1"]),
        ("(?>orders|order)s", ["orderss"], ["orders", "orderss-x"]),
        ("(?x) orders \\. [0-9]+  # versioned", ["orders.1"], ["orders.1x", "orders1"]),
        ("(?x)# a comment first\n(?i) orders", ["ORDERS"], ["ORDERS-x"]),
    ],
)
def test_a_regex_takes_whole_topic_names_only(
    regex: str, taken: list[str], left: list[str]
) -> None:
    assert [t for t in taken + left if subscribes(regex, t)] == taken


@pytest.mark.parametrize(
    "regex",
    [
        "(",
        "orders)",
        "[a-",
        "orders\\",
        "\\p{Alpha}+",  # Java's classes Python has no equivalent for
        "[a-z&&[^b]]",
        "orders(?i)-x",  # a flag midway: Java applies it from there on, Python cannot
    ],
)
def test_a_regex_python_cannot_read_as_java_does_is_refused_by_name(regex: str) -> None:
    with pytest.raises(ConfigException, match=r"^topics\.regex: invalid regular expression"):
        topics_pattern(regex)
    with pytest.raises(ConfigException, match=r"^topics\.regex: "):
        subscription({"topics.regex": regex})


def test_the_subscription_hands_back_the_java_regex_trimmed_as_connect_trims_it() -> None:
    assert subscription({"topics.regex": "  (?<env>eu|us)-orders  "}) == (
        [],
        "(?<env>eu|us)-orders",
    )


def atoms() -> st.SearchStrategy[str]:
    literal = st.sampled_from([*"abcxyz019-_", "\\.", "\\Q.\\E"])
    classes = st.sampled_from([".", "[a-c]", "[^x]", "[0-9]", "\\d", "\\w", "[._-]"])
    return literal | classes


def regexes() -> st.SearchStrategy[str]:
    """Java regexes over the characters topic names use: literals, classes, groups (named or
    not), quantifiers and alternations, possibly under a leading flag."""

    def extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        quantifier = st.sampled_from(["*", "+", "?", "{1,2}", "*?", "+?"])
        return (
            st.lists(inner, min_size=1, max_size=4).map("".join)
            | st.tuples(inner, inner).map("|".join)
            | inner.map(lambda r: f"({r})")
            | inner.map(lambda r: f"(?:{r})")
            | inner.map(lambda r: f"(?<g>{r})")
            # A quantified group holds no quantifier of its own: nested ones backtrack
            # exponentially on a name they do not match, and the test would never end.
            | st.tuples(
                inner.filter(lambda r: not _QUANTIFIED.search(r)).map(lambda r: f"(?:{r})"),
                quantifier,
            ).map("".join)
        )

    body = st.recursive(atoms(), extend, max_leaves=8).map(_name_groups_apart)
    return st.tuples(st.sampled_from(["", "(?i)", "(?s)", "(?i)(?s)"]), body).map("".join)


def _name_groups_apart(regex: str) -> str:
    """Java, like Python, refuses two groups of one name."""
    numbers = count()
    return re.sub(r"\(\?<g>", lambda _: f"(?<g{next(numbers)}>", regex)


@given(regexes(), topic_names)
def test_the_subscription_takes_a_topic_exactly_when_the_whole_name_matches(
    regex: str, topic: str
) -> None:
    assert subscribes(regex, topic) == (compile_java(regex).fullmatch(topic) is not None)


@given(st.data(), regexes(), topic_names.filter(bool))
def test_a_topic_the_regex_matches_is_taken_and_a_longer_one_only_if_it_matches_too(
    data: st.DataObject, regex: str, suffix: str
) -> None:
    java = compile_java(regex)
    # Short, as topic_names are: a long name makes a regex's backtracking, not its meaning, the
    # test.
    matching = st.from_regex(java.pattern, fullmatch=True, alphabet=TOPIC_CHARS)
    topic = data.draw(matching.filter(lambda t: len(t) <= 24 and not t.startswith("__")))
    assert subscribes(regex, topic)
    assert subscribes(regex, topic + suffix) == (java.fullmatch(topic + suffix) is not None)


@given(
    st.text(TOPIC_CHARS, min_size=1, max_size=249).filter(lambda t: not t.startswith("__")),
    topic_names.filter(bool),
)
def test_a_quoted_topic_name_takes_that_topic_alone(name: str, suffix: str) -> None:
    quoted = f"\\Q{name}\\E"
    assert subscribes(quoted, name)
    assert not subscribes(quoted, name + suffix)
    assert not subscribes(quoted, name[:-1])


@pytest.mark.parametrize(
    "topic",
    [
        "hr-configs",
        "hr-requests",
        "hr-offsets",
        "hr-status",
        "hr-assignments",
        "hr-automation-answers-changelog",
        "__consumer_offsets",
        "__transaction_state",
    ],
)
def test_every_regex_leaves_the_internal_topics_out(topic: str) -> None:
    assert not subscribes(".*", topic) and not subscribes("hr-.*", topic)
    assert subscribes(".*", "hr-configs-copy") and subscribes(".*", "other-configs")


def test_a_regex_that_backtracks_without_end_takes_nothing_and_says_why() -> None:
    matcher = TopicMatcher("(a|a)+$", "hr")
    assert matcher.match("a" * 40 + "-") is False  # given up after the bound, not hours
    assert matcher.failure is not None and "topics.regex: the regex '(a|a)+$' took" in (
        matcher.failure
    )
    assert matcher.match("aaaa") is False  # failed: it takes nothing more


def test_the_pattern_subscription_is_still_aiokafka_s_to_take() -> None:
    """The sink subscribes with a matcher through aiokafka's two calls behind its public
    ``subscribe(pattern=...)``: an upgrade that moves them fails here, not in production."""
    from aiokafka.consumer.subscription_state import SubscriptionState

    assert callable(SubscriptionState.subscribe_pattern)
    assert "pattern" in SubscriptionState.subscribe_pattern.__code__.co_varnames
