"""TLS on every gRPC server and channel and on the REST API, from certificate paths.

| variable | as a server | as a client |
| --- | --- | --- |
| ``HEADRACE_TLS_CERT``, ``_KEY`` | the certificate it serves | presented when asked (mTLS) |
| ``HEADRACE_TLS_CA`` | checks client certificates by it (mTLS) | trusts servers it signed |
| ``HEADRACE_TLS_CLIENT_AUTH`` | ``required``: no client without a certificate the CA signed | |

None set: plaintext, as without them. A process is TLS as soon as ``HEADRACE_TLS_CA`` is set: its
channels then speak only TLS. Every service also calls the others, so a certificate without the
CA is refused, and so is a token (``HEADRACE_TOKEN``) without it: a token never travels in clear.
Servers check clients' certificates (mTLS) only with ``HEADRACE_TLS_CLIENT_AUTH=required``; the
certificate a process serves is also the one it presents as a client, so it needs both the
serverAuth and the clientAuth extended key usage then.

Each bad setting raises :class:`SecurityError`, naming the variable and what is wrong with it:
a service reports it and does not start; the CLI prints it. Unix sockets stay plaintext: only
the worker's user can reach them (``headrace.isolation.supervisor``).
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from pathlib import Path

import grpc

from headrace.core.rpc import GRPC_OPTIONS
from headrace.core.settings import Settings

CLIENT_AUTH = ("none", "required")
_CERT_MARK = b"-----BEGIN CERTIFICATE-----"
_KEY_MARK = b"PRIVATE KEY-----"


class SecurityError(ValueError):
    """A TLS or auth setting that cannot be used; the message names the variable."""


@dataclass(frozen=True)
class Tls:
    """A process's TLS files, read and checked: the CA it trusts, and its own certificate and
    key when it serves (None for a client only)."""

    ca: bytes
    cert: bytes | None = None
    key: bytes | None = None
    client_auth: bool = False

    @property
    def serves(self) -> bool:
        return self.cert is not None


def _read(variable: str, path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except FileNotFoundError:
        raise SecurityError(f"{variable}: no file at {path}") from None
    except OSError as exc:
        raise SecurityError(f"{variable}: cannot read {path}: {exc.strerror}") from None


def _pem(variable: str, path: str, mark: bytes, what: str) -> bytes:
    data = _read(variable, path)
    if mark not in data:
        raise SecurityError(f"{variable}: {path} holds no PEM {what}")
    return data


def load(settings: Settings) -> Tls | None:
    """The process's TLS, checked (the files read, the key matching the certificate); None for
    plaintext. SecurityError names the first bad setting."""
    cert, key, ca = settings.tls_cert, settings.tls_key, settings.tls_ca
    if settings.tls_client_auth not in CLIENT_AUTH:
        raise SecurityError(
            f"HEADRACE_TLS_CLIENT_AUTH: {settings.tls_client_auth!r} is not one of "
            + ", ".join(CLIENT_AUTH)
        )
    client_auth = settings.tls_client_auth == "required"
    if bool(cert) != bool(key):
        missing, given = ("HEADRACE_TLS_KEY", "CERT") if cert else ("HEADRACE_TLS_CERT", "KEY")
        raise SecurityError(f"{missing}: unset while HEADRACE_TLS_{given} is set; set both")
    if cert and not ca:
        raise SecurityError(
            "HEADRACE_TLS_CA: unset while HEADRACE_TLS_CERT is set: every service also calls "
            "the others over TLS, trusting the CA named here"
        )
    if client_auth and not cert:
        raise SecurityError(
            "HEADRACE_TLS_CLIENT_AUTH: required needs HEADRACE_TLS_CERT and HEADRACE_TLS_KEY"
        )
    if not ca:
        if settings.token:
            raise SecurityError(
                "HEADRACE_TOKEN: set while HEADRACE_TLS_CA is not: a token is sent only over TLS"
            )
        return None
    ca_pem = _pem("HEADRACE_TLS_CA", ca, _CERT_MARK, "certificate")
    try:
        context = ssl.create_default_context(cadata=ca_pem.decode("ascii", "replace"))
    except ssl.SSLError as exc:
        raise SecurityError(f"HEADRACE_TLS_CA: {ca} is not a usable CA: {exc}") from None
    if not cert:
        return Tls(ca_pem)
    cert_pem = _pem("HEADRACE_TLS_CERT", cert, _CERT_MARK, "certificate")
    key_pem = _pem("HEADRACE_TLS_KEY", key, _KEY_MARK, "private key")
    try:
        context.load_cert_chain(cert, key)
    except ssl.SSLError as exc:
        raise SecurityError(
            f"HEADRACE_TLS_KEY: {key} is not the key of HEADRACE_TLS_CERT {cert} ({exc.reason})"
        ) from None
    return Tls(ca_pem, cert_pem, key_pem, client_auth)


def server_credentials(tls: Tls) -> grpc.ServerCredentials:
    """A gRPC server's credentials: its certificate, and with mTLS the CA clients' must chain to."""
    assert tls.cert is not None and tls.key is not None, "a server needs HEADRACE_TLS_CERT"
    return grpc.ssl_server_credentials(
        [(tls.key, tls.cert)],
        root_certificates=tls.ca if tls.client_auth else None,
        require_client_auth=tls.client_auth,
    )


def channel_credentials(tls: Tls, token: str = "") -> grpc.ChannelCredentials:
    """A channel's credentials: trusting the CA, presenting the process's certificate when it has
    one (for servers that require it), and sending ``token`` as ``authorization: Bearer``."""
    credentials = grpc.ssl_channel_credentials(
        root_certificates=tls.ca, private_key=tls.key, certificate_chain=tls.cert
    )
    if not token:
        return credentials
    return grpc.composite_channel_credentials(
        credentials, grpc.access_token_call_credentials(token)
    )


def _options(server_name: str | None) -> list[tuple[str, object]]:
    if not server_name:
        return GRPC_OPTIONS
    return [*GRPC_OPTIONS, ("grpc.ssl_target_name_override", server_name)]


def channel(address: str, settings: Settings, server_name: str | None = None) -> grpc.Channel:
    """A blocking channel to ``address`` with the process's TLS and token (plaintext without).
    ``server_name``: the name the server's certificate must carry, when not the address's host
    (a process calling itself on loopback)."""
    tls = load(settings)
    if tls is None:
        return grpc.insecure_channel(address, options=GRPC_OPTIONS)
    credentials = channel_credentials(tls, settings.token)
    return grpc.secure_channel(address, credentials, options=_options(server_name))


def aio_channel(
    address: str, settings: Settings, server_name: str | None = None
) -> grpc.aio.Channel:
    """The same for asyncio (a channel belongs to the event loop running when it is made)."""
    tls = load(settings)
    if tls is None:
        return grpc.aio.insecure_channel(address, options=GRPC_OPTIONS)
    credentials = channel_credentials(tls, settings.token)
    return grpc.aio.secure_channel(address, credentials, options=_options(server_name))


def server_ssl_context(settings: Settings, tls: Tls) -> ssl.SSLContext:
    """The REST API's TLS: the process's certificate; with mTLS, clients' checked by the CA."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(settings.tls_cert, settings.tls_key)
    if tls.client_auth:
        context.load_verify_locations(cadata=tls.ca.decode("ascii", "replace"))
        context.verify_mode = ssl.CERT_REQUIRED
    return context


def client_ssl_context(settings: Settings, tls: Tls) -> ssl.SSLContext:
    """An HTTPS client's TLS: trusting the CA, presenting the process's certificate if any."""
    context = ssl.create_default_context(cadata=tls.ca.decode("ascii", "replace"))
    if tls.serves:
        context.load_cert_chain(settings.tls_cert, settings.tls_key)
    return context


def peer_common_name(peercert: object) -> str | None:
    """The subject CN of a peer certificate as ``ssl`` gives it (``getpeercert()``); None when
    the peer presented none."""
    if not isinstance(peercert, dict):
        return None
    for rdn in peercert.get("subject", ()):
        for name, value in rdn:
            if name == "commonName":
                return str(value)
    return None
