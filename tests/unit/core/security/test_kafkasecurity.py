"""Kafka clients' security settings: read from the environment, refused when they cannot work
(naming the variable), mapped onto aiokafka's and faust's arguments, handed to child processes,
and never shown. And no Kafka client in the services is made without them."""

from __future__ import annotations

import ast
import ssl
from pathlib import Path

import faust
import pytest
import trustme

from headrace.core.security import kafkasecurity as ks
from headrace.core.security.kafkasecurity import KafkaSecurity, KafkaSecurityError
from headrace.core.settings import Settings

SERVICES = Path(__file__).resolve().parents[4] / "services" / "headrace"


@pytest.fixture(scope="module")
def pems(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A CA, and a client certificate it issued with its key apart and its key inside."""
    folder = tmp_path_factory.mktemp("pems")
    ca = trustme.CA()
    client = ca.issue_cert("headrace-client")
    files = {
        "ca": folder / "ca.pem",
        "cert": folder / "client.pem",
        "key": folder / "client.key",
        "both": folder / "client-with-key.pem",
    }
    ca.cert_pem.write_to_path(str(files["ca"]))
    client.cert_chain_pems[0].write_to_path(str(files["cert"]))
    client.private_key_pem.write_to_path(str(files["key"]))
    client.private_key_and_cert_chain_pem.write_to_path(str(files["both"]))
    return files


SCRAM = {
    ks.PROTOCOL: "SASL_SSL",
    ks.SASL_MECHANISM: "SCRAM-SHA-512",
    ks.SASL_USERNAME: "svc",
    ks.SASL_PASSWORD: "s3cret pass",
}


def test_nothing_set_is_plaintext() -> None:
    security = KafkaSecurity.from_env({})
    assert security == ks.PLAINTEXT
    assert security.client_kwargs("b:9092") == {
        "bootstrap_servers": "b:9092",
        "security_protocol": "PLAINTEXT",
    }
    assert security.faust_credentials() is None


def test_sasl_ssl_with_scram_maps_onto_aiokafka(pems: dict[str, Path]) -> None:
    security = KafkaSecurity.from_env(
        {**SCRAM, ks.PROTOCOL: "sasl_ssl", ks.SSL_CAFILE: str(pems["ca"])}
    )
    kwargs = security.client_kwargs("b:9093")
    context = kwargs.pop("ssl_context")
    assert kwargs == {
        "bootstrap_servers": "b:9093",
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "svc",
        "sasl_plain_password": "s3cret pass",
    }
    assert isinstance(context, ssl.SSLContext)
    assert context.check_hostname and context.verify_mode == ssl.CERT_REQUIRED
    assert len(context.get_ca_certs()) == 1  # the CA file's, not the system's


def test_mtls_loads_the_client_certificate(pems: dict[str, Path]) -> None:
    for cert, key in ((pems["cert"], pems["key"]), (pems["both"], None)):
        env = {ks.PROTOCOL: "SSL", ks.SSL_CAFILE: str(pems["ca"]), ks.SSL_CERTFILE: str(cert)}
        if key is not None:
            env[ks.SSL_KEYFILE] = str(key)
        kwargs = KafkaSecurity.from_env(env).client_kwargs("b:9094")
        assert kwargs["security_protocol"] == "SSL"
        assert isinstance(kwargs["ssl_context"], ssl.SSLContext)
        assert "sasl_mechanism" not in kwargs


def test_hostname_verification_is_off_only_when_emptied_as_in_connect(
    pems: dict[str, Path],
) -> None:
    base = {ks.PROTOCOL: "SSL", ks.SSL_CAFILE: str(pems["ca"])}
    on = KafkaSecurity.from_env({**base, ks.SSL_ENDPOINT_IDENTIFICATION: "HTTPS"})
    off = KafkaSecurity.from_env({**base, ks.SSL_ENDPOINT_IDENTIFICATION: ""})
    assert on.ssl_check_hostname and not off.ssl_check_hostname
    context = off.client_kwargs("b:1")["ssl_context"]
    assert not context.check_hostname and context.verify_mode == ssl.CERT_REQUIRED
    with pytest.raises(KafkaSecurityError, match=f"^{ks.SSL_ENDPOINT_IDENTIFICATION}: 'none'"):
        KafkaSecurity.from_env({**base, ks.SSL_ENDPOINT_IDENTIFICATION: "none"})


def test_the_password_may_come_from_a_file(tmp_path: Path) -> None:
    secret = tmp_path / "password"
    secret.write_text("from-file\n")
    env = {**SCRAM, ks.PROTOCOL: "SASL_PLAINTEXT", ks.SASL_PASSWORD_FILE: str(secret)}
    del env[ks.SASL_PASSWORD]
    security = KafkaSecurity.from_env(env)
    assert security.client_kwargs("b:1")["sasl_plain_password"] == "from-file"
    # Handed on as the file, which the child reads itself.
    handed = security.to_env()
    assert handed[ks.SASL_PASSWORD] == "" and handed[ks.SASL_PASSWORD_FILE] == str(secret)
    assert KafkaSecurity.from_env(handed) == security


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({ks.PROTOCOL: "TLS"}, f"{ks.PROTOCOL}: 'TLS' is not one of PLAINTEXT, SSL"),
        ({**SCRAM, ks.SASL_MECHANISM: "SCRAM-SHA-1"}, f"{ks.SASL_MECHANISM}: 'SCRAM-SHA-1', but"),
        ({**SCRAM, ks.SASL_MECHANISM: ""}, f"{ks.SASL_MECHANISM}: unset, but {ks.PROTOCOL}="),
        (
            {**SCRAM, ks.SASL_MECHANISM: "OAUTHBEARER"},
            f"{ks.SASL_MECHANISM}: OAUTHBEARER is not supported: OAuth",
        ),
        (
            {**SCRAM, ks.SASL_MECHANISM: "GSSAPI"},
            f"{ks.SASL_MECHANISM}: GSSAPI is not supported: Kerberos",
        ),
        ({**SCRAM, ks.SASL_USERNAME: ""}, f"{ks.SASL_USERNAME}: required with"),
        ({**SCRAM, ks.SASL_PASSWORD: ""}, f"{ks.SASL_PASSWORD} \\(or {ks.SASL_PASSWORD_FILE}\\)"),
        ({ks.SASL_USERNAME: "svc"}, f"{ks.SASL_USERNAME}: set, but {ks.PROTOCOL}=PLAINTEXT"),
        (
            {
                ks.PROTOCOL: "SASL_SSL",
                **{k: v for k, v in SCRAM.items() if k != ks.PROTOCOL},
                ks.SASL_PASSWORD_FILE: "/x",
            },
            f"{ks.SASL_PASSWORD_FILE}: set together with",
        ),
        (
            {**SCRAM, ks.SASL_PASSWORD: "", ks.SASL_PASSWORD_FILE: "/nowhere/pw"},
            f"{ks.SASL_PASSWORD_FILE}: /nowhere/pw cannot be read",
        ),
        (
            {ks.PROTOCOL: "SSL", ks.SSL_CAFILE: "/nowhere/ca.pem"},
            f"{ks.SSL_CAFILE}: /nowhere/ca.pem is not a readable file",
        ),
        ({ks.SSL_CAFILE: "/nowhere/ca.pem"}, f"{ks.SSL_CAFILE}: set, but .* does not use SSL"),
        (
            {
                ks.PROTOCOL: "SASL_PLAINTEXT",
                **{k: v for k, v in SCRAM.items() if k != ks.PROTOCOL},
                ks.SSL_ENDPOINT_IDENTIFICATION: "",
            },
            f"{ks.SSL_ENDPOINT_IDENTIFICATION}: set, but",
        ),
    ],
)
def test_what_cannot_work_is_refused_naming_the_variable(env: dict[str, str], message: str) -> None:
    with pytest.raises(KafkaSecurityError, match=f"^{message}"):
        KafkaSecurity.from_env(env)


def test_tls_files_that_do_not_go_together_are_refused_at_start(
    pems: dict[str, Path], tmp_path: Path
) -> None:
    base = {ks.PROTOCOL: "SSL", ks.SSL_CAFILE: str(pems["ca"])}
    with pytest.raises(KafkaSecurityError, match=f"^{ks.SSL_KEYFILE}: set without"):
        KafkaSecurity.from_env({**base, ks.SSL_KEYFILE: str(pems["key"])})
    with pytest.raises(KafkaSecurityError, match=f"^{ks.SSL_KEY_PASSWORD}: set without"):
        KafkaSecurity.from_env({**base, ks.SSL_KEY_PASSWORD: "pw"})
    # A certificate without its key: refused when read, not at the first connection.
    with pytest.raises(KafkaSecurityError, match="the TLS files cannot be used"):
        KafkaSecurity.from_env({**base, ks.SSL_CERTFILE: str(pems["cert"])})
    garbage = tmp_path / "ca.pem"
    garbage.write_text("not a certificate")
    with pytest.raises(KafkaSecurityError, match="the TLS files cannot be used"):
        KafkaSecurity.from_env({ks.PROTOCOL: "SSL", ks.SSL_CAFILE: str(garbage)})


def test_an_encrypted_key_without_its_password_fails_rather_than_prompting(
    tmp_path: Path,
) -> None:
    from cryptography.hazmat.primitives import serialization

    ca = trustme.CA()
    client = ca.issue_cert("c")
    key = serialization.load_pem_private_key(client.private_key_pem.bytes(), None)
    locked = tmp_path / "locked.key"
    locked.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(b"right"),
        )
    )
    cert = tmp_path / "client.pem"
    client.cert_chain_pems[0].write_to_path(str(cert))
    env = {ks.PROTOCOL: "SSL", ks.SSL_CERTFILE: str(cert), ks.SSL_KEYFILE: str(locked)}
    with pytest.raises(KafkaSecurityError, match=ks.SSL_KEY_PASSWORD):
        KafkaSecurity.from_env(env)
    with pytest.raises(KafkaSecurityError, match=ks.SSL_KEY_PASSWORD):
        KafkaSecurity.from_env({**env, ks.SSL_KEY_PASSWORD: "wrong"})
    assert KafkaSecurity.from_env({**env, ks.SSL_KEY_PASSWORD: "right"}).ssl_context()


def test_faust_gets_the_same_settings(pems: dict[str, Path]) -> None:
    sasl_ssl = KafkaSecurity.from_env({**SCRAM, ks.SSL_CAFILE: str(pems["ca"])})
    sasl = KafkaSecurity.from_env({**SCRAM, ks.PROTOCOL: "SASL_PLAINTEXT"})
    tls = KafkaSecurity.from_env({ks.PROTOCOL: "SSL", ks.SSL_CAFILE: str(pems["ca"])})
    for security in (sasl_ssl, sasl, tls):
        credentials = security.faust_credentials()
        assert credentials is not None and credentials.protocol.value == security.protocol
    credentials = sasl_ssl.faust_credentials()
    assert isinstance(credentials, faust.SASLCredentials)
    assert credentials.mechanism.value == "SCRAM-SHA-512"
    assert (credentials.username, credentials.password) == ("svc", "s3cret pass")


def test_settings_hand_the_security_to_child_processes(
    pems: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    env = {
        **SCRAM,
        ks.SSL_CAFILE: str(pems["ca"]),
        ks.SSL_CERTFILE: str(pems["cert"]),
        ks.SSL_KEYFILE: str(pems["key"]),
        ks.SSL_ENDPOINT_IDENTIFICATION: "",
    }
    sent = Settings(kafka_security=KafkaSecurity.from_env(env))
    for name, value in sent.to_env().items():
        monkeypatch.setenv(name, value)
    assert Settings() == sent
    assert sent.kafka_client()["sasl_plain_username"] == "svc"


def test_passwords_are_never_shown(pems: dict[str, Path]) -> None:
    security = KafkaSecurity.from_env(
        {**SCRAM, ks.SSL_CERTFILE: str(pems["both"]), ks.SSL_KEY_PASSWORD: "keypass"}
    )
    shown = repr(Settings(kafka_security=security))
    assert "svc" in shown and "s3cret" not in shown and "keypass" not in shown


# -- every Kafka client goes through the security settings ---------------------------------------

CLIENTS = {"AIOKafkaProducer", "AIOKafkaConsumer", "AIOKafkaAdminClient", "AIOKafkaClient"}
# runtime.kafka.client_arguments spreads client_kwargs under the connector's tuning.
HELPERS = {"client_kwargs", "kafka_client", "client_arguments"}


def _name(func: ast.expr) -> str:
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def insecure_clients(source: str) -> list[int]:
    """Lines making a Kafka client without ``**<security>.client_kwargs(...)`` or
    ``**settings.kafka_client()``, or a faust app without ``broker_credentials``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        name = _name(node.func)
        if name in CLIENTS:
            spread = [k.value for k in node.keywords if k.arg is None]
            if not any(isinstance(v, ast.Call) and _name(v.func) in HELPERS for v in spread):
                found.append(node.lineno)
        elif (
            name == "App"
            and _name(getattr(node.func, "value", node.func)) == "faust"
            and "broker_credentials" not in {k.arg for k in node.keywords}
        ):
            found.append(node.lineno)
    return found


def test_the_scan_finds_a_client_made_without_the_settings() -> None:
    source = "\n".join(
        [
            "AIOKafkaProducer(bootstrap_servers=b)",
            "aiokafka.AIOKafkaConsumer(**{'bootstrap_servers': b})",
            "AIOKafkaAdminClient(**settings.kafka_client())",
            "AIOKafkaClient(**security.client_kwargs(b), client_id='x')",
            "faust.App('a', broker='kafka://b')",
            "faust.App('a', broker='kafka://b', broker_credentials=c)",
        ]
    )
    assert insecure_clients(source) == [1, 2, 5]


def test_every_kafka_client_of_the_services_takes_the_security_settings() -> None:
    insecure = {
        f"{path.relative_to(SERVICES)}:{line}"
        for path in SERVICES.rglob("*.py")
        if "v1" not in path.relative_to(SERVICES).parts[:1]
        for line in insecure_clients(path.read_text())
    }
    assert not insecure, f"Kafka clients made without the security settings: {sorted(insecure)}"
