"""Config provider references read without resolving, and secrets hidden by key and by value."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

import pytest
from aiokafka.protocol.admin import SaslAuthenticateRequest_v0

from headrace.config import framework
from headrace.core.model.configinfo import ConfigInfo, ConfigInfos, KeyInfo, ValueInfo
from headrace.core.observability import log
from headrace.core.security import secrets
from headrace.core.security.references import (
    ProviderPolicy,
    Reference,
    find,
    only_references,
    problems,
)
from headrace.core.settings import Settings, settings_or_exit
from tests.support import captured_log

POLICY = ProviderPolicy(("file", "env", "dir"), (PurePosixPath("/etc/secrets"),), "DB_.*|API_TOKEN")


@pytest.fixture(autouse=True)
def nothing_registered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(secrets, "_registered", frozenset())
    monkeypatch.setattr(secrets, "_in_order", ())


def test_references_are_read_as_connect_reads_them() -> None:
    assert find("${file:/etc/secrets/db.properties:password}") == [
        Reference(
            "${file:/etc/secrets/db.properties:password}",
            "file",
            "/etc/secrets/db.properties",
            "password",
        )
    ]
    assert find("${dir:/etc/secrets:db-password}")[0].path == "/etc/secrets"
    assert find("${env:DB_PASSWORD}") == [Reference("${env:DB_PASSWORD}", "env", "", "DB_PASSWORD")]
    assert [r.key for r in find("user=${env:DB_USER};pw=${env:DB_PW}")] == ["DB_USER", "DB_PW"]
    # ${name} without a provider is a topic format's or a regex group's, no reference.
    assert find("kafka_${topic}") == []
    # A provider's name is anything Kafka takes for one: a reference to a provider of a
    # component's own config (CVE-2024-31141) is seen as one.
    assert find("${_e:PATH}") == [Reference("${_e:PATH}", "_e", "", "PATH")]
    assert find("${my-vault.2:/p:k}")[0].provider == "my-vault.2"


def test_a_value_of_references_alone_is_not_itself_secret() -> None:
    assert only_references("${env:DB_PW}")
    assert only_references(" ${env:DB_A}${env:DB_B} ")
    assert not only_references("pw-${env:DB_PW}")
    assert not only_references("plain")


def test_well_formed_allowed_references_have_no_problem() -> None:
    config = {
        "a": "${file:/etc/secrets/db.properties:password}",
        "b": "${dir:/etc/secrets/k8s:token}",
        "c": "${env:API_TOKEN}",
        "d": "kafka_${topic}",
        "e": "plain",
    }
    assert problems(config, POLICY) == {"a": [], "b": [], "c": []}


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("${vault:/secret/x:key}", "no config provider 'vault'; there are file, env, dir"),
        # Kafka's grammar: the provider is whatever comes before the first colon.
        ("${_e:PATH}", "no config provider '_e'"),
        ("${1:PATH}", "no config provider '1'"),
        ("${:PATH}", "no config provider ''"),
        ("${_e:PATH", "a reference is not closed"),
        ("${env:DB_PW", "a reference is not closed"),
        ("${env:}", "names no key"),
        (
            "${env:HOME}",
            "'HOME' does not match HEADRACE_CONFIG_PROVIDER_ENV_PATTERN (DB_.*|API_TOKEN)",
        ),
        ("${file:db.properties:pw}", "the path must be absolute, without '..'"),
        ("${file:/etc/secrets/../passwd:root}", "the path must be absolute, without '..'"),
        (
            "${file:/etc/passwd:root}",
            "/etc/passwd is outside the folders config providers may read",
        ),
        ("${dir:/etc/secrets:../passwd}", "the file in the folder is a name, not a path"),
        ("${file:/etc/secrets/a}", "names no path"),
    ],
)
def test_each_bad_reference_is_an_error_naming_the_key_and_the_reference(
    value: str, message: str
) -> None:
    [error] = problems({"db.password": value}, POLICY)["db.password"]
    assert error.startswith("db.password: ")
    assert message in error


def test_a_provider_the_operator_did_not_enable_is_refused_with_the_setting_to_change() -> None:
    [error] = problems({"k": "${env:DB_PW}"}, ProviderPolicy(("file",)))["k"]
    assert "the config provider 'env' is not enabled on the workers" in error
    assert "HEADRACE_CONFIG_PROVIDERS: file" in error
    [error] = problems({"k": "${env:DB_PW}"}, ProviderPolicy(("env",)))["k"]
    assert "HEADRACE_CONFIG_PROVIDER_ENV_PATTERN is empty" in error


def test_keys_the_framework_reads_take_no_reference() -> None:
    config = {
        "tasks.max": "${env:DB_TASKS}",
        "transforms.x.type": "${env:DB_T}",
        "transforms.x.field": "${env:DB_F}",
    }
    found = problems(config, POLICY, ("tasks.max",))
    assert "tasks.max: takes no config provider reference" in found["tasks.max"][0]
    assert "transforms.x.type: takes no config provider reference" in found["transforms.x.type"][0]
    assert found["transforms.x.field"] == []


def _infos(*configs: ConfigInfo) -> ConfigInfos:
    return ConfigInfos("P", configs)


def test_validation_takes_a_referenced_value_as_opaque_and_checks_its_references() -> None:
    config = {"port": "${env:DB_PORT}", "tasks.max": "${env:DB_TASKS}", "bad": "${vault:x:y}"}
    infos = _infos(
        ConfigInfo(
            KeyInfo("port", "INT"), ValueInfo("port", config["port"], errors=("not an int",))
        ),
        ConfigInfo(KeyInfo("tasks.max", "INT"), ValueInfo("tasks.max", "x", errors=("not whole",))),
    )
    checked = framework.opaque(infos, config, None, POLICY)
    errors = {c.value.name: c.value.errors for c in checked.configs}
    assert errors["port"] == ()  # what it resolves to is checked where the unit starts
    assert errors["tasks.max"] == (
        "tasks.max: takes no config provider reference: "
        "the framework reads it to choose what runs, where no reference is resolved",
    )
    assert "bad: ${vault:x:y}: no config provider 'vault'" in errors["bad"][0]


def test_secret_values_are_hidden_but_references_alone_are_shown() -> None:
    config = {
        "password": "hunter22",
        "token": "${env:API_TOKEN}",
        "mixed": "x${env:DB_A}",
        "user": "me",
    }
    assert secrets.mask_config(config, {"password", "token", "mixed"}) == {
        "password": "[hidden]",
        "token": "${env:API_TOKEN}",
        "mixed": "[hidden]",
        "user": "me",
    }


def test_masking_by_value_hides_the_longest_first_and_skips_short_values() -> None:
    text = "login failed for s3cr3t-and-more with s3cr3t; retry=1"
    assert secrets.mask_text(text, ["s3cr3t", "s3cr3t-and-more", "1"]) == (
        "login failed for [hidden] with [hidden]; retry=1"
    )


@pytest.fixture
def logged() -> Iterator[io.StringIO]:
    """What this process logs, as ``log.configure`` sets it up; the set-up undone after."""
    with captured_log() as out:
        yield out


def test_registered_values_are_hidden_in_every_log_line(logged: io.StringIO) -> None:
    secrets.register(["pl4nted-secret", "ab"])
    try:
        raise RuntimeError("cannot connect with pl4nted-secret")
    except RuntimeError:
        log.get().exception("connect_failed", config={"password": "pl4nted-secret"}, short="ab")
    logging.getLogger("secret_masking_library").warning("library says pl4nted-secret")
    text = logged.getvalue()
    assert "pl4nted-secret" not in text
    lines = [json.loads(line) for line in text.splitlines()]
    assert lines[0]["config"] == {"password": "[hidden]"}
    assert lines[0]["short"] == "ab"  # too short to be a secret worth blanking every line for
    assert "RuntimeError: cannot connect with [hidden]" in lines[0]["exception"]
    assert lines[1]["event"] == "library says [hidden]"


def test_provider_settings_travel_through_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    sent = Settings(
        config_providers=("file", "env"),
        config_provider_paths=(tmp_path / "a", tmp_path / "b"),
        config_provider_env_pattern="DB_.*",
        var_dir=tmp_path,
    )
    for name, value in sent.to_env().items():
        monkeypatch.setenv(name, value)
    assert Settings() == sent
    assert Settings().provider_policy().enabled == ("file", "env")


def test_a_reference_is_never_masked_as_a_value() -> None:
    secrets.register(["${env:DB_PW}", "s3cr3t-pw"])
    assert secrets.mask("${env:DB_PW} is s3cr3t-pw") == "${env:DB_PW} is [hidden]"


def test_a_process_s_own_kafka_login_is_hidden_in_its_log(
    logged: io.StringIO, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by the second perimeter review: the services' own Kafka passwords were never
    registered, so a client's error or a cluster-wide DEBUG could write one to every log."""
    monkeypatch.setenv("KAFKA_SECURITY_PROTOCOL", "SASL_PLAINTEXT")
    monkeypatch.setenv("KAFKA_SASL_MECHANISM", "PLAIN")
    monkeypatch.setenv("KAFKA_SASL_USERNAME", "svc")
    monkeypatch.setenv("KAFKA_SASL_PASSWORD", "svc-kafka-pw-71c")
    monkeypatch.setenv("HEADRACE_TOKEN", "svc-token-4d2e")
    settings_or_exit("test")
    client = logging.getLogger("a_kafka_client_of_this_test")  # whatever level others set
    client.setLevel(logging.INFO)
    client.warning("login as svc:svc-kafka-pw-71c with svc-token-4d2e")
    said = logged.getvalue()
    assert "svc-kafka-pw-71c" not in said and "svc-token-4d2e" not in said
    assert "login as svc:[hidden] with [hidden]" in said


def test_the_kafka_client_s_protocol_messages_are_never_written(logged: io.StringIO) -> None:
    """A cluster-wide DEBUG on ``aiokafka`` had every process write each request it sent: a
    produce request's records, a SASL PLAIN login's password."""
    logging.getLogger("aiokafka").setLevel(logging.DEBUG)
    try:
        login = SaslAuthenticateRequest_v0(b"\x00svc\x00plain-pw-93f")
        logging.getLogger("aiokafka.conn").debug("Request to %s:%d %d: %s", "h", 9092, 7, login)
        logging.getLogger("aiokafka.conn").debug("raw %s", b"record-value-0e1")
    finally:
        logging.getLogger("aiokafka").setLevel(logging.NOTSET)
    said = logged.getvalue()
    assert "plain-pw-93f" not in said and "record-value-0e1" not in said
    assert "Request to h:9092 7: <SaslAuthenticateRequest_v0>" in said
