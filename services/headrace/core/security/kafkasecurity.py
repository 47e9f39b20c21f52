"""How every Kafka client of headrace authenticates and encrypts, read from the environment.

The settings are a Kafka Connect worker's client settings (the key each stands for in brackets),
under environment names:

| variable | meaning |
| --- | --- |
| KAFKA_SECURITY_PROTOCOL | PLAINTEXT (default), SSL, SASL_PLAINTEXT, SASL_SSL (security.protocol) |
| KAFKA_SASL_MECHANISM | PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (sasl.mechanism) |
| KAFKA_SASL_USERNAME | who the clients log in as (the username of sasl.jaas.config) |
| KAFKA_SASL_PASSWORD | their password (the password of sasl.jaas.config) |
| KAFKA_SASL_PASSWORD_FILE | a file holding the password instead, such as a mounted secret |
| KAFKA_SSL_CAFILE | PEM certificates to trust; default the system's (ssl.truststore.location) |
| KAFKA_SSL_CERTFILE | the client's PEM certificate chain, for mTLS (ssl.keystore.location) |
| KAFKA_SSL_KEYFILE | its PEM private key, unless the certificate file holds it |
| KAFKA_SSL_KEY_PASSWORD | the password of an encrypted private key (ssl.key.password) |
| KAFKA_SSL_ENDPOINT_IDENTIFICATION_ALGORITHM | https (default) or empty: do not check that the |
| | broker's certificate names its host (ssl.endpoint.identification.algorithm) |

The SSL variables apply to SSL and SASL_SSL, the SASL ones to SASL_PLAINTEXT and SASL_SSL; one set
for a protocol that does not use it is refused, as are an unknown protocol or mechanism, SASL
without a username or password, and a file that cannot be read, each naming its variable. GSSAPI
and OAUTHBEARER are refused: the clients log in with a username and password only. An empty
variable is an unset one, except the endpoint identification (empty: off, as in Connect).

:class:`KafkaSecurity` holds them, checked when it is made; ``client_kwargs`` gives what every
aiokafka client is made with, ``faust_credentials`` what the automation agent's faust app is. The
passwords are never shown: they are left out of the repr, so out of every log.
"""

from __future__ import annotations

import os
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aiokafka.helpers import create_ssl_context

if TYPE_CHECKING:
    from faust.types.auth import CredentialsT

PROTOCOL = "KAFKA_SECURITY_PROTOCOL"
SASL_MECHANISM = "KAFKA_SASL_MECHANISM"
SASL_USERNAME = "KAFKA_SASL_USERNAME"
SASL_PASSWORD = "KAFKA_SASL_PASSWORD"
SASL_PASSWORD_FILE = "KAFKA_SASL_PASSWORD_FILE"
SSL_CAFILE = "KAFKA_SSL_CAFILE"
SSL_CERTFILE = "KAFKA_SSL_CERTFILE"
SSL_KEYFILE = "KAFKA_SSL_KEYFILE"
SSL_KEY_PASSWORD = "KAFKA_SSL_KEY_PASSWORD"
SSL_ENDPOINT_IDENTIFICATION = "KAFKA_SSL_ENDPOINT_IDENTIFICATION_ALGORITHM"

VARIABLES = (
    PROTOCOL,
    SASL_MECHANISM,
    SASL_USERNAME,
    SASL_PASSWORD,
    SASL_PASSWORD_FILE,
    SSL_CAFILE,
    SSL_CERTFILE,
    SSL_KEYFILE,
    SSL_KEY_PASSWORD,
    SSL_ENDPOINT_IDENTIFICATION,
)
"""Every variable this module reads."""

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
UNSUPPORTED_MECHANISMS = {
    "GSSAPI": "Kerberos logins are not supported",
    "OAUTHBEARER": "OAuth token logins are not supported",
}
HTTPS = "https"


class KafkaSecurityError(ValueError):
    """A security setting that cannot be used; the message names its variable."""


@dataclass(frozen=True)
class KafkaSecurity:
    """The security settings of every Kafka client; checked when made (KafkaSecurityError).

    ``sasl_password_file``, when set, is where ``sasl_password`` was read from: it is what is
    handed to other processes, which read the file themselves.
    """

    protocol: str = "PLAINTEXT"
    sasl_mechanism: str = ""
    sasl_username: str = ""
    sasl_password: str = field(default="", repr=False)
    sasl_password_file: Path | None = None
    ssl_cafile: Path | None = None
    ssl_certfile: Path | None = None
    ssl_keyfile: Path | None = None
    ssl_key_password: str = field(default="", repr=False)
    ssl_check_hostname: bool = True

    def __post_init__(self) -> None:
        if self.protocol not in PROTOCOLS:
            raise KafkaSecurityError(
                f"{PROTOCOL}: {self.protocol!r} is not one of {', '.join(PROTOCOLS)}"
            )
        self._check_sasl()
        self._check_ssl()

    @property
    def uses_sasl(self) -> bool:
        return self.protocol.startswith("SASL_")

    @property
    def uses_ssl(self) -> bool:
        return self.protocol.endswith("SSL")

    def _check_sasl(self) -> None:
        given = {
            SASL_MECHANISM: self.sasl_mechanism,
            SASL_USERNAME: self.sasl_username,
            SASL_PASSWORD: self.sasl_password,
            SASL_PASSWORD_FILE: self.sasl_password_file,
        }
        if not self.uses_sasl:
            _refuse_unused(given, self.protocol, "SASL")
            return
        if self.sasl_mechanism in UNSUPPORTED_MECHANISMS:
            raise KafkaSecurityError(
                f"{SASL_MECHANISM}: {self.sasl_mechanism} is not supported: "
                f"{UNSUPPORTED_MECHANISMS[self.sasl_mechanism]}; use one of {', '.join(MECHANISMS)}"
            )
        if self.sasl_mechanism not in MECHANISMS:
            said = repr(self.sasl_mechanism) if self.sasl_mechanism else "unset"
            raise KafkaSecurityError(
                f"{SASL_MECHANISM}: {said}, but {PROTOCOL}={self.protocol} needs one of "
                f"{', '.join(MECHANISMS)}"
            )
        for name, value in (
            (SASL_USERNAME, self.sasl_username),
            (SASL_PASSWORD, self.sasl_password),
        ):
            if not value:
                also = f" (or {SASL_PASSWORD_FILE})" if name == SASL_PASSWORD else ""
                raise KafkaSecurityError(
                    f"{name}{also}: required with {PROTOCOL}={self.protocol}, unset"
                )

    def _check_ssl(self) -> None:
        given = {
            SSL_CAFILE: self.ssl_cafile,
            SSL_CERTFILE: self.ssl_certfile,
            SSL_KEYFILE: self.ssl_keyfile,
            SSL_KEY_PASSWORD: self.ssl_key_password,
            SSL_ENDPOINT_IDENTIFICATION: "" if self.ssl_check_hostname else "off",
        }
        if not self.uses_ssl:
            _refuse_unused(given, self.protocol, "SSL")
            return
        if self.ssl_keyfile is not None and self.ssl_certfile is None:
            raise KafkaSecurityError(
                f"{SSL_KEYFILE}: set without {SSL_CERTFILE}, the certificate it is the key of"
            )
        if self.ssl_key_password and self.ssl_certfile is None:
            raise KafkaSecurityError(
                f"{SSL_KEY_PASSWORD}: set without {SSL_CERTFILE}, so there is no key to open"
            )
        for name, path in (
            (SSL_CAFILE, self.ssl_cafile),
            (SSL_CERTFILE, self.ssl_certfile),
            (SSL_KEYFILE, self.ssl_keyfile),
        ):
            if path is not None and not path.is_file():
                raise KafkaSecurityError(f"{name}: {path} is not a readable file")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> KafkaSecurity:
        """The settings the environment gives, checked, down to opening the SSL files with the
        key password (so a wrong one stops the start, not the first connection)."""
        # Each variable read by its name's constant: the deploy manifests' test finds them so.
        password, password_file = (
            environ.get(SASL_PASSWORD, ""),
            _path(environ.get(SASL_PASSWORD_FILE)),
        )
        if password_file is not None:
            if password:
                raise KafkaSecurityError(
                    f"{SASL_PASSWORD_FILE}: set together with {SASL_PASSWORD}; set one"
                )
            try:
                # A secret file often ends with a newline that is no part of the password.
                password = password_file.read_text().rstrip("\r\n")
            except OSError as exc:
                raise KafkaSecurityError(
                    f"{SASL_PASSWORD_FILE}: {password_file} cannot be read: {exc.strerror}"
                ) from None
        identification = environ.get(SSL_ENDPOINT_IDENTIFICATION)
        if identification is not None and identification.strip().lower() not in (HTTPS, ""):
            raise KafkaSecurityError(
                f"{SSL_ENDPOINT_IDENTIFICATION}: {identification!r} is not {HTTPS!r} "
                "(check the broker's host name) or empty (do not)"
            )
        security = cls(
            protocol=environ.get(PROTOCOL, "").strip().upper() or "PLAINTEXT",
            sasl_mechanism=environ.get(SASL_MECHANISM, "").strip().upper(),
            sasl_username=environ.get(SASL_USERNAME, "").strip(),
            sasl_password=password,
            sasl_password_file=password_file,
            ssl_cafile=_path(environ.get(SSL_CAFILE)),
            ssl_certfile=_path(environ.get(SSL_CERTFILE)),
            ssl_keyfile=_path(environ.get(SSL_KEYFILE)),
            ssl_key_password=environ.get(SSL_KEY_PASSWORD, ""),
            ssl_check_hostname=identification is None or bool(identification.strip()),
        )
        security.ssl_context()
        return security

    def ssl_context(self) -> ssl.SSLContext | None:
        """A new TLS context for a client, or None for a protocol without TLS."""
        if not self.uses_ssl:
            return None
        try:
            context = create_ssl_context(
                cafile=self.ssl_cafile,
                certfile=self.ssl_certfile,
                keyfile=self.ssl_keyfile,
                # Never None: with None, OpenSSL would prompt on the terminal for the password
                # of an encrypted key; an empty one fails at once instead.
                password=self.ssl_key_password,
            )
        except ssl.SSLError as exc:
            names = f"{SSL_CAFILE}, {SSL_CERTFILE}, {SSL_KEYFILE} or {SSL_KEY_PASSWORD}"
            raise KafkaSecurityError(f"{names}: the TLS files cannot be used: {exc}") from None
        # Off only by the operator's choice, as Connect's empty endpoint identification: the
        # certificate is still checked against the trusted ones, its host name is not.
        context.check_hostname = self.ssl_check_hostname
        return context

    def client_kwargs(self, bootstrap_servers: str) -> dict[str, Any]:
        """What an aiokafka client (producer, consumer, admin, client) is made with: the
        servers and these settings. Each call makes a new TLS context."""
        kwargs: dict[str, Any] = {
            "bootstrap_servers": bootstrap_servers,
            "security_protocol": self.protocol,
        }
        if self.uses_ssl:
            kwargs["ssl_context"] = self.ssl_context()
        if self.uses_sasl:
            kwargs["sasl_mechanism"] = self.sasl_mechanism
            kwargs["sasl_plain_username"] = self.sasl_username
            kwargs["sasl_plain_password"] = self.sasl_password
        return kwargs

    def faust_credentials(self) -> CredentialsT | None:
        """The ``broker_credentials`` of a faust app: the same settings as ``client_kwargs``."""
        # Imported here: only the config service runs faust, and every process reads this module.
        import faust

        if self.uses_sasl:
            return faust.SASLCredentials(
                username=self.sasl_username,
                password=self.sasl_password,
                # With a context faust speaks SASL_SSL, without one SASL_PLAINTEXT.
                ssl_context=self.ssl_context(),
                mechanism=self.sasl_mechanism,
            )
        context = self.ssl_context()
        return faust.SSLCredentials(context) if context is not None else None

    def to_env(self) -> dict[str, str]:
        """The environment that hands these settings to another process (``from_env``'s
        inverse); a password read from a file is handed as the file."""
        return {
            PROTOCOL: self.protocol,
            SASL_MECHANISM: self.sasl_mechanism,
            SASL_USERNAME: self.sasl_username,
            SASL_PASSWORD: "" if self.sasl_password_file else self.sasl_password,
            SASL_PASSWORD_FILE: str(self.sasl_password_file or ""),
            SSL_CAFILE: str(self.ssl_cafile or ""),
            SSL_CERTFILE: str(self.ssl_certfile or ""),
            SSL_KEYFILE: str(self.ssl_keyfile or ""),
            SSL_KEY_PASSWORD: self.ssl_key_password,
            SSL_ENDPOINT_IDENTIFICATION: HTTPS if self.ssl_check_hostname else "",
        }


def _path(raw: str | None) -> Path | None:
    return Path(raw.strip()) if raw and raw.strip() else None


def _refuse_unused(given: Mapping[str, object], protocol: str, kind: str) -> None:
    for name, value in given.items():
        if value:
            raise KafkaSecurityError(f"{name}: set, but {PROTOCOL}={protocol} does not use {kind}")


PLAINTEXT = KafkaSecurity()
"""No security: what the embedded broker's own listener speaks."""
