"""Which plugin versions a config selects (KIP-891): ``VersionSpec`` as Connect 4.1 reads a
``.plugin.version`` key, and the component versions a connector config resolves to, among the
built-ins and the test plugins on a plugin path."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from headrace.components import versions
from headrace.core.model.errors import PluginError
from headrace.core.model.plugins import PluginCatalog, VersionSpec, builtin_version, version_key
from headrace.isolation.plugins import discover

TEST_PLUGINS = Path(__file__).parents[2] / "plugins"
KEY = "transforms.up.plugin.version"


@pytest.fixture(scope="module")
def catalog() -> PluginCatalog:
    return discover([TEST_PLUGINS])


@pytest.mark.parametrize(
    ("spec", "allowed", "refused"),
    [
        ("", ["0.1", "9.9.9"], []),
        ("latest", ["0.1", "9.9.9"], []),
        ("1.2.0", ["1.2.0"], ["1.2", "1.2.1", "1.10.0"]),
        ("[1.2.0]", ["1.2.0"], ["1.2.1"]),
        ("[1.0,2.0)", ["1.0", "1.9.9", "1.10"], ["0.9", "2.0", "2.1"]),
        ("(1.0,2.0]", ["1.0.1", "2.0"], ["1.0", "2.0.1"]),
        ("[1.5,)", ["1.5", "10.0"], ["1.4.9"]),
        ("(,1.0]", ["0.1", "1.0"], ["1.0.1"]),
        ("[1.0,1.2],[1.4,)", ["1.1", "1.4", "3"], ["1.3"]),
    ],
)
def test_a_version_spec_allows_what_connect_allows(
    spec: str, allowed: list[str], refused: list[str]
) -> None:
    parsed = VersionSpec.parse(spec, KEY)
    assert [v for v in allowed if parsed.allows(v)] == allowed
    assert [v for v in refused if parsed.allows(v)] == []


@pytest.mark.parametrize(
    ("spec", "reason"),
    [
        ("[1.0,2.0", "is not a version range"),
        ("1.0,2.0", "is neither a version nor a version range"),
        ("[2.0,1.0]", "the lower bound is above the upper one"),
        ("[,1.0]", "an open bound takes ( or )"),
        ("(1.0)", "a single version is written [1.0]"),
        ("[1.0,2.0],", "ends with a comma"),
        ("[1,2,3]", "a range has two bounds"),
    ],
)
def test_a_bad_version_spec_names_the_key_and_the_problem(spec: str, reason: str) -> None:
    with pytest.raises(PluginError, match=rf"^{re.escape(KEY)}: .*{re.escape(reason)}"):
        VersionSpec.parse(spec, KEY)


version_lists = st.lists(st.integers(0, 12), min_size=1, max_size=3).map(
    lambda parts: ".".join(map(str, parts))
)


@given(low=version_lists, high=version_lists, at=version_lists)
def test_a_half_open_range_is_low_up_to_not_including_high(low: str, high: str, at: str) -> None:
    if version_key(low) > version_key(high):
        low, high = high, low
    spec = VersionSpec.parse(f"[{low},{high})", KEY)
    assert spec.allows(at) == (version_key(low) <= version_key(at) < version_key(high))


@given(st.text())
@example("¹").via("a superscript digit: a digit to str.isdigit, not to int")
@example("1.²")
@example("[1.0,²)")
def test_any_text_orders_as_a_version_or_is_refused_naming_the_key(text: str) -> None:
    """What a user writes never fails another way: "¹" is a digit to str.isdigit, not to int."""
    version_key(text)
    try:
        VersionSpec.parse(text, KEY)
    except PluginError as exc:
        assert str(exc).startswith(f"{KEY}: ")


def test_a_connector_version_range_picks_the_latest_it_allows(catalog: PluginCatalog) -> None:
    assert catalog.resolve("RecordingSink", "[1.0,2.0)").version == "1.0.0"
    assert catalog.resolve("RecordingSink", "[1.0,)").version == "2.0.0"
    with pytest.raises(PluginError, match=r"connector\.plugin\.version: .* has no version '3\.0'"):
        catalog.resolve("RecordingSink", "3.0")


def test_a_component_is_not_a_connector(catalog: PluginCatalog) -> None:
    with pytest.raises(PluginError, match=r"connector\.class: no plugin named 'UpperCase'"):
        catalog.resolve("UpperCase")


def chain(**more: str) -> dict[str, str]:
    return {"transforms": "up", "transforms.up.type": "UpperCase", **more}


def test_a_component_runs_its_latest_version_unless_pinned(catalog: PluginCatalog) -> None:
    latest = versions.resolve(chain(), catalog)
    assert [(c.class_name, c.version) for c in latest.components] == [
        ("upper_transform.UpperCase", "2.0.0")
    ]
    pinned = versions.resolve(chain(**{KEY: "1.0.0"}), catalog)
    assert [c.version for c in pinned.components] == ["1.0.0"]
    ranged = versions.resolve(chain(**{KEY: "[1.0,2.0)"}), catalog)
    assert [c.version for c in ranged.components] == ["1.0.0"]
    assert not (latest.problems or pinned.problems or ranged.problems)


def test_a_version_not_installed_is_refused_with_those_that_are(catalog: PluginCatalog) -> None:
    found = versions.resolve(chain(**{KEY: "3.0.0"}), catalog)
    assert found.components == ()
    assert found.problems == (
        (
            KEY,
            f"{KEY}: transformation UpperCase has no version '3.0.0' (installed: 1.0.0, 2.0.0)",
        ),
    )


def test_a_builtin_is_pinned_by_headrace_version(catalog: PluginCatalog) -> None:
    config = {
        "transforms": "c",
        "transforms.c.type": "Cast$Value",
        "transforms.c.plugin.version": builtin_version(),
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.plugin.version": f"[{builtin_version()}]",
    }
    assert versions.resolve(config, catalog) == versions.Resolution()
    wrong = versions.resolve({**config, "transforms.c.plugin.version": "0.0.1"}, catalog)
    assert [key for key, _ in wrong.problems] == ["transforms.c.plugin.version"]
    assert f"(installed: {builtin_version()})" in wrong.problems[0][1]


def test_a_converter_from_the_plugin_path_is_a_component(catalog: PluginCatalog) -> None:
    found = versions.resolve({"value.converter": "ReversedStringConverter"}, catalog)
    assert [(c.type, c.version) for c in found.components] == [("converter", "1.0.0")]


def test_one_class_in_two_versions_is_refused(catalog: PluginCatalog) -> None:
    config = {
        "transforms": "a,b",
        "transforms.a.type": "UpperCase",
        "transforms.a.plugin.version": "1.0.0",
        "transforms.b.type": "upper_transform.UpperCase",
    }
    found = versions.resolve(config, catalog)
    assert [key for key, _ in found.problems] == ["transforms.b.plugin.version"]
    assert "a connector uses one version of a class" in found.problems[0][1]


def test_a_version_key_beside_no_component_is_refused(catalog: PluginCatalog) -> None:
    found = versions.resolve({"header.converter.plugin.version": "1.0"}, catalog)
    assert found.problems == (
        (
            "header.converter.plugin.version",
            "header.converter.plugin.version: sets the version of no component: "
            "header.converter is not set",
        ),
    )


def test_a_pin_on_a_name_nothing_answers_to_says_so(catalog: PluginCatalog) -> None:
    found = versions.resolve(
        {"predicates": "p", "predicates.p.type": "Nope", "predicates.p.plugin.version": "1"},
        catalog,
    )
    assert found.problems == (
        (
            "predicates.p.plugin.version",
            "predicates.p.plugin.version: no predicate named 'Nope' is installed, in any version",
        ),
    )
    # Unpinned, the name is left to the chain's own check, which lists what exists.
    assert versions.resolve({"predicates": "p", "predicates.p.type": "Nope"}, catalog) == (
        versions.Resolution()
    )


def test_the_plugin_list_names_every_builtin_component_at_headrace_version() -> None:
    listed = versions.listed()
    kinds = {kind for _, kind, _ in listed}
    assert kinds == {"converter", "header_converter", "transformation", "predicate"}
    assert {version for _, _, version in listed} == {builtin_version()}
    assert (
        "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
        "predicate",
        builtin_version(),
    ) in listed
