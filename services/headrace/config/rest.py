"""Kafka Connect's REST API, on the config service's commands: the same paths, methods, JSON
bodies and status codes as Connect 4.1, so an operator's existing tooling works unchanged.

Every handler is a thin edge: it parses JSON, calls the one command the gRPC API and the command
topic also call, and renders the answer in Connect's shape. Errors are Connect's
``{"error_code": N, "message": "..."}``: 400 for bad input or a call the connector's state does
not allow, 404 for what does not exist, 409 for a name taken, 500 for anything unexpected
(logged with its trace). A malformed request never reaches a command. With auth on
(``headrace.core.security.auth``), a request without credentials gets 401 and one whose role is too
low 403, in the same shape: ``GET /health`` needs none, the other reads and the validate call the
read role, every change admin.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import Any
from urllib.parse import quote

from aiohttp import web
from aiohttp.typedefs import Middleware

from headrace.config.commands import Commands
from headrace.config.commands.restarts import RestartPlan
from headrace.config.commands.views import ConnectorView
from headrace.config.console import app as console
from headrace.config.console import session
from headrace.config.offsets import ConnectorOffset, modified
from headrace.config.validation import ConfigRejected, Problem
from headrace.core.model.autorestart import Shown
from headrace.core.model.configinfo import config_infos_json, key_json
from headrace.core.model.status import StatusState, UnitStatus
from headrace.core.model.structs import State, Target, WorkUnit
from headrace.core.observability import log
from headrace.core.security import auth, forms, tls

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

STATUS = {
    Problem.INVALID: 400,
    Problem.NO_PLUGIN: 400,
    Problem.PRECONDITION: 400,
    Problem.NOT_FOUND: 404,
    Problem.CONFLICT: 409,
    Problem.UNAUTHENTICATED: 403,  # as Connect answers a badly signed internal request
    Problem.FORBIDDEN: 403,  # topic tracking turned off, as Connect answers it
    Problem.UNAVAILABLE: 503,  # a check it needs could not be made (the executor starting)
    Problem.REFUSED: 500,  # as Connect answers a connector's alterOffsets that threw
}


class BadRequest(Exception):
    """A request this API cannot read: bad JSON, a body of the wrong shape, a bad parameter."""


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error_code": status, "message": message}, status=status)


@web.middleware
async def errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Every failure as Connect's error body; nothing but a bug is a 500."""
    try:
        return await handler(request)
    except ConfigRejected as exc:
        return _error(STATUS[exc.problem], exc.message)
    except BadRequest as exc:
        return _error(400, str(exc))
    except web.HTTPException as exc:  # no such path, or method (with the Allow header)
        response = _error(exc.status, exc.reason)
        if "Allow" in exc.headers:
            response.headers["Allow"] = exc.headers["Allow"]
        return response
    except Exception:  # noqa: BLE001 - answered as Connect answers a server error
        # The exception's text stays in the log: it may quote a config, a path or a secret.
        incident = uuid.uuid4().hex[:12]
        log.get().exception(
            "rest_request_failed", method=request.method, path=request.path, incident=incident
        )
        return _error(500, f"the config service failed; its log says why (incident {incident})")


def _not_a_number(constant: str) -> Any:
    raise ValueError(f"{constant} is not a JSON number")


def from_browsers(site: session.Site) -> Middleware:
    """Refuses (403) a request naming a host the site does not answer for, and a change a
    browser says comes from another site's page, whatever credential the browser sent with it
    by itself (``headrace.config.console.session``). Programs send no ``Origin`` or
    ``Sec-Fetch-Site``, and pass."""

    @web.middleware
    async def checked(request: web.Request, handler: Handler) -> web.StreamResponse:
        misdirected = site.host_refusal(request)
        if misdirected is not None:
            return _error(403, misdirected)
        if request.method not in session.SAFE and site.cross_site(request):
            return _error(
                403,
                f"{request.method} {request.path}: a change asked for by another site's page is "
                "refused; call the API from a program, or use the console from its own address "
                "(behind a proxy: its origin in HEADRACE_CONSOLE_ORIGINS)",
            )
        return await handler(request)

    return checked


async def _json_body(request: web.Request) -> Any:
    """The body's JSON, read as UTF-8 whatever charset the request names (JSON is UTF-8);
    BadRequest for anything that is not JSON: NaN and Infinity, or nesting past what the
    parser can hold, included. A body sent as a form's (``forms.FORM_TYPES``) is refused with 415,
    as Kafka Connect refuses it: another site's page can send those without a CORS check."""
    forms.refuse_form_body(request)
    raw = await request.read()
    try:
        return json.loads(raw.decode("utf-8") or "null", parse_constant=_not_a_number)
    except (ValueError, UnicodeDecodeError) as exc:  # JSONDecodeError is a ValueError
        raise BadRequest(f"the request body is not JSON: {exc}") from None
    except RecursionError:
        raise BadRequest("the request body is not JSON this API reads: nested too deeply") from None


def _config_map(value: Any, what: str, *, nulls: bool = False) -> dict[str, str | None]:
    """A config object, its values as strings (Connect takes numbers and booleans as text)."""
    if not isinstance(value, dict):
        raise BadRequest(f"{what} must be a JSON object of config keys and values")
    out: dict[str, str | None] = {}
    for key, raw in value.items():
        if raw is None and nulls:
            out[key] = None
        elif isinstance(raw, bool):
            out[key] = "true" if raw else "false"
        elif isinstance(raw, str | int | float):
            out[key] = str(raw)
        else:
            kind = "null" if raw is None else type(raw).__name__
            raise BadRequest(f"{what}: the value of {key!r} must be a string, not {kind}")
    return out


def _strings(config: Mapping[str, str | None]) -> dict[str, str]:
    return {k: v for k, v in config.items() if v is not None}


def _flag(request: web.Request, name: str) -> bool:
    raw = request.query.get(name, "false").strip().lower()
    if raw not in ("true", "false"):
        raise BadRequest(f"{name} must be true or false, not {raw!r}")
    return raw == "true"


def _task(request: web.Request) -> int:
    raw = request.match_info["task"]
    try:
        return int(raw)
    except ValueError:
        raise ConfigRejected(Problem.NOT_FOUND, f"task {raw!r} not found") from None


def _location(name: str) -> dict[str, str]:
    """Where a created connector is, as Connect's answer to a create says it."""
    return {"Location": f"/connectors/{quote(name, safe='')}"}


def info_json(view: ConnectorView) -> dict[str, Any]:
    return {
        "name": view.name,
        "config": dict(view.config),
        "tasks": [{"connector": view.name, "task": i} for i in range(len(view.tasks))],
        "type": view.type,
    }


def _state(
    status: UnitStatus | None, restarting: bool, auto: Shown | None = None
) -> dict[str, Any]:
    if status is None:
        out: dict[str, Any] = {"state": State.UNASSIGNED.value, "worker_id": ""}
    else:
        out = {"state": status.state.value, "worker_id": status.worker_id}
        if status.trace:
            out["trace"] = status.trace
        if status.plugin_version:
            out["version"] = status.plugin_version
    if restarting:
        out["state"] = State.RESTARTING.value
    if auto is not None and status is not None:  # headrace's own, beside Connect's fields
        out["auto_restart"] = {
            "attempts": auto.attempts,
            "next_ms": auto.next_ms or None,
            "given_up": auto.given_up,
        }
    return out


def status_json(
    view: ConnectorView,
    statuses: StatusState,
    plan: RestartPlan | None = None,
    auto: Mapping[int, Shown] | None = None,
) -> dict[str, Any]:
    """Connect's ConnectorStateInfo; the units of a restart plan show RESTARTING; with
    ``auto``, each unit's automatic restarts."""
    planned = set(plan.units) if plan is not None else set()
    shown = auto or {}
    unit = WorkUnit.of(view.name)
    return {
        "name": view.name,
        "connector": _state(statuses.get(unit), unit.task in planned, shown.get(unit.task)),
        "tasks": [
            {
                "id": i,
                **_state(statuses.get(WorkUnit(view.name, i)), i in planned, shown.get(i)),
            }
            for i in range(len(view.tasks))
        ],
        "type": view.type,
    }


def _offsets_json(entries: list[ConnectorOffset]) -> dict[str, Any]:
    return {
        "offsets": [
            {"partition": dict(e.partition), "offset": None if e.offset is None else dict(e.offset)}
            for e in entries
        ]
    }


def _offsets_body(body: Any) -> list[ConnectorOffset]:
    entries = body.get("offsets") if isinstance(body, dict) else None
    if not isinstance(entries, list):
        raise BadRequest('the body must be {"offsets": [{"partition": {...}, "offset": {...}}]}')
    parsed = []
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("partition"), dict):
            raise BadRequest("each entry of offsets needs a partition object")
        offset = entry.get("offset")
        if offset is not None and not isinstance(offset, dict):
            raise BadRequest("each offset must be an object or null")
        parsed.append(ConnectorOffset(entry["partition"], offset))
    return parsed


OFFSETS_ALTERED = "The offsets for this connector have been altered successfully"

HEALTH_TIMEOUT_S = 10.0
"""How long ``/health`` waits for the service to catch up with its configs topic: Connect's own
bound on its health check."""


class ConnectApi:
    """The handlers, over the service's commands."""

    def __init__(self, commands: Commands, server_info: Callable[[], Awaitable[dict[str, str]]]):
        self.commands = commands
        self.server_info = server_info
        self.started = False
        """Set once the service has started: until then ``/health`` says it is starting."""

    def routes(self) -> list[web.RouteDef]:
        c = "/connectors/{connector}"
        return [
            web.get("/", self.root),
            web.get("/health", self.health),
            web.get("/connectors", self.list_connectors),
            web.post("/connectors", self.create),
            web.get(c, self.get),
            web.delete(c, self.delete),
            web.get(c + "/config", self.get_config),
            web.put(c + "/config", self.put_config),
            web.patch(c + "/config", self.patch_config),
            web.get(c + "/status", self.status),
            web.get(c + "/tasks", self.tasks),
            web.get(c + "/tasks/{task}/status", self.task_status),
            web.post(c + "/tasks/{task}/restart", self.restart_task),
            web.put(c + "/pause", self.pause),
            web.put(c + "/resume", self.resume),
            web.put(c + "/stop", self.stop),
            web.post(c + "/restart", self.restart),
            web.get(c + "/offsets", self.get_offsets),
            web.patch(c + "/offsets", self.alter_offsets),
            web.delete(c + "/offsets", self.reset_offsets),
            web.get("/connector-plugins", self.plugins),
            web.get("/connector-plugins/{plugin}/config", self.plugin_config),
            web.put("/connector-plugins/{plugin}/config/validate", self.validate),
            web.get("/admin/loggers", self.loggers),
            web.get("/admin/loggers/{logger}", self.logger),
            web.put("/admin/loggers/{logger}", self.set_logger),
            web.get(c + "/topics", self.topics),
            web.put(c + "/topics/reset", self.reset_topics),
        ]

    async def root(self, request: web.Request) -> web.Response:
        return web.json_response(await self.server_info())

    async def health(self, request: web.Request) -> web.Response:
        """KIP-1017's answers: 200 healthy, 503 while starting, 500 when the service cannot
        read its configs topic to its end within ``HEALTH_TIMEOUT_S``."""
        if not self.started:
            return web.json_response(
                {"status": "starting", "message": "The config service is still starting up."},
                status=503,
            )
        try:  # every answer is read from the configs topic, caught up to its end
            await asyncio.wait_for(self.commands.current(), HEALTH_TIMEOUT_S)
        except TimeoutError:
            message = (
                f"The config service could not read its configs topic to its end within "
                f"{HEALTH_TIMEOUT_S:g} s, and may be unable to handle other requests."
            )
            return web.json_response({"status": "unhealthy", "message": message}, status=500)
        return web.json_response(
            {"status": "healthy", "message": "The config service is ready to handle requests."}
        )

    async def list_connectors(self, request: web.Request) -> web.Response:
        expand = {v for e in request.query.getall("expand", []) for v in e.split(",")}
        if not expand & {"status", "info"}:
            return web.json_response(await self.commands.list())
        out: dict[str, dict[str, Any]] = {}
        for name, (view, statuses) in (await self.commands.every_status()).items():
            entry: dict[str, Any] = {}
            if "status" in expand:
                auto = self.commands.restarts.shown(name, statuses)
                entry["status"] = status_json(view, statuses, auto=auto)
            if "info" in expand:
                entry["info"] = info_json(view)
            out[name] = entry
        return web.json_response(out)

    async def create(self, request: web.Request) -> web.Response:
        body = await _json_body(request)
        if not isinstance(body, dict):
            raise BadRequest('the body must be {"name": ..., "config": {...}}')
        config = _strings(_config_map(body.get("config", {}), "config"))
        name = body.get("name", config.get("name"))
        if not isinstance(name, str):
            raise BadRequest("name: the connector's name is missing")
        name = name.strip()  # as Connect does
        initial = body.get("initial_state")
        target = None
        if initial is not None:
            try:
                target = Target(str(initial).upper())
            except ValueError:
                choices = ", ".join(t.value for t in Target)
                raise BadRequest(f"initial_state: {initial!r} is not one of {choices}") from None
        initial_offsets = body.get("initial_offsets")
        offsets = None if initial_offsets is None else _offsets_body(initial_offsets)
        view = await self.commands.create(name, config, target, offsets)
        answer = info_json(view)
        if offsets is not None:  # KIP-995: said only when offsets were given
            answer["offsets_status"] = {"message": OFFSETS_ALTERED}
        return web.json_response(answer, status=201, headers=_location(view.name))

    async def get(self, request: web.Request) -> web.Response:
        return web.json_response(
            info_json(await self.commands.get(request.match_info["connector"]))
        )

    async def delete(self, request: web.Request) -> web.Response:
        await self.commands.delete(request.match_info["connector"])
        return web.Response(status=204)

    async def get_config(self, request: web.Request) -> web.Response:
        view = await self.commands.get(request.match_info["connector"])
        return web.json_response(dict(view.config))

    async def put_config(self, request: web.Request) -> web.Response:
        config = _strings(_config_map(await _json_body(request), "the body"))
        view, created = await self.commands.put_config(request.match_info["connector"], config)
        if created:
            return web.json_response(info_json(view), status=201, headers=_location(view.name))
        return web.json_response(info_json(view))

    async def patch_config(self, request: web.Request) -> web.Response:
        changes = _config_map(await _json_body(request), "the body", nulls=True)
        removed = [k for k, v in changes.items() if v is None]
        view = await self.commands.patch(
            request.match_info["connector"], _strings(changes), removed
        )
        return web.json_response(info_json(view))

    async def status(self, request: web.Request) -> web.Response:
        view, statuses = await self.commands.status(request.match_info["connector"])
        auto = self.commands.restarts.shown(view.name, statuses)
        return web.json_response(status_json(view, statuses, auto=auto))

    async def tasks(self, request: web.Request) -> web.Response:
        view = await self.commands.get(request.match_info["connector"])
        return web.json_response(
            [
                {"id": {"connector": view.name, "task": i}, "config": dict(config)}
                for i, config in enumerate(view.tasks)
            ]
        )

    async def task_status(self, request: web.Request) -> web.Response:
        name, task = request.match_info["connector"], _task(request)
        _, statuses = await self.commands.task_status(name, task)
        return web.json_response({"id": task, **_state(statuses.get(WorkUnit(name, task)), False)})

    async def restart_task(self, request: web.Request) -> web.Response:
        await self.commands.restarts.task(request.match_info["connector"], _task(request))
        return web.Response(status=204)

    async def pause(self, request: web.Request) -> web.Response:
        await self.commands.pause(request.match_info["connector"])
        return web.Response(status=202)

    async def resume(self, request: web.Request) -> web.Response:
        await self.commands.resume(request.match_info["connector"])
        return web.Response(status=202)

    async def stop(self, request: web.Request) -> web.Response:
        await self.commands.stop(request.match_info["connector"])
        return web.Response(status=204)

    async def restart(self, request: web.Request) -> web.Response:
        include_tasks, only_failed = _flag(request, "includeTasks"), _flag(request, "onlyFailed")
        view, statuses, plan = await self.commands.restarts.restart(
            request.match_info["connector"], include_tasks=include_tasks, only_failed=only_failed
        )
        if not include_tasks and not only_failed:
            return web.Response(status=204)  # Connect's answer to a plain restart: no body
        return web.json_response(status_json(view, statuses, plan), status=202)

    async def get_offsets(self, request: web.Request) -> web.Response:
        found = await self.commands.connector_offsets.read(request.match_info["connector"])
        return web.json_response(_offsets_json(list(found)))

    async def alter_offsets(self, request: web.Request) -> web.Response:
        entries = _offsets_body(await _json_body(request))
        handled = await self.commands.connector_offsets.alter(
            request.match_info["connector"], entries
        )
        return web.json_response({"message": modified(handled, reset=False)})

    async def reset_offsets(self, request: web.Request) -> web.Response:
        handled = await self.commands.connector_offsets.reset(request.match_info["connector"])
        return web.json_response({"message": modified(handled, reset=True)})

    async def plugins(self, request: web.Request) -> web.Response:
        connectors_only = request.query.get("connectorsOnly", "true").strip().lower()
        if connectors_only not in ("true", "false"):
            raise BadRequest(f"connectorsOnly must be true or false, not {connectors_only!r}")
        listed = self.commands.plugin_calls.listed(connectors_only=connectors_only == "true")
        return web.json_response(
            [
                {"class": p.class_name, "type": p.type, "version": p.version}
                for p in listed
                if not p.error  # Connect lists what it can load; the others are in its log
            ]
        )

    async def plugin_config(self, request: web.Request) -> web.Response:
        version = request.query.get("version", "latest").strip()
        try:
            keys = await self.commands.plugin_calls.config_keys(
                request.match_info["plugin"], None if version in ("", "latest") else version
            )
        except ConfigRejected as exc:
            if exc.problem is Problem.NO_PLUGIN:  # the path names what is not there
                raise ConfigRejected(Problem.NOT_FOUND, exc.message) from None
            raise
        return web.json_response([key_json(k) for k in keys])

    async def validate(self, request: web.Request) -> web.Response:
        config = _strings(_config_map(await _json_body(request), "the body"))
        infos = await self.commands.plugin_calls.validate(request.match_info["plugin"], config)
        return web.json_response(config_infos_json(infos))

    async def loggers(self, request: web.Request) -> web.Response:
        return web.json_response(log.levels())

    async def logger(self, request: web.Request) -> web.Response:
        name = request.match_info["logger"]
        if not log.exists(name):  # asking makes no logger, as in Connect
            # In the body, not the status line: a name may hold what a status line may not.
            return _error(404, f"Logger {name} not found.")
        return web.json_response(log.level_of(name))

    async def set_logger(self, request: web.Request) -> web.Response:
        body = await _json_body(request)
        scope = request.query.get("scope", "worker").strip().lower()
        if scope not in ("worker", "cluster"):
            raise BadRequest(f"scope must be worker or cluster, not {scope!r}")
        level = body.get("level") if isinstance(body, dict) else None
        if not isinstance(level, str) or level.upper() not in log.LEVELS:
            known = ", ".join(log.LEVELS)
            raise BadRequest(f'the body must be {{"level": ...}}, one of {known}; not {body!r}')
        name = request.match_info["logger"]
        if scope == "cluster":  # KIP-976: every service and plugin process, as Connect answers
            await self.commands.set_cluster_log_level(name, level)
            return web.Response(status=204)
        try:
            return web.json_response(log.set_asked(name, level))
        except ValueError as exc:
            raise BadRequest(str(exc)) from None
        except LookupError as exc:
            return _error(409, str(exc))

    async def topics(self, request: web.Request) -> web.Response:
        name = request.match_info["connector"]
        return web.json_response({name: {"topics": await self.commands.topics.of(name)}})

    async def reset_topics(self, request: web.Request) -> web.Response:
        await self.commands.topics.reset(request.match_info["connector"])
        return web.Response(status=202)


def guarded(policy: auth.Policy) -> Middleware:
    """The role check (``headrace.core.security.auth``): 401 without credentials this service knows
    (a bearer token, the console's login cookie, or under mTLS a certificate with a role), 403
    with too low a role or a change from the console without its CSRF header; in Connect's
    error body, and before the request reaches a handler. The console's page, asked for without
    credentials, is its login form."""

    @web.middleware
    async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
        need = auth.rest_need(request.method, request.path)
        given = session.credential(request)
        # What needs no role takes no credential, so nothing can be forged with the cookie.
        forged = None if need is auth.Need.OPEN else session.csrf_refusal(request, given)
        if forged is not None:
            return _error(403, forged)
        transport = request.transport
        peer = transport.get_extra_info("peercert") if transport is not None else None
        refused = policy.refusal(
            f"{request.method} {request.path}",
            need,
            given.authorization,
            tls.peer_common_name(peer),
        )
        if refused is None:
            return await handler(request)
        if refused.authenticated:
            return _error(403, refused.message)
        if console.wants_page(request):
            return console.login_page(refused.message, 401)
        response = _error(401, refused.message)
        response.headers["WWW-Authenticate"] = "Bearer"
        return response

    return guard


def app(
    api: ConnectApi, policy: auth.Policy | None = None, site: session.Site | None = None
) -> web.Application:
    """The API's application; every request checked against ``policy`` when auth is on, and
    browsers' against ``site`` (by default: any host, and changes from the API's own origin)."""
    middlewares: list[Middleware] = [errors, from_browsers(site or session.Site())]
    if policy is not None:
        middlewares.append(guarded(policy))
    application = web.Application(middlewares=middlewares, client_max_size=8 * 1024 * 1024)
    application.add_routes(api.routes())
    return application
