"""Certificates the suite makes for itself (``trustme``): a CA, and certificates it signs for
loopback, written as the PEM files the ``HEADRACE_TLS_*`` settings name."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import trustme


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
