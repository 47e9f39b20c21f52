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
(:func:`cross_site`), whatever it carries, and a JSON body sent as a form's content type.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from urllib.parse import urlsplit

from aiohttp import web

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


def cross_site(request: web.Request) -> bool:
    """Whether a browser says the request came from another origin's page: its
    ``Sec-Fetch-Site`` (which it sets itself, whatever proxy rewrote the ``Host`` on the way),
    else its ``Origin`` against the host asked. A program sends neither, and is not one."""
    fetched_from = request.headers.get("Sec-Fetch-Site")
    if fetched_from:
        return fetched_from.strip().lower() not in ("same-origin", "none")
    origin = request.headers.get("Origin")
    if not origin or origin == "null":
        return origin == "null"
    return urlsplit(origin).netloc != request.host


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
