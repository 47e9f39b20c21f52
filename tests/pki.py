"""Certificates the suite makes for itself (``trustme``): a CA, and certificates it signs for
loopback, written as the PEM files the ``HEADRACE_TLS_*`` settings name."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import trustme
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12


@dataclass(frozen=True)
class Identity:
    """A certificate and its private key, as PEM files."""

    cert: Path
    key: Path


@dataclass(frozen=True)
class Pki:
    """A CA written to ``ca``, issuing into ``folder``."""

    authority: trustme.CA
    folder: Path

    @property
    def ca(self) -> Path:
        return self.folder / "ca.pem"

    def issue(self, common_name: str) -> Identity:
        """A certificate for 127.0.0.1 and localhost whose subject CN is ``common_name``
        (for clients and servers alike: trustme's carry both extended key usages)."""
        leaf = self.authority.issue_cert("127.0.0.1", "localhost", common_name=common_name)
        identity = Identity(self.folder / f"{common_name}.pem", self.folder / f"{common_name}.key")
        identity.cert.write_bytes(b"".join(p.bytes() for p in leaf.cert_chain_pems))
        leaf.private_key_pem.write_to_path(str(identity.key))
        return identity


def make_pki(folder: Path) -> Pki:
    """A new CA, its certificate written in ``folder`` (made if missing)."""
    folder.mkdir(parents=True, exist_ok=True)
    pki = Pki(trustme.CA(), folder)
    pki.authority.cert_pem.write_to_path(str(pki.ca))
    return pki


def keystore(identity: Identity, path: Path, password: str) -> Path:
    """``identity`` as a PKCS12 keystore, as a JVM server takes its key and certificate."""
    chain = x509.load_pem_x509_certificates(identity.cert.read_bytes())
    key = serialization.load_pem_private_key(identity.key.read_bytes(), None)
    sealed = serialization.BestAvailableEncryption(password.encode())
    path.write_bytes(
        pkcs12.serialize_key_and_certificates(
            b"server",
            key,  # type: ignore[arg-type]
            chain[0],
            chain[1:],
            sealed,
        )
    )
    return path


def truststore(pki: Pki, path: Path, password: str) -> Path:
    """``pki``'s CA as a PKCS12 truststore, as a JVM trusts it."""
    ca = x509.load_pem_x509_certificate(pki.ca.read_bytes())
    entry = pkcs12.PKCS12Certificate(ca, b"ca")
    sealed = serialization.BestAvailableEncryption(password.encode())
    path.write_bytes(pkcs12.serialize_java_truststore([entry], sealed))
    return path
