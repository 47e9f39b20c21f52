"""The transformation chain: Connect's keys, aliases in order, predicates with negate, and every
refusal named by its full key; the registry's class names and aliases; the predicates."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from headrace.components.transforms import (
    PREDICATES,
    TRANSFORMS,
    HasHeaderKey,
    InvalidConfig,
    RecordIsTombstone,
    TopicNameMatches,
    TransformChain,
    new_predicate,
    new_transform,
    parse_chain,
    transform_keys,
    unclaimed_keys,
)
from headrace.sdk.errors import ConfigException, DataError
from headrace.sdk.records import SourceRecord
from tests.unit.components.transforms.support import sink, source

PKG = "org.apache.kafka.connect.transforms."


def problems(config: dict[str, str]) -> dict[str | None, str]:
    with pytest.raises(InvalidConfig) as caught:
        parse_chain(config)
    return dict(caught.value.problems)


# The examples of Kafka's Connect documentation.


def test_docs_example_hoists_each_line_and_inserts_a_static_field() -> None:
    chain = parse_chain(
        {
            "transforms": "MakeMap, InsertSource",
            "transforms.MakeMap.type": PKG + "HoistField$Value",
            "transforms.MakeMap.field": "line",
            "transforms.InsertSource.type": PKG + "InsertField$Value",
            "transforms.InsertSource.static.field": "data_source",
            "transforms.InsertSource.static.value": "test-file-source",
        }
    )
    got = [
        chain.apply(source(line, topic="connect-test")) for line in ("foo", "bar", "hello world")
    ]
    assert [r.value for r in got if r is not None] == [
        {"line": "foo", "data_source": "test-file-source"},
        {"line": "bar", "data_source": "test-file-source"},
        {"line": "hello world", "data_source": "test-file-source"},
    ]


DOCS_PREDICATES = {
    "transforms": "Filter,Extract",
    "transforms.Filter.type": PKG + "Filter",
    "transforms.Filter.predicate": "IsFoo",
    "transforms.Extract.type": PKG + "ExtractField$Key",
    "transforms.Extract.field": "other_field",
    "transforms.Extract.predicate": "IsBar",
    "transforms.Extract.negate": "true",
    "predicates": "IsFoo,IsBar",
    "predicates.IsFoo.type": PKG + "predicates.TopicNameMatches",
    "predicates.IsFoo.pattern": "foo",
    "predicates.IsBar.type": PKG + "predicates.TopicNameMatches",
    "predicates.IsBar.pattern": "bar",
}


def test_docs_example_filters_foo_and_extracts_the_key_except_in_bar() -> None:
    chain = parse_chain(DOCS_PREDICATES)
    key = {"other_field": 42, "x": 1}

    def run(topic: str) -> SourceRecord | None:
        return chain.apply(source("v", topic=topic, key=key))

    assert run("foo") is None
    bar = run("bar")
    assert bar is not None and bar.key == key
    baz = run("baz")
    assert baz is not None and baz.key == 42
    food = run("food")  # the pattern matches whole topic names only
    assert food is not None and food.key == 42


def test_transforms_run_in_the_listed_order() -> None:
    config = {
        "transforms": "a,b",
        "transforms.a.type": "RegexRouter",
        "transforms.a.regex": "(.*)",
        "transforms.a.replacement": "$1-a",
        "transforms.b.type": "RegexRouter",
        "transforms.b.regex": "(.*)",
        "transforms.b.replacement": "$1-b",
    }
    chained = parse_chain(config).apply(source("v", topic="t"))
    assert chained is not None and chained.topic == "t-a-b"
    config["transforms"] = "b,a"
    chained = parse_chain(config).apply(source("v", topic="t"))
    assert chained is not None and chained.topic == "t-b-a"


def test_a_dropped_record_reaches_no_later_transform() -> None:
    chain = parse_chain(
        {
            "transforms": "drop,fail",
            "transforms.drop.type": "Filter",
            "transforms.fail.type": "TimestampRouter",  # would fail: no timestamp
        }
    )
    assert chain.apply(source("v")) is None


@pytest.mark.parametrize(
    ("negate", "topic", "applied"),
    [
        ("false", "match", True),
        ("false", "other", False),
        ("true", "match", False),
        ("true", "other", True),
        ("TRUE", "other", True),
    ],
)
def test_a_predicate_gates_its_transform_and_negate_inverts_it(
    negate: str, topic: str, applied: bool
) -> None:
    chain = parse_chain(
        {
            "transforms": "drop",
            "transforms.drop.type": "Filter",
            "transforms.drop.predicate": "p",
            "transforms.drop.negate": negate,
            "predicates": "p",
            "predicates.p.type": "TopicNameMatches",
            "predicates.p.pattern": "match",
        }
    )
    assert (chain.apply(source("v", topic=topic)) is None) == applied


def test_one_predicate_serves_many_transforms_and_unused_ones_are_still_checked() -> None:
    config = {
        "transforms": "a,b",
        "transforms.a.type": "InsertHeader",
        "transforms.a.header": "a",
        "transforms.a.value.literal": "1",
        "transforms.a.predicate": "tomb",
        "transforms.b.type": "InsertHeader",
        "transforms.b.header": "b",
        "transforms.b.value.literal": "2",
        "transforms.b.predicate": "tomb",
        "transforms.b.negate": "true",
        "predicates": "tomb,unused",
        "predicates.tomb.type": "RecordIsTombstone",
        "predicates.unused.type": "HasHeaderKey",
        "predicates.unused.name": "h",
    }
    chain = parse_chain(config)
    tombstone, record = chain.apply(sink(None)), chain.apply(sink("v"))
    assert tombstone is not None and tombstone.headers == (("a", "1"),)
    assert record is not None and record.headers == (("b", "2"),)
    assert problems({**config, "predicates.unused.name": ""}) == {
        "predicates.unused.name": "must be a non-empty string"
    }


def test_an_empty_configuration_is_an_empty_chain_that_changes_nothing() -> None:
    for config in ({}, {"transforms": ""}, {"transforms": " ", "predicates": ""}):
        chain = parse_chain(config)
        assert chain.is_empty and chain == TransformChain()
        record = sink("v")
        assert chain.apply(record) is record
    assert not parse_chain({"transforms": "f", "transforms.f.type": "Filter"}).is_empty


def test_data_errors_name_the_alias_and_the_transform() -> None:
    chain = parse_chain({"transforms": "route", "transforms.route.type": "TimestampRouter"})
    with pytest.raises(DataError, match=r"transform 'route' \(TimestampRouter\): .*timestamp"):
        chain.apply(source("v"))


def test_close_closes_every_stage() -> None:
    chain = parse_chain(DOCS_PREDICATES)
    chain.close()


# Refusals, each named by its full key.


def test_an_alias_listed_twice_is_refused() -> None:
    config = {"transforms": "f, f", "transforms.f.type": "Filter"}
    assert problems(config) == {"transforms": "lists the alias 'f' twice"}
    assert problems({"predicates": "p,p", "predicates.p.type": "RecordIsTombstone"}) == {
        "predicates": "lists the alias 'p' twice"
    }


def test_an_empty_alias_is_refused() -> None:
    assert problems({"transforms": "f,,", "transforms.f.type": "Filter"}) == {
        "transforms": "has an empty alias in 'f,,'"
    }


def test_a_transform_without_a_type_is_refused() -> None:
    got = problems({"transforms": "x", "transforms.x.field": "a"})
    assert list(got) == ["transforms.x.type"]
    assert "required" in got["transforms.x.type"]


@pytest.mark.parametrize(
    ("type_name", "reason"),
    [
        ("Foo", "unknown transform 'Foo'"),
        (PKG + "Foo", f"unknown transform '{PKG}Foo'"),
        (
            "InsertField",
            "transform 'InsertField' needs a variant: InsertField$Key or InsertField$Value",
        ),
        (PKG + "InsertField", "needs a variant: InsertField$Key or InsertField$Value"),
        ("TopicNameMatches", "'TopicNameMatches' is a predicate, not a transform"),
        ("ValueToKey$Value", "unknown transform 'ValueToKey$Value'"),
    ],
)
def test_an_unknown_transform_type_is_refused(type_name: str, reason: str) -> None:
    got = problems({"transforms": "x", "transforms.x.type": type_name})
    assert reason in got["transforms.x.type"]


def test_an_unknown_predicate_type_is_refused() -> None:
    got = problems({"predicates": "p", "predicates.p.type": "Filter"})
    assert got == {"predicates.p.type": "'Filter' is a transform, not a predicate"}
    got = problems({"predicates": "p"})
    assert list(got) == ["predicates.p.type"]


def test_a_key_the_transform_does_not_define_is_refused_not_ignored() -> None:
    got = problems(
        {
            "transforms": "mask",
            "transforms.mask.type": "MaskField$Value",
            "transforms.mask.fields": "a",
            "transforms.mask.feilds": "b",
        }
    )
    assert list(got) == ["transforms.mask.feilds"]
    assert "MaskField$Value has no such configuration key" in got["transforms.mask.feilds"]
    got = problems(
        {
            "predicates": "p",
            "predicates.p.type": "RecordIsTombstone",
            "predicates.p.pattern": "x",
        }
    )
    assert list(got) == ["predicates.p.pattern"]


def test_a_bad_value_is_named_by_its_full_key() -> None:
    got = problems(
        {
            "transforms": "mask",
            "transforms.mask.type": "MaskField$Value",
            "transforms.mask.fields": "",
        }
    )
    assert got == {"transforms.mask.fields": "must be a non-empty list"}
    with pytest.raises(ConfigException, match=r"^transforms\.mask\.fields: must be a non-empty"):
        parse_chain(
            {
                "transforms": "mask",
                "transforms.mask.type": "MaskField$Value",
                "transforms.mask.fields": "",
            }
        )


def test_a_missing_required_key_is_named_by_its_full_key() -> None:
    got = problems(
        {"transforms": "r", "transforms.r.type": "RegexRouter", "transforms.r.regex": "x"}
    )
    assert got == {"transforms.r.replacement": "is required and has no default value"}


def test_a_problem_with_the_whole_transform_is_named_by_its_alias() -> None:
    got = problems({"transforms": "ins", "transforms.ins.type": "InsertField$Value"})
    assert list(got) == ["transforms.ins"]
    assert "no field to insert" in got["transforms.ins"]


def test_a_predicate_referenced_but_not_declared_is_refused() -> None:
    got = problems(
        {"transforms": "f", "transforms.f.type": "Filter", "transforms.f.predicate": "IsFoo"}
    )
    assert got == {"transforms.f.predicate": "predicate 'IsFoo' is not declared in predicates"}


def test_negate_without_a_predicate_is_refused() -> None:
    got = problems(
        {"transforms": "f", "transforms.f.type": "Filter", "transforms.f.negate": "true"}
    )
    assert got == {
        "transforms.f.negate": "is set, but there is no transforms.f.predicate to negate"
    }


def test_negate_must_be_a_boolean() -> None:
    got = problems(
        {
            "transforms": "f",
            "transforms.f.type": "Filter",
            "transforms.f.predicate": "p",
            "transforms.f.negate": "yes",
            "predicates": "p",
            "predicates.p.type": "RecordIsTombstone",
        }
    )
    assert got == {"transforms.f.negate": "'yes' is not true or false"}


def test_every_problem_is_reported_at_once() -> None:
    got = problems(
        {
            "transforms": "a,b",
            "transforms.a.type": "Nope",
            "transforms.b.type": "Cast$Value",
            "transforms.b.spec": "x:nope",
            "predicates": "p",
            "predicates.p.type": "TopicNameMatches",
            "predicates.p.pattern": "(",
        }
    )
    assert set(got) == {"transforms.a.type", "transforms.b.spec", "predicates.p.pattern"}


def test_an_alias_prefix_of_another_keeps_its_own_keys() -> None:
    chain = parse_chain(
        {
            "transforms": "a,a.b",
            "transforms.a.type": "InsertHeader",
            "transforms.a.header": "h1",
            "transforms.a.value.literal": "1",
            "transforms.a.b.type": "InsertHeader",
            "transforms.a.b.header": "h2",
            "transforms.a.b.value.literal": "2",
        }
    )
    record = chain.apply(sink("v"))
    assert record is not None and record.headers == (("h1", "1"), ("h2", "2"))


# Which keys the chain reads.


def test_transform_keys_are_the_chain_keys_of_listed_aliases() -> None:
    config = {
        **DOCS_PREDICATES,
        "predicates.q.pattern": "x",
        "transforms.gone.type": "Filter",
        "topic": "t",
    }
    assert transform_keys(config) == set(DOCS_PREDICATES)
    assert unclaimed_keys(config) == {"predicates.q.pattern", "transforms.gone.type"}
    assert transform_keys({"topic": "t"}) == set()


# The registry.


@pytest.mark.parametrize(
    "name",
    [
        "Cast",
        "ExtractField",
        "Flatten",
        "HeaderFrom",
        "HoistField",
        "InsertField",
        "MaskField",
        "ReplaceField",
        "TimestampConverter",
    ],
)
def test_sided_transforms_have_key_and_value_variants_by_class_name_and_alias(name: str) -> None:
    for side in ("Key", "Value"):
        assert f"{name}${side}" in TRANSFORMS
        assert f"{PKG}{name}${side}" in TRANSFORMS
        assert new_transform(f"{PKG}{name}${side}").name == f"{name}${side}"  # type: ignore[attr-defined]
    assert name not in TRANSFORMS


@pytest.mark.parametrize(
    "name",
    ["DropHeaders", "Filter", "InsertHeader", "RegexRouter", "TimestampRouter", "ValueToKey"],
)
def test_unsided_transforms_resolve_by_class_name_and_alias(name: str) -> None:
    assert type(new_transform(name)) is type(new_transform(PKG + name))


@pytest.mark.parametrize("name", ["TopicNameMatches", "HasHeaderKey", "RecordIsTombstone"])
def test_predicates_resolve_by_class_name_and_alias(name: str) -> None:
    assert name in PREDICATES and f"{PKG}predicates.{name}" in PREDICATES
    assert type(new_predicate(name)) is type(new_predicate(f"{PKG}predicates.{name}"))


def test_unknown_names_raise_lookup_error() -> None:
    with pytest.raises(LookupError):
        new_transform("ValueToKey$Value")  # ValueToKey has no sides
    with pytest.raises(LookupError):
        new_predicate("TopicNameMatches$Value")


# The predicates.


def test_topic_name_matches_the_whole_topic_with_a_java_regex() -> None:
    predicate = TopicNameMatches()
    predicate.configure({"pattern": "my-prefix-.*"})
    assert predicate.test(source("v", topic="my-prefix-orders"))
    assert not predicate.test(source("v", topic="other-my-prefix-orders"))
    predicate.configure({"pattern": "(?<env>prod|dev)-\\k<env>"})
    assert predicate.test(sink("v", topic="prod-prod"))
    assert not predicate.test(sink("v", topic="prod-dev"))


@pytest.mark.parametrize(
    ("config", "reason"),
    [
        ({}, "pattern: is required"),
        ({"pattern": ""}, "pattern: must be a non-empty string"),
        ({"pattern": "[a-z"}, "pattern: invalid regex"),
        ({"pattern": "\\p{Alpha}+"}, "pattern: invalid regex"),
        ({"pattern": ".*", "regex": "x"}, "regex: TopicNameMatches has no such configuration key"),
    ],
)
def test_topic_name_matches_refusals_name_the_key(config: dict[str, str], reason: str) -> None:
    with pytest.raises(ConfigException, match=reason):
        TopicNameMatches().configure(config)


def test_has_header_key_looks_for_any_header_of_that_name() -> None:
    predicate = HasHeaderKey()
    predicate.configure({"name": "trace"})
    assert predicate.test(sink("v", headers=(("a", b"1"), ("trace", None))))
    assert not predicate.test(sink("v", headers=(("Trace", b"1"),)))
    assert not predicate.test(source("v"))
    with pytest.raises(ConfigException, match="name: must be a non-empty string"):
        predicate.configure({"name": ""})
    with pytest.raises(ConfigException, match="name: is required"):
        predicate.configure({})


def test_record_is_tombstone_means_a_null_value() -> None:
    predicate = RecordIsTombstone()
    predicate.configure({})
    assert predicate.test(sink(None)) and predicate.test(source(None, key="k"))
    assert not predicate.test(sink(b"")) and not predicate.test(sink({}))
    with pytest.raises(ConfigException, match="pattern: RecordIsTombstone has no such"):
        predicate.configure({"pattern": "x"})


@given(
    topics=st.lists(st.text(min_size=1, max_size=10), min_size=1, max_size=5),
    negate=st.booleans(),
)
def test_negate_splits_records_into_complementary_sets(topics: list[str], negate: bool) -> None:
    def chain(negated: bool) -> TransformChain:
        return parse_chain(
            {
                "transforms": "drop",
                "transforms.drop.type": "Filter",
                "transforms.drop.predicate": "p",
                "transforms.drop.negate": str(negated).lower(),
                "predicates": "p",
                "predicates.p.type": "TopicNameMatches",
                "predicates.p.pattern": "[a-m].*",
            }
        )

    plain, negated = chain(negate), chain(not negate)
    for topic in topics:
        record = source("v", topic=topic)
        assert (plain.apply(record) is None) != (negated.apply(record) is None)
