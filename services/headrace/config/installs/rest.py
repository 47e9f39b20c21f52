"""The cluster's Java plugin installs on the REST API (headrace's own; Connect has none):

| call | answer |
| --- | --- |
| ``GET /admin/plugins`` | 200, every plugin installed for the cluster |
| ``POST /admin/plugins`` ``{"coordinate": "g:a:v", "sha512": "..."}`` | 201, the install |
| ``DELETE /admin/plugins/{coordinate}`` | 204; 404 when not installed, 409 while in use |

Changes need the admin role, as every change does (``headrace.core.security.auth``)."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from headrace.config.installs.installs import Install, PluginInstalls
from headrace.config.rest import BadRequest, _json_body


def install_json(install: Install) -> dict[str, Any]:
    return {
        "coordinate": install.coordinate,
        "sha512": install.plugin.sha512,
        "installed_at_ms": install.plugin.at_ms,
        "plugins": [
            {"class": p.class_name, "type": p.type, "version": p.version} for p in install.holds
        ],
    }


def routes(installs: PluginInstalls) -> list[web.RouteDef]:
    async def listed(request: web.Request) -> web.Response:
        return web.json_response([install_json(i) for i in installs.listed()])

    async def install(request: web.Request) -> web.Response:
        body = await _json_body(request)
        if not isinstance(body, dict) or not isinstance(body.get("coordinate"), str):
            raise BadRequest('the body must be {"coordinate": "group:artifact:version"}')
        unknown = sorted(set(body) - {"coordinate", "sha512"})
        if unknown:
            raise BadRequest(f"unknown field {unknown[0]!r}: only coordinate and sha512")
        sha512 = body.get("sha512")
        if sha512 is not None and not isinstance(sha512, str):
            raise BadRequest("sha512 must be a string of 128 hex digits")
        done = await installs.install(body["coordinate"], sha512 or None)
        return web.json_response(install_json(done), status=201)

    async def uninstall(request: web.Request) -> web.Response:
        await installs.uninstall(request.match_info["coordinate"])
        return web.Response(status=204)

    return [
        web.get("/admin/plugins", listed),
        web.post("/admin/plugins", install),
        web.delete("/admin/plugins/{coordinate}", uninstall),
    ]
