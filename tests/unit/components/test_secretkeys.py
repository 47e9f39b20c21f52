"""A connector config's secret keys besides its connector's: its components' PASSWORD keys under
their prefixes, every own key of a component whose definition cannot be had, and the client
overrides' password keys; and the definitions a process reads for them."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

import pytest

from headrace.components import extensions
from headrace.components.secretkeys import definition, local_password_keys, secret_keys
from headrace.components.versions import Named
from headrace.config.commands import _masked
from headrace.config.hiddenkeys import HiddenKeys
from headrace.config.pluginchecks import PluginChecks
from headrace.config.validation import ConfigRejected, Problem
from headrace.core.model.configinfo import (
    ComponentKeys,
    ConfigInfo,
    ConfigInfos,
    KeyInfo,
    ValueInfo,
)
from headrace.core.model.plugins import PluginCatalog, PluginDescriptor
from headrace.sdk import ConfigDef, ConfigType

DEFINED = {
    "SealField": frozenset({"secret"}),
    "SignedStringConverter": frozenset({"signing.key"}),
    "json": frozenset(),
    "TopicNameMatches": frozenset(),
}


def known(use: Named) -> frozenset[str] | None:
    """Definitions as a config service would have them; None for a name not listed."""
    return DEFINED.get(use.name)


def test_a_components_password_keys_are_secret_under_its_prefix() -> None:
    config = {
        "connector.class": "RecordingSink",
        "password": "connector-own",  # the connector's: not this module's to say
        "transforms": "seal",
        "transforms.seal.type": "SealField",
        "transforms.seal.plugin.version": "1.0.0",
        "transforms.seal.field": "word",
        "transforms.seal.secret": "s3cr3t-value",
        "transforms.seal.predicate": "mine",
        "transforms.seal.negate": "true",
        "predicates": "mine",
        "predicates.mine.type": "TopicNameMatches",
        "predicates.mine.pattern": "words.*",
        "value.converter": "SignedStringConverter",
        "value.converter.plugin.version": "1.0.0",
        "value.converter.signing.key": "k3y-value",
        "key.converter": "json",
        "key.converter.schemas.enable": "false",
    }
    assert secret_keys(config, known) == {"transforms.seal.secret", "value.converter.signing.key"}


def test_a_component_without_a_definition_has_all_its_own_keys_hidden_but_the_frameworks() -> None:
    config = {
        "transforms": "odd,untyped",
        "transforms.odd.type": "com.example.Odd",
        "transforms.odd.plugin.version": "2.0.0",
        "transforms.odd.token": "t0ken-value",
        "transforms.odd.mode": "fast",
        "transforms.untyped.token": "other-value",
        "header.converter": "com.example.Headers",
        "header.converter.auth": "h3ader-value",
    }
    assert secret_keys(config, known) == {
        "transforms.odd.token",
        "transforms.odd.mode",
        "transforms.untyped.token",
        "header.converter.auth",
    }


def test_keys_under_no_listed_alias_are_hidden_and_an_unnamed_converter_takes_none() -> None:
    config = {
        "transforms": "a",
        "transforms.a.type": "SealField",
        "transforms.a.secret": "s3cr3t-value",
        "transforms.z.secret": "belongs-to-no-alias",
        # The default converter is the built-in JSON one: no secret among its keys.
        "value.converter.schemas.enable": "true",
    }
    assert secret_keys(config, known) == {"transforms.a.secret", "transforms.z.secret"}


def test_an_alias_prefix_of_another_keeps_its_own_secret_keys() -> None:
    config = {
        "transforms": "a,a.b",
        "transforms.a.type": "SealField",
        "transforms.a.field": "x",
        "transforms.a.b.type": "SealField",
        "transforms.a.b.secret": "of-a-b-value",
        "transforms.a.b.field": "y",
    }
    assert secret_keys(config, known) == {"transforms.a.b.secret"}


def test_the_client_overrides_password_keys_are_secret() -> None:
    config = {
        "producer.override.sasl.jaas.config": 'Plain required password="pw-value";',
        "consumer.override.ssl.keystore.password": "ks-value",
        "admin.override.ssl.key.password": "key-value",
        "consumer.override.max.poll.records": "100",
        "producer.override.ssl.keystore.location": "/etc/ks.jks",
    }
    assert secret_keys(config, known) == {
        "producer.override.sasl.jaas.config",
        "consumer.override.ssl.keystore.password",
        "admin.override.ssl.key.password",
    }


def test_a_client_password_key_is_secret_under_any_prefix() -> None:
    """Found by the second perimeter review: the passwords of the clients connectors embed
    (Debezium's schema history, MirrorMaker's clusters) were answered in clear."""
    config = {
        "schema.history.internal.producer.sasl.jaas.config": 'Plain password="a";',
        "schema.history.internal.consumer.ssl.truststore.password": "b",
        "source.cluster.ssl.keystore.password": "c",
        "target.cluster.sasl.jaas.config": 'Plain password="d";',
        "sasl.jaas.config": 'Plain password="e";',
        "ssl.key.password": "f",
        "source.cluster.ssl.keystore.location": "/etc/ks.jks",
        "source.cluster.bootstrap.servers": "a:9092",
        "my.ssl.key.passwords": "not a client key",
        "jaas.config": "not one either",
    }
    assert secret_keys(config, known) == {
        "schema.history.internal.producer.sasl.jaas.config",
        "schema.history.internal.consumer.ssl.truststore.password",
        "source.cluster.ssl.keystore.password",
        "target.cluster.sasl.jaas.config",
        "sasl.jaas.config",
        "ssl.key.password",
    }


def test_builtin_definitions_are_read_here_and_unknown_names_have_none() -> None:
    masking = definition("transformation", "MaskField$Value")
    assert masking is not None and "fields" in masking.keys
    assert local_password_keys(Named("converter", "value.converter", "json", "")) == frozenset()
    assert local_password_keys(Named("predicate", "p", "TopicNameMatches", "")) == frozenset()
    assert definition("transformation", "com.example.Nowhere") is None
    assert definition("converter", "com.example.Nowhere") is None


class _Converter:
    @staticmethod
    def config_def() -> ConfigDef:
        return ConfigDef().define("token", ConfigType.PASSWORD).define("mode", ConfigType.STRING)

    def __init__(self, config: Mapping[str, str], is_key: bool) -> None:
        self.config = config


class _Undescribed:
    def __init__(self, config: Mapping[str, str], is_key: bool) -> None:
        self.config = config


class _Transform:
    def config_def(self) -> ConfigDef:
        return ConfigDef().define("secret", ConfigType.PASSWORD)

    def configure(self, config: Mapping[str, str]) -> None:
        raise AssertionError("a definition is read without configuring")

    def apply(self, record: Any) -> Any:
        return record


def test_a_loaded_components_definition_comes_from_its_class(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(extensions._loaded["converter"], "Tokened", _Converter)
    monkeypatch.setitem(extensions._loaded["converter"], "Undescribed", _Undescribed)
    monkeypatch.setitem(extensions._loaded["transformation"], "Sealed", _Transform)
    use = Named("converter", "value.converter", "Tokened", "")
    assert local_password_keys(use) == {"token"}
    # A converter that says nothing of its keys: none is known, all are hidden.
    assert local_password_keys(Named("converter", "key.converter", "Undescribed", "")) is None
    assert local_password_keys(Named("transformation", "t", "Sealed", "")) == {"secret"}


def test_a_validation_answer_hides_a_components_secret_value_and_its_quotes() -> None:
    config = {"transforms.seal.secret": "s3cr3t-value", "transforms.seal.field": "word"}
    infos = ConfigInfos(
        "RecordingSink",
        (
            ConfigInfo(
                KeyInfo("transforms.seal.secret"),
                ValueInfo("transforms.seal.secret", "s3cr3t-value", errors=("bad s3cr3t-value",)),
            ),
            ConfigInfo(
                KeyInfo("transforms.seal.field"),
                ValueInfo("transforms.seal.field", "word", errors=("not s3cr3t-value",)),
            ),
        ),
    )
    masked = _masked(infos, config, {"transforms.seal.secret"})
    assert [(c.value.value, c.value.errors) for c in masked.configs] == [
        ("[hidden]", ("bad [hidden]",)),
        ("word", ("not [hidden]",)),
    ]
    referenced = {"transforms.seal.secret": "${env:DB_SEAL}"}
    shown = _masked(
        ConfigInfos(
            "x",
            (
                ConfigInfo(
                    KeyInfo("transforms.seal.secret"),
                    ValueInfo("transforms.seal.secret", "${env:DB_SEAL}"),
                ),
            ),
        ),
        referenced,
        {"transforms.seal.secret"},
    )
    assert shown.configs[0].value.value == "${env:DB_SEAL}"


class _Checks:
    """A plugin process's answers, counted: the connector's definition and its components'."""

    def __init__(self, components: list[ComponentKeys] | None) -> None:
        self.components = components
        self.described: list[PluginDescriptor] = []

    async def validate(
        self, plugin: PluginDescriptor, config: Mapping[str, str], *, definition_only: bool
    ) -> ConfigInfos:
        key = KeyInfo("password", type="PASSWORD")
        return ConfigInfos(plugin.class_name, (ConfigInfo(key, ValueInfo("password")),))

    async def describe(self, plugin: PluginDescriptor) -> list[ComponentKeys]:
        self.described.append(plugin)
        if self.components is None:
            raise ConfigRejected(Problem.INVALID, "connector.class: could not be loaded")
        return self.components


SINK = PluginDescriptor("rec.RecordingSink", "1.0.0", "sink", "rec", "RecordingSink", Path("/r"))
SEAL = PluginDescriptor(
    "seal.SealField", "1.0.0", "transformation", "seal", "SealField", Path("/s")
)
SEALED = {
    "connector.class": "RecordingSink",
    "password": "own-s3cret",
    "transforms": "seal,mask",
    "transforms.seal.type": "SealField",
    "transforms.seal.secret": "seal-s3cret",
    "transforms.seal.field": "word",
    "transforms.mask.type": "MaskField$Value",
    "transforms.mask.fields": "word",
}


def test_a_plugin_path_components_keys_are_asked_of_its_process_once_per_version() -> None:
    keys = (KeyInfo("field"), KeyInfo("secret", type="PASSWORD"))
    checks = _Checks([ComponentKeys("seal.SealField", "1.0.0", "transformation", keys)])
    hidden = HiddenKeys(PluginCatalog((SINK, SEAL)), cast(PluginChecks, checks))
    expected = {"password", "transforms.seal.secret"}
    assert asyncio.run(hidden.of(SEALED)) == expected
    other = {
        "connector.class": "RecordingSink",
        "transforms": "other",
        "transforms.other.type": "SealField",
        "transforms.other.secret": "other-s3cret",
    }
    assert asyncio.run(hidden.of(other)) == {"password", "transforms.other.secret"}
    # Described by the process that loads it beside the connector, once.
    assert [p.components for p in checks.described] == [(SEAL,)]


def test_a_component_whose_definition_cannot_be_had_has_its_own_keys_hidden_for_good() -> None:
    checks = _Checks(None)
    hidden = HiddenKeys(PluginCatalog((SINK, SEAL)), cast(PluginChecks, checks))
    expected = {"password", "transforms.seal.secret", "transforms.seal.field"}
    assert asyncio.run(hidden.of(SEALED)) == expected
    assert asyncio.run(hidden.of(SEALED)) == expected
    assert len(checks.described) == 1


class _JavaChecks:
    """A Java connector's JVM answers as its Validate would: the connector's PASSWORD key and,
    under their prefixes, the keys of the components the config names that it can make."""

    COMPONENTS = {
        "org.apache.kafka.connect.transforms.RegexRouter": ("regex", "STRING"),
        "com.example.SignField": ("signing.key", "PASSWORD"),
    }

    def __init__(self) -> None:
        self.asked: list[Mapping[str, str]] = []

    async def validate(
        self, plugin: PluginDescriptor, config: Mapping[str, str], *, definition_only: bool
    ) -> ConfigInfos:
        assert definition_only
        self.asked.append(dict(config))
        infos = [ConfigInfo(KeyInfo("database.password", type="PASSWORD"), ValueInfo("x"))]
        for alias in config.get("transforms", "").split(","):
            at = f"transforms.{alias}."
            known = self.COMPONENTS.get(config.get(at + "type", ""))
            if known is None:
                error = ValueInfo(at + "type", errors=("no such transformation",))
                infos.append(ConfigInfo(KeyInfo(at + "type"), error))
            else:
                infos.append(ConfigInfo(KeyInfo(at + known[0], type=known[1]), ValueInfo("")))
        return ConfigInfos(plugin.class_name, tuple(infos))

    async def describe(self, plugin: PluginDescriptor) -> list[ComponentKeys]:
        raise AssertionError("a Java connector's components are not described by Python")


JAVA = PluginDescriptor(
    "io.example.PgSource", "3.6.1", "source", "", "", Path("/j"), runtime="java"
)


def test_a_java_connectors_secret_keys_are_its_jvms_password_keys_asked_once() -> None:
    checks = _JavaChecks()
    hidden = HiddenKeys(PluginCatalog((JAVA,)), cast(PluginChecks, checks))
    config = {
        "connector.class": "io.example.PgSource",
        "database.password": "pw",
        "database.user": "me",
        "transforms": "route,sign,odd",
        "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
        "transforms.route.regex": "(.*)",
        "transforms.sign.type": "com.example.SignField",
        "transforms.sign.signing.key": "k3y",
        "transforms.sign.field": "f",
        "transforms.odd.type": "com.example.Unknown",
        "transforms.odd.what": "w",
    }
    expected = {"database.password", "transforms.sign.signing.key", "transforms.odd.what"}
    assert asyncio.run(hidden.of(config)) == expected
    # Another value of the same names: the answer is the one had; only the names were asked.
    assert asyncio.run(hidden.of(config | {"transforms.route.regex": "x"})) == expected
    assert len(checks.asked) == 1
    assert "transforms.route.regex" not in checks.asked[0]
    assert checks.asked[0]["transforms.sign.type"] == "com.example.SignField"


def test_a_stored_config_s_keys_are_worked_out_again_once_a_definition_is_learned() -> None:
    """A config whose components cannot all be had is not described, so its SealField's own
    keys are all hidden; once another config's process describes SealField, the stored
    config's answer is what ``of`` says now, not what it said first."""
    keys = (KeyInfo("field"), KeyInfo("secret", type="PASSWORD"))
    checks = _Checks([ComponentKeys("seal.SealField", "1.0.0", "transformation", keys)])
    hidden = HiddenKeys(PluginCatalog((SINK, SEAL)), cast(PluginChecks, checks))
    stored = {**SEALED, "key.converter.plugin.version": "1.0.0"}  # no key.converter
    alive = {"stored": stored}
    first = asyncio.run(hidden.of_stored("stored", stored, alive))
    assert "transforms.seal.field" in first
    assert asyncio.run(hidden.of(SEALED)) == {"password", "transforms.seal.secret"}
    now = asyncio.run(hidden.of_stored("stored", stored, alive))
    assert now == asyncio.run(hidden.of(stored))
    assert "transforms.seal.field" not in now and "transforms.seal.secret" in now
