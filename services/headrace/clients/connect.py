"""Kafka Connect's REST API, as a client calls it of either side: a Connect cluster, or
headrace, which answers the same API. The one client of it: a migration's, and the
benchmarks', which drive both systems through it.

The calls a migration needs by name: a connector's config, status and offsets (KIP-875), the
validation of a config, the plugins, and create (STOPPED, KIP-980, or not), stop, resume, alter
offsets and delete; any other through :meth:`ConnectApi.call`. A call answered 409 while a
distributed group rebalances is made again, as Connect tells its clients to. A call that fails
raises :class:`RestError` with the side's name, the call and the message the side answered; a
connector that does not exist reads as None. :class:`BlockingConnect` makes the same calls for
callers without an event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import ssl
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import quote

import aiohttp
import aiohttp.abc

from headrace.sdk import network

CALL_TIMEOUT_S = 60.0
MAX_ANSWER_BYTES = 64 * 1024 * 1024
"""The most of one answer a migration reads: a side that sends more is no Kafka Connect."""
MAX_MESSAGE_CHARS = 2000
"""The most of a side's error message a migration quotes."""
JSON = {"Content-Type": "application/json", "Accept": "application/json"}
REBALANCE_RETRY_S = 60.0
"""How long a call answered 409 is tried again: a distributed Connect worker answers so while
its group rebalances, and its own clients are told to retry."""
REBALANCE_PAUSE_S = 0.25
"""The pause before each such call again."""


class RestError(Exception):
    """A call one side refused, or could not answer."""

    def __init__(self, side: str, call: str, status: int | None, message: str) -> None:
        answered = f"answered {status}: " if status is not None else ""
        super().__init__(f"{side}: {call}: {answered}{message}")
        self.status = status


@dataclass(frozen=True)
class Side:
    """One side of a migration: ``name`` says which in every message."""

    name: str
    url: str = field(repr=False)  # may hold credentials
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    ssl: ssl.SSLContext | None = None
    socket: str | None = None  # a Unix socket to reach ``url`` through


@dataclass(frozen=True)
class Status:
    """A connector's state and its tasks' (Connect's ``/status``)."""

    state: str
    tasks: tuple[str, ...]
    trace: str = ""
    taskless: bool = False  # RUNNING, with no task to run (its task configs are none)

    @property
    def stopped(self) -> bool:
        """STOPPED, with no task left (a stop is over once its tasks are gone)."""
        return self.state == "STOPPED" and not self.tasks

    @property
    def running(self) -> bool:
        """RUNNING with every task RUNNING, and at least one unless it has none to run (a
        MirrorMaker connector with nothing to mirror)."""
        if self.state != "RUNNING":
            return False
        return set(self.tasks) == {"RUNNING"} if self.tasks else self.taskless


def _status(body: Mapping[str, Any]) -> Status:
    connector = body.get("connector", {})
    tasks = body.get("tasks", [])
    traces = [str(t["trace"]) for t in [connector, *tasks] if t.get("trace")]
    return Status(
        str(connector.get("state", "")),
        tuple(str(t.get("state", "")) for t in tasks),
        traces[0] if traces else "",
    )


def basic_auth(user: str, password: str) -> dict[str, str]:
    """The header that carries basic auth's ``user`` and ``password``."""
    return {"Authorization": aiohttp.encode_basic_auth(user, password)}


class ConnectApi:
    """The calls to one side, over ``session``. A call answered 409 while the side's group
    rebalances is made again after ``retry_pause_s``, with ``on_retry`` called first, for up to
    ``REBALANCE_RETRY_S``."""

    def __init__(
        self,
        side: Side,
        session: aiohttp.ClientSession,
        *,
        retry_pause_s: float = REBALANCE_PAUSE_S,
        on_retry: Callable[[], None] = lambda: None,
    ) -> None:
        self.side = side
        self._session = session
        self._retry_pause_s = retry_pause_s
        self._on_retry = on_retry

    @property
    def name(self) -> str:
        return self.side.name

    async def call(
        self, method: str, path: str, body: object = None, *, missing_ok: bool = False
    ) -> Any:
        """One call: its JSON answer (None for an empty one, or for a 404 where ``missing_ok``
        allows)."""
        call = f"{method} {path}"
        deadline = asyncio.get_running_loop().time() + REBALANCE_RETRY_S
        while True:
            try:
                async with self._session.request(
                    method,
                    self.side.url.rstrip("/") + path,
                    json=body,
                    # Connect's Jersey answers 415 to a PUT without a content type, body or not.
                    headers={**JSON, **self.side.headers},
                    ssl=self.side.ssl if self.side.ssl is not None else True,
                    timeout=aiohttp.ClientTimeout(total=CALL_TIMEOUT_S),
                    # Kafka Connect does not redirect its API: an answer that does may send a
                    # migration's credentials, and its calls, anywhere.
                    allow_redirects=False,
                ) as answer:
                    raw = await _bounded(answer.content)
                    status = answer.status
            except (aiohttp.ClientError, TimeoutError) as exc:
                why = str(exc) or type(exc).__name__
                raise RestError(self.name, call, None, f"no answer: {why}") from None
            if raw is None:
                raise RestError(
                    self.name, call, status, f"answered more than {MAX_ANSWER_BYTES} bytes"
                )
            if 300 <= status < 400:
                raise RestError(self.name, call, status, "a redirect, which is not followed")
            if status == 404 and missing_ok:
                return None
            payload = _json(raw.decode("utf-8", errors="replace"))
            message = _error_message(payload) if status >= 400 else ""
            rebalancing = status == 409 and _rebalancing(message)
            if rebalancing and asyncio.get_running_loop().time() < deadline:
                self._on_retry()
                await asyncio.sleep(self._retry_pause_s)
                continue
            if status >= 400:
                raise RestError(self.name, call, status, message)
            return payload

    async def _read(self, kind: type, method: str, path: str, **options: Any) -> Any:
        """A call whose answer must be a JSON ``kind`` (None where ``missing_ok`` allows)."""
        found = await self.call(method, path, **options)
        if found is None and options.get("missing_ok"):
            return None
        if not isinstance(found, kind):
            raise RestError(self.name, f"{method} {path}", None, "answered something not JSON")
        return found

    async def names(self) -> list[str]:
        return sorted(str(n) for n in await self._read(list, "GET", "/connectors"))

    async def config(self, name: str) -> dict[str, str] | None:
        path = f"/connectors/{_path(name)}/config"
        found = await self._read(dict, "GET", path, missing_ok=True)
        return None if found is None else {str(k): str(v) for k, v in found.items()}

    async def kind(self, name: str) -> str | None:
        """``source`` or ``sink``; None for a connector that does not exist."""
        found = await self._read(dict, "GET", f"/connectors/{_path(name)}", missing_ok=True)
        return None if found is None else str(found.get("type", ""))

    async def status(self, name: str) -> Status | None:
        path = f"/connectors/{_path(name)}/status"
        found = await self._read(dict, "GET", path, missing_ok=True)
        if found is None:
            return None
        status = _status(found)
        if status.state == "RUNNING" and not status.tasks:
            # Tasks not started yet, or none to start: its task configs tell which.
            configs = await self._read(list, "GET", path.removesuffix("/status") + "/tasks")
            status = replace(status, taskless=not configs)
        return status

    async def offsets(self, name: str) -> list[dict[str, Any]]:
        """KIP-875's entries: ``partition`` and ``offset`` each."""
        found = await self._read(dict, "GET", f"/connectors/{_path(name)}/offsets")
        return list(found.get("offsets", []))

    async def plugins(self) -> list[dict[str, Any]]:
        """Each connector plugin: ``class``, ``type``, ``version``."""
        return list(await self._read(list, "GET", "/connector-plugins?connectorsOnly=true"))

    async def validate(self, plugin: str, config: Mapping[str, str]) -> dict[str, Any]:
        path = f"/connector-plugins/{_path(plugin)}/config/validate"
        found: dict[str, Any] = await self._read(dict, "PUT", path, body=dict(config))
        return found

    async def create(
        self, name: str, config: Mapping[str, str], initial_state: str | None = None
    ) -> None:
        body: dict[str, object] = {"name": name, "config": dict(config)}
        if initial_state is not None:
            body["initial_state"] = initial_state
        await self.call("POST", "/connectors", body)

    async def create_stopped(self, name: str, config: Mapping[str, str]) -> None:
        await self.create(name, config, "STOPPED")

    async def stop(self, name: str) -> None:
        await self.call("PUT", f"/connectors/{_path(name)}/stop")

    async def resume(self, name: str) -> None:
        await self.call("PUT", f"/connectors/{_path(name)}/resume")

    async def pause(self, name: str) -> None:
        await self.call("PUT", f"/connectors/{_path(name)}/pause")

    async def reset_offsets(self, name: str) -> None:
        """KIP-875's reset, on a STOPPED connector: every offset it had is forgotten."""
        await self.call("DELETE", f"/connectors/{_path(name)}/offsets")

    async def alter_offsets(self, name: str, offsets: list[dict[str, Any]]) -> None:
        await self.call("PATCH", f"/connectors/{_path(name)}/offsets", {"offsets": offsets})

    async def install_plugin(self, coordinate: str) -> None:
        """headrace's own: a Java plugin installed for the whole cluster (``POST
        /admin/plugins``); one installed already is taken as it is."""
        try:
            await self.call("POST", "/admin/plugins", {"coordinate": coordinate})
        except RestError as exc:
            if exc.status != 409:
                raise

    async def delete(self, name: str) -> None:
        await self.call("DELETE", f"/connectors/{_path(name)}")


def _rebalancing(message: str) -> bool:
    """Whether a 409 says the group is rebalancing (to try again), not a conflict such as a
    connector that already exists."""
    said = message.lower()
    return any(m in said for m in ("rebalance", "stale configuration", "momentarily"))


def _path(segment: str) -> str:
    return quote(segment, safe="")


def _json(text: str) -> Any:
    try:
        return json.loads(text) if text.strip() else None
    except json.JSONDecodeError:
        return None


async def _bounded(content: aiohttp.StreamReader) -> bytes | None:
    """The whole answer, or None past ``MAX_ANSWER_BYTES`` (the rest left unread)."""
    chunks, total = [], 0
    async for chunk in content.iter_chunked(1 << 16):
        total += len(chunk)
        if total > MAX_ANSWER_BYTES:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def _error_message(payload: Any) -> str:
    """What a side's error answer says, when it is Kafka Connect's error body (an
    ``error_code`` and a ``message``); nothing of any other answer: a URL may name a server
    that is no Connect, and what it answers is not for the migration's caller to read."""
    if not isinstance(payload, dict) or not isinstance(payload.get("error_code"), int):
        return "not Kafka Connect's error body"
    message = payload.get("message")
    if not isinstance(message, str):
        return "not Kafka Connect's error body"
    return message[:MAX_MESSAGE_CHARS]


class GuardedResolver(aiohttp.abc.AbstractResolver):
    """Names resolved as aiohttp resolves them, refused when any address is one the address
    guard keeps every connection from (``sdk.network``: a cloud metadata service, a link-local
    address), checked as the connection is made, so a name pointed there after the request was
    checked is refused too."""

    def __init__(self) -> None:
        self._inner = aiohttp.ThreadedResolver()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[aiohttp.abc.ResolveResult]:
        found = await self._inner.resolve(host, port, family)
        for each in found:
            refused = network.refused_address(each["host"])
            if refused is not None:
                raise OSError(f"{host} may not be reached: it resolves to {refused}")
        return found

    async def close(self) -> None:
        await self._inner.close()


@contextlib.asynccontextmanager
async def session(side: Side, **options: Any) -> AsyncIterator[ConnectApi]:
    """The calls to ``side``, over a session of their own: its Unix socket, if it has one,
    else TCP to addresses the address guard allows, checked as each name is resolved.
    ``options`` go to :class:`ConnectApi`."""
    connector: aiohttp.BaseConnector = (
        aiohttp.UnixConnector(path=side.socket)
        if side.socket
        else aiohttp.TCPConnector(resolver=GuardedResolver())
    )
    async with aiohttp.ClientSession(connector=connector) as client:
        yield ConnectApi(side, client, **options)


class BlockingConnect:
    """:class:`ConnectApi`'s calls for a caller without an event loop: each call run to its end
    on a loop and a session kept until :meth:`close`. ``options`` go to :class:`ConnectApi`."""

    def __init__(self, side: Side, **options: Any) -> None:
        self._runner = asyncio.Runner()
        self._session = session(side, **options)
        self._api: ConnectApi = self._runner.run(self._session.__aenter__())

    def call(self, method: str, path: str, body: object = None, **options: Any) -> Any:
        """:meth:`ConnectApi.call`, waited for."""
        return self._runner.run(self._api.call(method, path, body, **options))

    def create(self, name: str, config: Mapping[str, str]) -> None:
        """:meth:`ConnectApi.create`, waited for."""
        self._runner.run(self._api.create(name, config))

    def delete(self, name: str) -> None:
        """:meth:`ConnectApi.delete`, waited for."""
        self._runner.run(self._api.delete(name))

    def close(self) -> None:
        self._runner.run(self._session.__aexit__(None, None, None))
        self._runner.close()
