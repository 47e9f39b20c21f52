"""The TLS settings checked as a process starts (``headrace.core.security.tls``), on certificates
the suite makes: each bad setting refused naming the variable and the problem."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from headrace.core.security import tls
from headrace.core.security.guard import ServerSecurity
from headrace.core.settings import Settings
from tests.pki import Pki, make_pki


@pytest.fixture
def pki(tmp_path: Path) -> Pki:
    return make_pki(tmp_path / "pki")


@pytest.fixture
def serving(pki: Pki) -> Settings:
    server = pki.issue("config")
    return Settings(tls_cert=str(server.cert), tls_key=str(server.key), tls_ca=str(pki.ca))


def refusal(settings: Settings) -> str:
    with pytest.raises(tls.SecurityError) as refused:
        tls.load(settings)
    return str(refused.value)


def test_nothing_set_is_plaintext() -> None:
    assert tls.load(Settings()) is None
    assert ServerSecurity.load(Settings()) == ServerSecurity(None, None)


def test_a_server_reads_its_certificate_key_and_ca(serving: Settings, pki: Pki) -> None:
    loaded = tls.load(replace(serving, tls_client_auth="required"))
    assert loaded is not None and loaded.serves and loaded.client_auth
    assert loaded.ca == pki.ca.read_bytes()
    assert loaded.cert == Path(serving.tls_cert).read_bytes()


def test_a_client_needs_only_the_ca(pki: Pki) -> None:
    loaded = tls.load(Settings(tls_ca=str(pki.ca), token="t" * 32))
    assert loaded is not None and not loaded.serves
    # A client serves nothing: its servers, if any, would be plaintext.
    assert ServerSecurity.load(Settings(tls_ca=str(pki.ca))).tls is None


def test_a_missing_or_unreadable_file_is_named(serving: Settings, tmp_path: Path) -> None:
    missing = str(tmp_path / "nowhere.pem")
    assert refusal(replace(serving, tls_ca=missing)) == f"HEADRACE_TLS_CA: no file at {missing}"
    assert refusal(replace(serving, tls_cert=missing)).startswith("HEADRACE_TLS_CERT: no file")
    assert refusal(replace(serving, tls_key=str(tmp_path))).startswith(
        f"HEADRACE_TLS_KEY: cannot read {tmp_path}"
    )


def test_files_that_are_not_pem_are_named(serving: Settings, tmp_path: Path) -> None:
    junk = tmp_path / "junk.pem"
    junk.write_text("not a certificate\n")
    assert refusal(replace(serving, tls_ca=str(junk))) == (
        f"HEADRACE_TLS_CA: {junk} holds no PEM certificate"
    )
    assert refusal(replace(serving, tls_key=str(junk))) == (
        f"HEADRACE_TLS_KEY: {junk} holds no PEM private key"
    )


def test_a_key_of_another_certificate_is_refused(serving: Settings, pki: Pki) -> None:
    other = pki.issue("other")
    problem = refusal(replace(serving, tls_key=str(other.key)))
    assert problem.startswith(f"HEADRACE_TLS_KEY: {other.key} is not the key of HEADRACE_TLS_CERT")


def test_settings_that_do_not_fit_together_are_refused(serving: Settings) -> None:
    assert refusal(replace(serving, tls_key="")).startswith(
        "HEADRACE_TLS_KEY: unset while HEADRACE_TLS_CERT is set"
    )
    assert refusal(replace(serving, tls_ca="")).startswith(
        "HEADRACE_TLS_CA: unset while HEADRACE_TLS_CERT is set"
    )
    assert refusal(replace(serving, tls_client_auth="optional")) == (
        "HEADRACE_TLS_CLIENT_AUTH: 'optional' is not one of none, required"
    )
    client_only = replace(serving, tls_cert="", tls_key="", tls_client_auth="required")
    assert refusal(client_only).startswith("HEADRACE_TLS_CLIENT_AUTH: required needs")
    assert refusal(Settings(token="t" * 32)) == (
        "HEADRACE_TOKEN: set while HEADRACE_TLS_CA is not: a token is sent only over TLS"
    )
