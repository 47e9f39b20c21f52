"""The ``headrace`` command without a service: reading connector files, patch arguments, offsets
bodies and durations, and the parser's answers to input it must refuse before calling anyone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from headrace.cli.inputs import (
    ConnectorSpec,
    InputError,
    config_body,
    connector_specs,
    duration,
    no_duplicates,
    offsets_body,
    pairs,
    patch_changes,
)
from headrace.cli.main import cli
from headrace.cli.sources import files_of

# An address nothing listens on: a test that reached the network would fail loudly.
NOWHERE = "127.0.0.1:1"


def test_a_connect_create_body_and_a_bare_put_config_read_alike() -> None:
    body = {"name": "lake", "config": {"connector.class": "Lake", "tasks.max": 2}}
    bare = {"name": "lake", "connector.class": "Lake", "tasks.max": "2"}
    expected = {"connector.class": "Lake", "tasks.max": "2", "name": "lake"}
    assert connector_specs(json.dumps(body), "a.json") == [
        ConnectorSpec("lake", expected, "a.json")
    ]
    assert connector_specs(json.dumps(bare), "b.json") == [
        ConnectorSpec("lake", expected, "b.json")
    ]


def test_values_are_text_as_connect_takes_them_and_initial_state_is_kept() -> None:
    body = {
        "name": " gen ",  # Connect trims the name
        "config": {"connector.class": "Gen", "enabled": True, "ratio": 0.5},
        "initial_state": "paused",
    }
    [spec] = connector_specs(json.dumps(body), "gen.json")
    assert spec.name == "gen"
    assert spec.config == {
        "connector.class": "Gen",
        "enabled": "true",
        "ratio": "0.5",
        "name": "gen",
    }
    assert spec.initial_state == "PAUSED"


def test_a_file_may_hold_an_array_of_bodies() -> None:
    text = json.dumps([{"name": "a", "config": {}}, {"name": "b", "connector.class": "Gen"}])
    assert [s.name for s in connector_specs(text, "many.json")] == ["a", "b"]


BAD_FILES = [
    ("{not json", "not valid JSON"),
    ('"a string"', "expected"),
    ('{"config": {"connector.class": "Gen"}}', "name is missing"),
    ('{"connector.class": "Gen"}', "name is missing"),
    ('{"name": "a", "config": {"name": "b"}}', "'b' is not the connector's name 'a'"),
    ('{"name": "a", "config": {}, "confg": {}}', "unknown key(s) confg"),
    ('{"name": "a", "config": {"nested": {"x": 1}}}', "'nested' must be a string, not dict"),
    ('{"name": "a", "config": {"gone": null}}', "'gone' must be a string, not null"),
    ('{"name": "a", "config": {}, "initial_state": "ASLEEP"}', "initial_state 'ASLEEP'"),
    ('[{"name": "a", "config": {}}, 7]', "f.json[1]"),
]


@pytest.mark.parametrize(("text", "said"), BAD_FILES)
def test_a_bad_file_is_refused_naming_the_file_and_the_fault(text: str, said: str) -> None:
    with pytest.raises(InputError) as info:
        connector_specs(text, "f.json")
    assert "f.json" in str(info.value)
    assert said in str(info.value)


def test_one_connector_declared_twice_is_refused() -> None:
    specs = [ConnectorSpec("a", {}, "x.json"), ConnectorSpec("a", {}, "y.json")]
    with pytest.raises(InputError, match=r"'a' is declared in x.json and y.json"):
        no_duplicates(specs)


def test_a_config_body_may_go_without_a_name() -> None:
    assert config_body('{"connector.class": "Gen"}', "v.json") == (
        None,
        {"connector.class": "Gen"},
        "",
    )


def test_pairs_keep_everything_after_the_first_equals_sign() -> None:
    assert pairs(["a=b=c", "empty=", " k =v"], "--set") == {"a": "b=c", "empty": "", "k": "v"}
    for bad in ("novalue", "=v"):
        with pytest.raises(InputError, match="--set takes key=value"):
            pairs([bad], "--set")


def test_patch_changes_merge_set_unset_and_a_json_merge_patch() -> None:
    changes = patch_changes(["topic=t2"], ["label"], '{"tasks.max": 3, "x": null}')
    assert changes == {"tasks.max": "3", "x": None, "topic": "t2", "label": None}


@pytest.mark.parametrize(
    ("sets", "unsets", "merge", "said"),
    [
        ([], [], None, "nothing to change"),
        (["k=v"], ["k"], None, "'k' is changed two ways, by --set and --unset"),
        ([], [], '{"k": ', "-p: not valid JSON"),
        ([], [], "[1]", "-p: expected a JSON object"),
        ([], [], '{"k": {"deep": 1}}', "'k' must be a string"),
    ],
)
def test_patch_changes_refuse_what_is_ambiguous_or_malformed(
    sets: list[str], unsets: list[str], merge: str | None, said: str
) -> None:
    with pytest.raises(InputError) as info:
        patch_changes(sets, unsets, merge)
    assert said in str(info.value)


def test_an_offsets_body_is_connects_patch_body() -> None:
    text = json.dumps(
        {
            "offsets": [
                {"partition": {"task": 0}, "offset": {"next": 9}},
                {"partition": {"task": 1}, "offset": None},
            ]
        }
    )
    assert offsets_body(text, "o.json") == [
        {"partition": {"task": 0}, "offset": {"next": 9}},
        {"partition": {"task": 1}, "offset": None},
    ]
    for bad, said in [
        ("[]", "expected"),
        ('{"offsets": [{"offset": {}}]}', "offsets[0] needs a partition"),
        ('{"offsets": [{"partition": {}, "offset": 5}]}', "offsets[0].offset must be"),
    ]:
        with pytest.raises(InputError) as info:
            offsets_body(bad, "o.json")
        assert said in str(info.value)


def test_durations_read_as_kubectl_writes_them() -> None:
    assert [duration(t) for t in ("60", "60s", "1.5m", "500ms", "1h")] == [
        60.0,
        60.0,
        90.0,
        0.5,
        3600.0,
    ]
    with pytest.raises(InputError, match="not a duration"):
        duration("soon")


def test_a_folder_means_its_json_files_in_name_order(tmp_path: Path) -> None:
    for name in ("b.json", "a.json", "notes.txt"):
        (tmp_path / name).write_text("{}")
    assert files_of(str(tmp_path)) == [str(tmp_path / "a.json"), str(tmp_path / "b.json")]
    assert files_of("-") == ["-"]
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InputError, match=r"no \*\.json files"):
        files_of(str(empty))


def run(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
    """The command in-process, pointed at an address nothing listens on."""
    result = CliRunner().invoke(cli, ["--address", NOWHERE, *args], input=stdin)
    return result.exit_code, result.stdout, result.stderr


def test_apply_refuses_a_bad_file_by_name_before_calling_the_service(tmp_path: Path) -> None:
    bad = tmp_path / "broken.json"
    bad.write_text('{"name": "x", "config": ')
    code, out, err = run("apply", "-f", str(bad))
    assert code == 1
    assert out == ""
    assert err.startswith(f"error: {bad}: not valid JSON")
    assert "Traceback" not in err


def test_apply_refuses_a_missing_file_and_reads_stdin_as_a_file_named_stdin() -> None:
    code, _, err = run("apply", "-f", "/no/such/file.json")
    assert code == 1 and "/no/such/file.json: cannot read it" in err
    code, _, err = run("apply", "-f", "-", stdin='{"config": {}}')
    assert code == 1 and "<stdin>: the connector's name is missing" in err


def test_user_errors_are_one_line_without_a_traceback() -> None:
    code, _, err = run("patch", "connector", "x", "--set", "novalue")
    assert (code, err) == (1, "error: --set takes key=value, got 'novalue'\n")
    code, _, err = run("create", "--set", "a=b")
    assert code == 1 and "--set needs a connector" in err
    code, _, err = run("create", "pipeline", "x")
    assert code == 1 and "expected connector NAME" in err


def test_kinds_take_kubectls_spellings_and_the_kind_slash_name_form() -> None:
    for spelling in ("connector", "connectors", "conn"):
        code, out, _ = run("get", spelling, "--help")
        assert code == 0 and "Every connector" in out
    code, out, _ = run("delete", "connector/x", "--help")
    assert code == 0 and "Usage: cli delete connector" in out


def test_usage_errors_exit_2_as_click_does() -> None:
    code, _, err = run("pause", "connector", "x", "--timeout", "soon")
    assert code == 2 and "not a duration" in err
    code, _, err = run("get", "pods")
    assert code == 2 and "No such command 'pods'" in err
    code, _, err = run("get", "connectors", "-o", "xml")
    assert code == 2 and "'xml' is not one of" in err
