"""The framework's half of validation: every problem found at once, each under its key."""

from __future__ import annotations

from pathlib import Path

import pytest

from headrace.config import framework
from headrace.config.validation import ConfigRejected
from headrace.core.model.connectorconfig import ClientRules
from headrace.core.model.plugins import PluginCatalog
from headrace.isolation.plugins import discover
from tests.support import install_manifest
from tests.unit.config.memory import GEN, LAKE, memory_commands

OPERATOR = framework.Operator()


@pytest.fixture
def catalog(tmp_path: Path) -> PluginCatalog:
    install_manifest(tmp_path, "Gen", "1.0.0", "source")
    install_manifest(tmp_path, "Lake", "1.0.0", "sink")
    return discover((tmp_path,))


def errors(verdict: framework.Verdict) -> dict[str, list[str]]:
    return {c.value.name: list(c.value.errors) for c in verdict.configs if c.value.errors}


def test_a_good_config_has_no_errors_and_resolves_its_plugin(catalog: PluginCatalog) -> None:
    verdict = framework.check("ok", {"connector.class": "Lake", "topics": "t"}, catalog, OPERATOR)
    assert errors(verdict) == {}
    assert verdict.plugin is not None and verdict.plugin.class_name == "com.example.LakeConnector"
    groups = {c.definition.group for c in verdict.configs}
    assert {"Common", "Transforms", "Error Handling", "Sink"} <= groups


def test_every_problem_is_found_at_once_and_filed_under_its_key(catalog: PluginCatalog) -> None:
    config = {
        "connector.class": "Lake",
        "tasks.max": "0",
        "value.converter": "com.example.NoSuchConverter",
        "transforms": "nope",
        "transforms.nope.type": "com.example.NoSuchTransform",
        "errors.tolerance": "some",
    }
    found = errors(framework.check("../x", config, catalog, OPERATOR))
    assert set(found) == {
        "name",
        "tasks.max",
        "value.converter",
        "transforms.nope.type",
        "errors.tolerance",
        "topics",
    }
    assert "NoSuchConverter" in found["value.converter"][0]
    assert "NoSuchTransform" in found["transforms.nope.type"][0]


def test_an_unknown_plugin_or_version_is_named_under_its_own_key(catalog: PluginCatalog) -> None:
    unknown = framework.check("x", {"connector.class": "Nope"}, catalog, OPERATOR)
    assert unknown.plugin is None and "Nope" in errors(unknown)["connector.class"][0]
    version = {"connector.class": "Lake", "topics": "t", "connector.plugin.version": "9"}
    found = errors(framework.check("x", version, catalog, OPERATOR))
    assert list(found) == ["connector.plugin.version"]
    assert "1.0.0" in found["connector.plugin.version"][0]
    missing = errors(framework.check("x", {}, catalog, OPERATOR))
    assert missing == {"connector.class": ["connector.class: missing; name the plugin to run"]}


def test_keys_headrace_does_not_honour_are_refused_with_the_reason(
    catalog: PluginCatalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    everything = framework.Operator(clients=ClientRules("All"))  # allowed, yet not honoured
    config = {"connector.class": "Gen", "producer.override.acks": "1"}
    found = errors(framework.check("x", config, catalog, everything))
    assert list(found) == ["producer.override.acks"]
    assert "idempotent, which needs acks=all" in found["producer.override.acks"][0]


async def test_a_config_setting_config_providers_reaches_no_plugin_process() -> None:
    """Found by the second perimeter review: with ``value.converter.config.providers`` set, a
    validation asked the plugin's JVM, which made the converter's providers and quoted what
    one read (the process's PATH) in the converter's error."""
    commands = await memory_commands()
    config = {
        "connector.class": "gen.GenConnector",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.config.providers": "_e",
        "value.converter.config.providers._e.class": (
            "org.apache.kafka.common.config.provider.EnvVarConfigProvider"
        ),
        "value.converter.converter.encoding": "${_e:PATH}",
    }
    infos = await commands.validate("c", config)
    found = {c.value.name: list(c.value.errors) for c in infos.configs if c.value.errors}
    assert "(CVE-2024-31141)" in " ".join(found["value.converter.config.providers"])
    assert "no config provider '_e'" in " ".join(found["value.converter.converter.encoding"])
    assert commands.checks.asked == []  # type: ignore[attr-defined]
    commands.checks.asked.clear()  # type: ignore[attr-defined]
    await commands.validate("c", {"connector.class": "gen.GenConnector"})
    assert len(commands.checks.asked) == 1  # type: ignore[attr-defined]  # a safe one is


async def test_a_sink_may_not_consume_in_another_connector_s_group(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Found by the second perimeter review: under the All policy, consumer.override.group.id
    could name another connector's group, whose partitions and offsets its tasks would take."""
    commands = await memory_commands(plugins=(GEN, LAKE), cluster="hr", clients=ClientRules("All"))
    sink = {"connector.class": "lake.LakeConnector", "topics": "t"}
    group = "consumer.override.group.id"
    await commands.create("a", sink)
    with pytest.raises(ConfigRejected, match="hr-connect-a is the consumer group of connector 'a'"):
        await commands.create("b", {**sink, group: "hr-connect-a"})
    await commands.create("c", {**sink, group: "shared"})
    with pytest.raises(ConfigRejected, match="shared is the consumer group of connector 'c'"):
        await commands.put_config("d", {**sink, group: "shared"})
    await commands.put_config("c", {**sink, group: "shared", "tasks.max": "2"})  # its own
    await commands.create("e", {**sink, group: "hr-connect-f"})
    with pytest.raises(ConfigRejected, match="of connector 'e'"):
        await commands.create("f", sink)  # its own default group is e's already
    with pytest.raises(ConfigRejected, match="of connector 'a'"):
        await commands.patch("c", {group: "hr-connect-a"})
    assert sorted((await commands.store.current()).connectors) == ["a", "c", "e"]


async def test_a_plugin_validates_the_config_with_the_name_connect_puts_in_it() -> None:
    """Found trying MirrorMaker's heartbeat connector as Connect tools create it (``POST
    /connectors`` with the name beside the config): its ConfigDef requires ``name``, and the
    config its JVM validated did not carry it, so the create was refused."""
    commands = await memory_commands()
    await commands.create("hb", {"connector.class": "gen.GenConnector"})
    await commands.put_config("hb2", {"connector.class": "gen.GenConnector"})
    asked = commands.checks.asked  # type: ignore[attr-defined]
    assert [a.get("name") for a in asked if a] == ["hb", "hb2"]  # ({}: a definition asked)
    asked.clear()
    await commands.plugin_calls.validate("GenConnector", {"connector.class": "gen.GenConnector"})
    assert "name" not in asked[0]  # validated without one: as Connect, the error is the name's
