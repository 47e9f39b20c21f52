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
and, listening on a loopback address, every request naming a host that is not this machine
(:meth:`Site.host_refusal`).
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
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


@dataclass(frozen=True)
class Site:
    """Where browsers reach the REST API and the console.

    ``origins``: pages besides the API's own address that may make changes (a proxy's public
    address, ``HEADRACE_CONSOLE_ORIGINS``). ``hosts``: when the API listens on a loopback
    address only, the host names a request may name: a page whose name an attacker's DNS
    points at 127.0.0.1 afterwards (DNS rebinding) is then its own origin, and only its
    ``Host`` tells it apart. None: any, as for an API listening on a network address, which
    cannot know its names."""

    origins: frozenset[str] = frozenset()
    hosts: frozenset[str] | None = None

    @classmethod
    def of(cls, rest_addr: str, origins: Iterable[str] = ()) -> Site:
        """The site of an API listening on ``rest_addr`` (``host:port``) with the extra
        ``origins`` (as ``Settings.console_origins`` writes them)."""
        listened, _port = split_address(rest_addr)
        named = frozenset(origins)
        if not _loopback(listened):
            return cls(named)
        return cls(named, frozenset(urlsplit(given).hostname or "" for given in named))

    def host_refusal(self, request: web.Request) -> str | None:
        """Why a request naming another host than this site's is refused; None for any other.
        A request without a ``Host`` (HTTP/1.0, no browser sends one) names none."""
        given = request.headers.get("Host")
        if self.hosts is None or not given:
            return None
        name = urlsplit(f"//{given}").hostname or ""
        if _loopback(name) or name in self.hosts:
            return None
        return (
            f"Host {given}: this API listens on a loopback address and answers requests for "
            "localhost or a loopback address only (a page on another name may have had its "
            "DNS point here); to reach it by that name, add its origin to "
            "HEADRACE_CONSOLE_ORIGINS"
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
