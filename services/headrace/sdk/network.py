"""Hosts a config may not send a connector to: ``safe_url`` checks a URL a user wrote.

A connector that connects where its config says can be made to reach what only the machine it
runs on may reach: above all a cloud's instance metadata service, which hands out the machine's
credentials (169.254.169.254 and its kin). A URL whose host is, or resolves to, a link-local or
metadata address is refused with the reason; so is one whose host cannot be read. The host is
resolved when the config is checked, and should be again by whatever connects, just before it
does (:func:`unsafe_host`), since a name can be pointed elsewhere in between.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from typing import Any
from urllib.parse import urlsplit

from headrace.sdk.errors import ConfigException

# Metadata services outside the link-local ranges, by address and by name.
METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a) for a in ("fd00:ec2::254", "100.100.100.200", "169.254.169.254")
)
METADATA_NAMES = frozenset({"metadata", "metadata.google.internal", "metadata.goog"})


def _refused(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    """Why an address may not be reached, or None."""
    if address in METADATA_ADDRESSES:
        return "a cloud metadata service"
    if address.is_link_local:
        return "link-local (where cloud metadata services answer)"
    mapped = getattr(address, "ipv4_mapped", None)
    return _refused(mapped) if mapped is not None else None


def unsafe_host(host: str) -> str | None:
    """Why ``host`` must not be connected to, or None. Resolves a name (blocking)."""
    name = host.strip("[]").rstrip(".").lower()
    if name in METADATA_NAMES:
        return f"{host} names a cloud metadata service"
    try:
        literal = ipaddress.ip_address(name)
    except ValueError:
        pass  # a name, not an address
    else:
        why = _refused(literal)
        return f"{literal} is {why}" if why else None
    try:
        found = socket.getaddrinfo(name, None, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError):
        return None  # nothing to reach yet; whatever connects checks again
    for *_, sockaddr in found:
        address = ipaddress.ip_address(sockaddr[0])
        why = _refused(address)
        if why is not None:
            return f"{host} resolves to {address}, {why}"
    return None


def redacted(url: str) -> str:
    """A URL as a message may show it: any password it carries replaced by ``***``."""
    parts = urlsplit(url.removeprefix("jdbc:"))
    shown = re.sub(r"(?i)(password=)[^&]*", r"\1***", url)
    if parts.password is not None:
        shown = shown.replace(f":{parts.password}@", ":***@", 1)
    return shown


def safe_url(name: str, value: Any) -> None:
    """A ConfigDef validator: ``value`` is a URL (``jdbc:`` ones too) whose host may be reached."""
    if value is None:
        return
    url = str(value)
    try:
        host = urlsplit(url.removeprefix("jdbc:")).hostname
    except ValueError:
        host = None
    if not host:
        raise ConfigException(
            f"Invalid value {redacted(url)} for configuration {name}: it names no host"
        )
    reason = unsafe_host(host)
    if reason is not None:
        raise ConfigException(f"Invalid value {redacted(url)} for configuration {name}: {reason}")
