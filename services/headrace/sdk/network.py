"""Hosts a config may not send a connector to: ``safe_url`` checks a URL a user wrote.

A ``jdbc:postgresql:`` URL is read as the PostgreSQL JDBC driver reads it
(:func:`postgresql_url`), not as a web URL: the query starts at the first ``?`` (a ``#`` is no
fragment to the driver), and the authority may list several hosts. What the driver would read
differently from a plain URL parser, or that could reach two places, is refused: a ``#``, more
than one host, a host that is neither a name nor an address (an IPv4 address in brackets, a
Unix socket folder), a port out of range.

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
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, unquote, urlsplit

from headrace.sdk.errors import ConfigException

# Metadata services outside the link-local ranges, by address and by name.
METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a) for a in ("fd00:ec2::254", "100.100.100.200", "169.254.169.254")
)
METADATA_NAMES = frozenset({"metadata", "metadata.google.internal", "metadata.goog"})


POSTGRESQL_PREFIX = "jdbc:postgresql:"
DEFAULT_POSTGRESQL_PORT = 5432
# A host name as DNS spells it: labels of letters, digits and hyphens.
_HOST_NAME = re.compile(
    r"^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
    r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$"
)


class BadUrl(ValueError):
    """A URL that cannot be used as given; the message says why, without its password."""


@dataclass(frozen=True)
class PostgresqlUrl:
    """A ``jdbc:postgresql://host[:port]/database[?key=value&...]`` URL as the driver reads it."""

    host: str  # a name, or an address (an IPv6 one without its brackets)
    port: int
    database: str
    params: dict[str, str] = field(default_factory=dict, repr=False)

    def jdbc(self) -> str:
        """The URL of just this host, port and database, for a driver given the parameters
        apart: nothing in it can be read two ways."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{POSTGRESQL_PREFIX}//{host}:{self.port}/{quote(self.database, safe='')}"


def _host(raw: str, url: str) -> str:
    if raw.startswith("["):
        if not raw.endswith("]"):
            raise BadUrl(f"{redacted(url)}: the host {raw} opens a bracket it does not close")
        inner = raw[1:-1]
        try:
            address = ipaddress.ip_address(inner)
        except ValueError:
            address = None
        if not isinstance(address, ipaddress.IPv6Address):
            raise BadUrl(f"{redacted(url)}: brackets hold an IPv6 address, not {inner}")
        return inner
    if _HOST_NAME.match(raw):
        return raw
    raise BadUrl(f"{redacted(url)}: {raw!r} is not a host name or an address")


def _port(raw: str, url: str) -> int:
    if not raw.isdecimal() or not 0 < int(raw) < 65536:
        raise BadUrl(f"{redacted(url)} has no valid port ({raw!r})")
    return int(raw)


def postgresql_url(url: str) -> PostgresqlUrl:
    """The URL as the PostgreSQL JDBC driver reads it, or BadUrl saying why it is refused."""
    if not url.startswith(POSTGRESQL_PREFIX + "//"):
        raise BadUrl(f"{redacted(url)} is not a jdbc:postgresql://host/database URL")
    if "#" in url:
        raise BadUrl(f"{redacted(url)}: a '#' is not part of a PostgreSQL URL")
    server, _, query = url.partition("?")  # the driver's query starts at the first '?'
    authority, slash, database = server.removeprefix(POSTGRESQL_PREFIX + "//").partition("/")
    if not slash or not database or "/" in database:
        raise BadUrl(f"{redacted(url)} does not name a host and a database")
    if "," in authority:
        raise BadUrl(f"{redacted(url)} names several hosts; give one")
    if "@" in authority:
        raise BadUrl(
            f"{redacted(url)}: give the user and password as parameters, not before the host"
        )
    bracket = authority.rfind("]")
    colon = authority.rfind(":")
    host, port = authority, str(DEFAULT_POSTGRESQL_PORT)
    if colon > bracket:
        host, port = authority[:colon], authority[colon + 1 :]
    if not host:
        raise BadUrl(f"{redacted(url)} does not name a host and a database")
    params: dict[str, str] = {}
    for token in filter(None, query.split("&")):
        key, _, value = token.partition("=")
        params[key] = unquote(value)  # the driver decodes values, not keys; the last one wins
    return PostgresqlUrl(_host(host, url), _port(port, url), unquote(database), params)


def _refused(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    """Why an address may not be reached, or None."""
    if address in METADATA_ADDRESSES:
        return "a cloud metadata service"
    if address.is_link_local:
        return "link-local (where cloud metadata services answer)"
    mapped = getattr(address, "ipv4_mapped", None)
    return _refused(mapped) if mapped is not None else None


def refused_address(address: str) -> str | None:
    """Why an address (as a resolver gives it) may not be reached, or None."""
    try:
        parsed = ipaddress.ip_address(address.partition("%")[0])
    except ValueError:
        return f"{address} is not an address"
    why = _refused(parsed)
    return f"{parsed} is {why}" if why else None


def unsafe_host(host: str, resolve: bool = True) -> str | None:
    """Why ``host`` must not be connected to, or None. Resolves a name (blocking) unless
    ``resolve`` is false: then only what the host says itself is checked, and whatever
    connects checks the addresses it resolves to."""
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
    if not resolve:
        return None
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
    """A URL as a message may show it: any password it carries (as a parameter, or after the
    user before the host) replaced by ``***``. Reads no more of the URL than that, so it never
    fails on one that cannot be parsed."""
    shown = re.sub(r"(?i)(password=)[^&#;]*", r"\1***", url)
    return re.sub(r"(//[^/?#@:]*:)[^/?#@]*@", r"\1***@", shown)


def url_host(url: str) -> str | None:
    """The one host a URL sends a client to (a ``jdbc:postgresql:`` one read as its driver
    reads it); None when it names none; BadUrl when it is one that can be read two ways."""
    if url.startswith(POSTGRESQL_PREFIX):
        return postgresql_url(url).host
    if "#" in url.partition("?")[0] and url.startswith("jdbc:"):
        raise BadUrl(f"{redacted(url)}: a '#' is not part of a JDBC URL")
    try:
        parts = urlsplit(url.removeprefix("jdbc:"))
        host = parts.hostname
    except ValueError as exc:
        raise BadUrl(f"{redacted(url)}: {exc}") from None
    if host is not None and "," in (parts.netloc or ""):
        raise BadUrl(f"{redacted(url)} names several hosts; give one")
    return host


def safe_url(name: str, value: Any) -> None:
    """A ConfigDef validator: ``value`` is a URL (``jdbc:`` ones too) whose host may be reached."""
    if value is None:
        return
    url = str(value)
    try:
        host = url_host(url)
    except BadUrl as exc:
        raise ConfigException(f"Invalid value for configuration {name}: {exc}") from None
    if not host:
        raise ConfigException(
            f"Invalid value {redacted(url)} for configuration {name}: it names no host"
        )
    reason = unsafe_host(host)
    if reason is not None:
        raise ConfigException(f"Invalid value {redacted(url)} for configuration {name}: {reason}")
