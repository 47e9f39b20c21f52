"""The TLS files and logins of the session broker's secure listeners, made fresh per session.

One CA (trustme's) signs the broker's certificate (for 127.0.0.1 and localhost) and a client's.
Kafka's authorizer runs: every login but the restricted one is a super user.
The broker's key store is one PEM file holding its key and certificate; its trust store is the
CA. :func:`client_security` gives the settings a client of either
listener uses, as an operator would set them in the environment.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from pathlib import Path

import trustme
from cryptography.hazmat.primitives import serialization

from headrace.core.security.kafkasecurity import KafkaSecurity
from headrace.local.kafka import SCRAM_MECHANISM, SecureListeners


@dataclass(frozen=True)
class SecureBroker:
    """Where the session broker's secure listeners are, and who may log in on them."""

    listeners: SecureListeners
    ca: Path
    client_cert: Path
    client_key: Path
    scram_user: str
    scram_password: str = field(repr=False)
    # A login Kafka's authorizer restricts: what an operator gives plugin processes, scoped by
    # the ACLs a test adds (EmbeddedKafka.deny); the other logins are super users.
    restricted_user: str = ""
    restricted_password: str = field(default="", repr=False)

    def restricted(self) -> tuple[str, KafkaSecurity]:
        """The SASL_SSL listener and the settings of a client logging in as the restricted user."""
        return self.listeners.sasl_ssl_bootstrap, KafkaSecurity(
            protocol="SASL_SSL",
            sasl_mechanism=SCRAM_MECHANISM,
            sasl_username=self.restricted_user,
            sasl_password=self.restricted_password,
            ssl_cafile=self.ca,
        )

    def scram(self, password: str | None = None) -> tuple[str, KafkaSecurity]:
        """The SASL_SSL listener's bootstrap servers and a client's settings for it, logging in
        as the broker's user (with ``password`` when given: a wrong one)."""
        return self.listeners.sasl_ssl_bootstrap, KafkaSecurity(
            protocol="SASL_SSL",
            sasl_mechanism=SCRAM_MECHANISM,
            sasl_username=self.scram_user,
            sasl_password=self.scram_password if password is None else password,
            ssl_cafile=self.ca,
        )

    def mtls(self) -> tuple[str, KafkaSecurity]:
        """The mTLS listener's bootstrap servers and a client's settings for it."""
        return self.listeners.mtls_bootstrap, KafkaSecurity(
            protocol="SSL",
            ssl_cafile=self.ca,
            ssl_certfile=self.client_cert,
            ssl_keyfile=self.client_key,
        )


def make_secure_listeners(folder: Path, sasl_ssl_port: int, mtls_port: int) -> SecureBroker:
    """Writes a CA, the broker's key store and a client's certificate into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    ca = trustme.CA()
    broker = ca.issue_cert("127.0.0.1", "localhost")
    client = ca.issue_cert("headrace-client")
    # Kafka reads a PEM key store's key only as PKCS#8; trustme writes OpenSSL's own form.
    key = serialization.load_pem_private_key(broker.private_key_pem.bytes(), None)
    pkcs8 = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    paths = {
        name: folder / name
        for name in ("broker-keystore.pem", "ca.pem", "client.pem", "client.key")
    }
    paths["broker-keystore.pem"].write_bytes(
        pkcs8 + b"".join(pem.bytes() for pem in broker.cert_chain_pems)
    )
    ca.cert_pem.write_to_path(str(paths["ca.pem"]))
    client.cert_chain_pems[0].write_to_path(str(paths["client.pem"]))
    client.private_key_pem.write_to_path(str(paths["client.key"]))
    user, password = "headrace", secrets.token_hex(12)
    restricted, restricted_password = "plugins", secrets.token_hex(12)
    listeners = SecureListeners(
        sasl_ssl_port=sasl_ssl_port,
        mtls_port=mtls_port,
        keystore=paths["broker-keystore.pem"],
        truststore=paths["ca.pem"],
        scram_users=((user, password),),
        restricted_users=((restricted, restricted_password),),
        client_principal="CN=headrace-client",
    )
    return SecureBroker(
        listeners,
        paths["ca.pem"],
        paths["client.pem"],
        paths["client.key"],
        user,
        password,
        restricted,
        restricted_password,
    )
