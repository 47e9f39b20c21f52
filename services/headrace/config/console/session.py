"""How a browser proves its role to the console, and why a change it makes is its own.

With auth on, the login form takes a token (``read`` or ``admin``, as the tokens file gives
it) and sets it as a cookie the page's script cannot read (``HttpOnly``), sent only over TLS
(auth needs TLS) and only with requests from the console's own pages (``SameSite=Strict``).
Every request then proves the token's role as its ``authorization`` header would: the cookie
holds no session of its own, so what the service's tokens say of the token, the cookie says.

A change (any method but GET, HEAD and OPTIONS) made with the cookie must also carry the
:data:`CSRF_HEADER` header, whose value the console's own page asks for: a digest of the token,
from which the token cannot be had back. Another site can neither read that value nor send the
header, so it cannot make a change in the name of someone logged in.

A browser sends other credentials by itself too: a client certificate, under mTLS, and none at
all is needed with auth off (a page on the web posting to a service on the operator's own
machine). So the REST API refuses every change a browser says comes from another site's page
(:meth:`Site.cross_site`), whatever it carries, and a JSON body sent as a form's content type;
and every request naming a host the API is not served under (:meth:`Site.host_refusal`).
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from aiohttp import web

from headrace.core.rpc import split_address
from headrace.core.security.auth import bearer_token

COOKIE = "headrace_console"
CSRF_HEADER = "X-Headrace-Csrf"
MAX_AGE_S = 8 * 3600
SAFE = frozenset({"GET", "HEAD", "OPTIONS"})


@dataclass(frozen=True)
class Credential:
    """What a request proves itself with: its ``authorization`` header, or the console's
    cookie as one (``from_cookie``)."""

    authorization: str | None
    from_cookie: bool = False


def credential(request: web.Request) -> Credential:
    """The request's header, which a program sends, before the console's cookie."""
    header = request.headers.get("Authorization")
    if header:
        return Credential(header)
    token = request.cookies.get(COOKIE)
    return Credential(f"Bearer {token}", True) if token else Credential(None)


def csrf_token(token: str) -> str:
    """The value a change made with ``token``'s cookie must carry in :data:`CSRF_HEADER`."""
    return hmac.new(token.encode(), b"headrace console csrf", hashlib.sha256).hexdigest()


def csrf_refusal(request: web.Request, given: Credential) -> str | None:
    """Why a change made with the cookie is refused (no header, or another token's); None for
    anything else."""
    if not given.from_cookie or request.method in SAFE:
        return None
    token = bearer_token(given.authorization) or ""
    sent = request.headers.get(CSRF_HEADER, "")
    if hmac.compare_digest(sent.encode(), csrf_token(token).encode()):
        return None
    return (
        f"{request.method} {request.path}: a change made with the console's login needs the "
        f"{CSRF_HEADER} header its page sends"
    )


LOOPBACK_NAMES = ("localhost",)


def _name(host: str) -> str:
    """A host name or address as compared: lower case, without brackets or a final dot."""
    return host.strip().strip("[]").lower().rstrip(".")


def _address(name: str) -> bool:
    """Whether ``name`` is an IP address rather than a DNS name."""
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def _loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address, IPv6 with or without brackets) can only mean
    this machine: ``localhost`` and its subdomains (which browsers never ask DNS for), or a
    loopback address."""
    name = host.strip("[]").lower().rstrip(".")
    if name in LOOPBACK_NAMES or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def open_refusal(rest_addr: str, has_auth: bool, open_allowed: bool) -> str | None:
    """Why the REST API may not listen on ``rest_addr`` (``host:port``): on a network address,
    with auth off, unless the operator said it may (``HEADRACE_REST_OPEN``). None when it may."""
    listened, _port = split_address(rest_addr)
    if has_auth or open_allowed or _loopback(listened):
        return None
    return (
        f"the REST API would listen on {rest_addr}, beyond this machine, with auth off: "
        "anyone who reaches it could create connectors. Turn auth on (HEADRACE_AUTH_TOKENS, "
        "docs/operations/security.md), listen on a loopback address, or say it is meant to be "
        "open with HEADRACE_REST_OPEN=true"
    )


@dataclass(frozen=True)
class Site:
    """Where browsers reach the REST API and the console.

    ``origins``: pages besides the API's own address that may make changes (a proxy's public
    address, ``HEADRACE_CONSOLE_ORIGINS``). ``hosts``: the names a request may name in its
    ``Host`` besides this machine's own (``localhost``, its host name) and any address written
    as one: a page whose name an attacker's DNS points at the API afterwards (DNS rebinding) is
    its own origin, and only its ``Host`` tells it apart, whatever address the API listens on.
    None: any name (only for a ``Site()`` made without an address, in tests of other checks)."""

    origins: frozenset[str] = frozenset()
    hosts: frozenset[str] | None = None

    @classmethod
    def of(cls, rest_addr: str, origins: Iterable[str] = (), hosts: Iterable[str] = ()) -> Site:
        """The site of an API listening on ``rest_addr`` (``host:port``) with the extra
        ``origins`` (as ``Settings.console_origins`` writes them) and the names it is served
        under (``Settings.rest_hosts``)."""
        listened, _port = split_address(rest_addr)
        named = frozenset(origins)
        served = {_name(h) for h in hosts} | {urlsplit(given).hostname or "" for given in named}
        served |= {_name(listened), _name(socket.gethostname())}
        return cls(named, frozenset(served - {""}))

    def host_refusal(self, request: web.Request) -> str | None:
        """Why a request naming another host than this site's is refused; None for any other.
        A request without a ``Host`` (HTTP/1.0, no browser sends one) names none, and one that
        names an address names no DNS name an attacker could point elsewhere."""
        given = request.headers.get("Host")
        if self.hosts is None or not given:
            return None
        name = _name(urlsplit(f"//{given}").hostname or "")
        if _loopback(name) or _address(name) or name in self.hosts:
            return None
        return (
            f"Host {given}: this API answers requests for this machine's names and addresses and "
            "the names in HEADRACE_REST_HOSTS only (a page on another name may have had its DNS "
            "point here); to reach it by that name, add it to HEADRACE_REST_HOSTS"
        )

    def cross_site(self, request: web.Request) -> bool:
        """Whether a browser says the request came from another origin's page than this site's:
        an ``Origin`` the site names is its own; else the browser's ``Sec-Fetch-Site`` (which it
        sets itself, whatever proxy rewrote the ``Host`` on the way); else its ``Origin`` against
        the host asked, or the one a proxy says was (``X-Forwarded-Host``, which a page of
        another site cannot add without the API's leave). A program sends neither, and is not
        one."""
        origin = request.headers.get("Origin")
        if origin and origin.lower() in self.origins:
            return False
        fetched_from = request.headers.get("Sec-Fetch-Site")
        if fetched_from:
            return fetched_from.strip().lower() not in ("same-origin", "none")
        if not origin or origin == "null":
            return origin == "null"
        netloc = urlsplit(origin).netloc.lower()
        forwarded = request.headers.get("X-Forwarded-Host", "").split(",")[0].strip().lower()
        return netloc not in (request.host.lower(), forwarded)


def log_in(response: web.StreamResponse, token: str) -> None:
    response.set_cookie(
        COOKIE,
        token,
        max_age=MAX_AGE_S,
        path="/",
        secure=True,
        httponly=True,
        samesite="Strict",
    )


def log_out(response: web.StreamResponse) -> None:
    response.del_cookie(COOKIE, path="/", secure=True, httponly=True, samesite="Strict")
