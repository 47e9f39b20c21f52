"""The console's routes: its page and assets, the login form, and the documents the page reads
beside the REST API (the board, kept live over server-sent events; a connector's history; the
coordinators and their generations). Every one is behind the REST API's role check
(``headrace.config.rest.guarded``): the page, the assets and the login form need no role, the
documents the read role."""

from __future__ import annotations

import asyncio
import contextlib
import html
import time
from importlib import resources
from typing import Any

import orjson
from aiohttp import web

from headrace.config.commands import Commands
from headrace.config.console import board, cluster, session
from headrace.config.console.history import StateHistory
from headrace.config.console.lag import SinkLag
from headrace.config.store import ConfigStore
from headrace.core.model.configstate import (
    ConfigEvent,
    ConfigState,
)
from headrace.core.model.offsets import sink_group_id
from headrace.core.model.structs import WorkUnit
from headrace.core.security import auth, secrets, tls
from headrace.core.security.secrets import mask_text
from headrace.core.settings import Settings

STATIC = resources.files(__package__) / "static"
ASSETS = {"console.js": "text/javascript", "console.css": "text/css", "logo.svg": "image/svg+xml"}
# Changes that land within this of each other are sent as one board.
COALESCE_S = 0.2
# A comment line this often keeps an idle event stream open through proxies.
KEEP_ALIVE_S = 15.0
# How often a watched board is sent again for its sinks' lag, when nothing else changed.
LAG_EVERY_S = 5.0
GENERATIONS = 10
# The page's own script and style only, from this origin, in no frame: what the page shows of
# a config or a trace can never run as script.
PAGE_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def _page(name: str) -> str:
    return (STATIC / name).read_text()


def login_page(message: str = "", status: int = 200) -> web.Response:
    """The login form, with ``message`` above it."""
    shown = f'<p class="error" role="alert">{html.escape(message)}</p>' if message else ""
    text = _page("login.html").replace("<!--message-->", shown)
    return web.Response(text=text, status=status, content_type="text/html", headers=PAGE_HEADERS)


def wants_page(request: web.Request) -> bool:
    """A browser asking for the console's page (given the login form when it has no role)."""
    return request.method == "GET" and request.path in ("/ui", "/ui/")


class Console:
    """The console over the config service's commands, watching the store it reads from its
    making (after the store's replay: the histories begin with what that found)."""

    def __init__(self, commands: Commands, store: ConfigStore, settings: Settings) -> None:
        self.commands = commands
        self.store = store
        self.settings = settings
        self.policy: auth.Policy | None = None
        self.site = session.Site()  # where browsers reach it: set with the policy, when served
        self.history = StateHistory(lambda: store.statuses.state, self._units_of)
        self.lag = SinkLag(settings)
        self._version = 0
        self._changed = asyncio.Event()
        self._closing = False
        store.watchers.append(self._config_seen)
        store.statuses.watchers.append(self._status_seen)

    def _units_of(self, name: str) -> list[WorkUnit]:
        tasks = len(self.store.configs.tasks_of(name))
        return [WorkUnit.of(name), *(WorkUnit(name, i) for i in range(tasks))]

    def _config_seen(self, event: ConfigEvent, before: ConfigState) -> None:
        self.history.configured(event, before)
        self._change()

    def _status_seen(self, event: Any, record: Any) -> None:
        self.history.seen(event, record)
        self._change()

    def _change(self) -> None:
        self._version += 1
        self._changed.set()

    def routes(self) -> list[web.RouteDef]:
        return [
            web.get("/ui", self.to_page),
            web.get("/ui/", self.page),
            web.get("/ui/static/{asset}", self.asset),
            web.get("/ui/login", self.login_form),
            web.post("/ui/login", self.login),
            web.post("/ui/logout", self.logout),
            web.get("/ui/api/session", self.session),
            web.get("/ui/api/board", self.board),
            web.get("/ui/api/events", self.events),
            web.get("/ui/api/connectors/{connector}/history", self.connector_history),
            web.get("/ui/api/cluster", self.cluster),
        ]

    async def to_page(self, request: web.Request) -> web.Response:
        return _redirect("/ui/", 308)

    async def page(self, request: web.Request) -> web.Response:
        return web.Response(
            text=_page("index.html"), content_type="text/html", headers=PAGE_HEADERS
        )

    async def asset(self, request: web.Request) -> web.Response:
        name = request.match_info["asset"]
        if name not in ASSETS:  # a fixed set: no path from a request reaches the disk
            raise web.HTTPNotFound(reason=f"the console has no asset {name}")
        return web.Response(
            body=(STATIC / name).read_bytes(),
            content_type=ASSETS[name],
            headers={"X-Content-Type-Options": "nosniff", "Cache-Control": "no-cache"},
        )

    async def login_form(self, request: web.Request) -> web.Response:
        if self.policy is None:
            return _redirect("/ui/")
        return login_page()

    async def login(self, request: web.Request) -> web.Response:
        """Takes a token from the form; sets the cookie for a read or admin one."""
        if self.policy is None:
            return _redirect("/ui/")
        if self.site.cross_site(request):
            return login_page("A login from another site's page is refused.", 403)
        token = str((await request.post()).get("token", "")).strip()
        role = self.policy.role_of(token) if token else None
        if role is None:
            return login_page("That token is not known.", 401)
        if role not in (auth.READ, auth.ADMIN):
            return login_page(
                f"A {role} token cannot use the console: give a read or admin one.", 403
            )
        response = _redirect("/ui/")
        session.log_in(response, token)
        return response

    async def logout(self, request: web.Request) -> web.Response:
        response = _redirect("/ui/login" if self.policy is not None else "/ui/")
        session.log_out(response)
        return response

    async def session(self, request: web.Request) -> web.Response:
        """Who the page acts as: its role (every action when auth is off), and the value its
        changes carry against CSRF."""
        if self.policy is None:
            return web.json_response({"auth": False, "role": auth.ADMIN, "csrf": ""})
        given = session.credential(request)
        token = auth.bearer_token(given.authorization) or ""
        transport = request.transport
        peer = transport.get_extra_info("peercert") if transport is not None else None
        roles = {
            self.policy.role_of(token) if token else None,
            self.policy.common_names.get(tls.peer_common_name(peer) or ""),
        }
        return web.json_response(
            {
                "auth": True,
                "role": auth.ADMIN if auth.ADMIN in roles else auth.READ,  # the guard let it read
                "csrf": session.csrf_token(token) if given.from_cookie else "",
            }
        )

    async def board_json(self) -> dict[str, Any]:
        """Every connector's row, and what runs on each worker, as the folds have them now."""
        configs, statuses = self.store.configs, self.store.statuses.state
        secret_values = {
            name: await self.commands.secret_values(configs.connectors[name])
            for name in board.failing(configs, statuses)
        }
        sinks = {
            name: sink_group_id(self.settings.cluster, name, config)
            for name, config in configs.connectors.items()
            if self.commands.type_of(config) == "sink"
        }
        return {
            "connectors": board.connector_rows(
                configs,
                statuses,
                self.commands.type_of,
                self.commands.plugin_of,
                await self.lag.of(sinks),
                secret_values,
            ),
            "workers": board.workers(statuses),
            "at_ms": int(time.time() * 1000),
        }

    async def board(self, request: web.Request) -> web.Response:
        return web.json_response(await self.board_json(), dumps=_dumps)

    async def events(self, request: web.Request) -> web.StreamResponse:
        """The board, sent anew whenever a config or a status changes (changes within
        :data:`COALESCE_S` as one), and every :data:`LAG_EVERY_S` for the sinks' lag."""
        response = web.StreamResponse(
            headers={
                "Content-Type": "text/event-stream",
                "Cache-Control": "no-store",
                "X-Accel-Buffering": "no",
            }
        )
        await response.prepare(request)
        sent_at = float("-inf")
        sent: bytes = b""
        seen = -1
        loop = asyncio.get_running_loop()
        with contextlib.suppress(ConnectionResetError):
            while not self._closing:
                if seen != self._version or loop.time() - sent_at >= LAG_EVERY_S:
                    seen = self._version
                    payload = orjson.dumps(await self.board_json())
                    sent_at = loop.time()
                    if payload != sent:  # the same board twice is not sent
                        await response.write(b"event: board\ndata: " + payload + b"\n\n")
                        sent = payload
                if not await self._wait_change(seen, min(KEEP_ALIVE_S, LAG_EVERY_S)):
                    await response.write(b": alive\n\n")
                    continue
                await asyncio.sleep(COALESCE_S)  # the rest of a burst of changes, as one
        return response

    async def _wait_change(self, seen: int, within_s: float) -> bool:
        """Whether the folds changed past ``seen`` (or the service began to stop) within
        ``within_s``."""
        while self._version == seen and not self._closing:
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), within_s)
            except TimeoutError:
                return False
        return True

    async def connector_history(self, request: web.Request) -> web.Response:
        name = request.match_info["connector"]
        config = self.store.configs.connectors.get(name)
        if config is None:
            raise web.HTTPNotFound(reason=f"Connector {name} not found")
        # An older trace may quote a secret of an older config: those of the configs it had
        # since this service started, and every secret this process has seen, are hidden too.
        hidden = [*secrets.registered()]
        for seen in (*self.history.earlier_configs(name), config):
            hidden += await self.commands.secret_values(seen)
        return web.json_response(
            [
                {
                    "at_ms": c.at_ms,
                    "unit": board.unit_name(c.unit),
                    "state": c.state,
                    "worker": c.worker,
                    "trace": mask_text(board.first_line(c.trace), hidden),
                }
                for c in self.history.of(name)
            ]
        )

    async def cluster(self, request: web.Request) -> web.Response:
        given = session.credential(request)
        view = await cluster.coordinators(self.settings, given.authorization, GENERATIONS)
        return web.json_response(view)

    async def shutdown(self, app: web.Application) -> None:
        """Ends the event streams as the REST server stops: it would otherwise wait for them."""
        self._closing = True
        self._changed.set()

    async def close(self) -> None:
        await self.lag.close()


def _redirect(location: str, status: int = 303) -> web.Response:
    """A redirect answered, not raised: raised, the REST API would answer it as an error."""
    return web.Response(status=status, headers={"Location": location})


def _dumps(value: Any) -> str:
    return orjson.dumps(value).decode()
