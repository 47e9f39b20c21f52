"""Bodies a page of any site can send: a form's content types.

A browser sends a page's form, or its script's ``fetch`` of these content types, to any site
without asking that site first (no CORS preflight), with whatever credential it holds for it.
An API that reads JSON refuses them (415, as Kafka Connect does), so that a change cannot be
asked for by another site's page whatever the browser says of where it comes from.
"""

from __future__ import annotations

from aiohttp import web

FORM_TYPES = frozenset({"application/x-www-form-urlencoded", "multipart/form-data", "text/plain"})


def refuse_form_body(request: web.Request) -> None:
    """Raises 415 for a body sent as a form's, naming its content type."""
    if request.content_type in FORM_TYPES:
        raise web.HTTPUnsupportedMediaType(
            reason=f"Content-Type {request.content_type} is not read here: send the body as "
            "application/json"
        )
