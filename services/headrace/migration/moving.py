"""A migration as ``headrace migrate`` and the config service's API both run it: what to move
and how to reach Kafka Connect (:class:`Request`), every connector planned from both sides'
answers, then, for a cutover, each moved in turn (:func:`migrate`).

How Kafka Connect is reached is the operator's to say: basic auth (a user and password, or in
the URL), a bearer token, and TLS with a CA and a client certificate of their own, as PEM text.
None of it is ever shown: a request's ``shown_url`` drops the URL's credentials, and the access
it holds is kept out of its repr.
"""

from __future__ import annotations

import ssl
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import aiohttp
from yarl import URL

from headrace.clients.connect import ConnectApi, RestError, Side, session
from headrace.migration.cutover import WAIT_S, Cutover, MoveError, Step, next_step
from headrace.migration.plan import (
    HIDDEN,
    Move,
    full_class,
    install_coordinate,
    plan_move,
    version_to_run,
    with_implicit,
)
from headrace.sdk import network

CONNECT = "Kafka Connect"
HEADRACE = "headrace"
FROM, TO = "from", "to"


class BadRequest(ValueError):
    """A request that cannot be run: ``key`` names the setting (as the API spells it)."""

    def __init__(self, key: str, problem: str) -> None:
        super().__init__(f"{key}: {problem}")
        self.key, self.problem = key, problem


@dataclass(frozen=True)
class Access:
    """How Kafka Connect is reached beyond its URL: none of it is ever shown."""

    username: str = ""
    password: str = field(default="", repr=False)
    token: str = field(default="", repr=False)
    ca_pem: str = ""
    cert_pem: str = ""
    key_pem: str = field(default="", repr=False)

    def check(self) -> None:
        """BadRequest naming the setting where these cannot go together."""
        if ":" in self.username:
            raise BadRequest("connect.username", "holds a ':', which basic auth cannot carry")
        if self.password and not self.username:
            raise BadRequest("connect.password", "given without connect.username")
        if self.token and self.username:
            raise BadRequest("connect.token", "given with connect.username; use one of them")
        if bool(self.cert_pem) != bool(self.key_pem):
            raise BadRequest("connect.key_pem", "a client certificate and its key go together")

    @property
    def secrets(self) -> tuple[str, ...]:
        return tuple(v for v in (self.password, self.token, self.key_pem) if v)


@dataclass(frozen=True)
class Request:
    """What to move, which way, and how to reach Kafka Connect. ``supplied``: the values the
    side a connector comes from hides, by connector (None: for every connector)."""

    direction: str  # FROM or TO Kafka Connect
    url: str = field(repr=False)  # may hold credentials: see shown_url
    connectors: tuple[str, ...] = ()
    cutover: bool = False
    keep: bool = False
    install: bool = False
    """Moving from Kafka Connect: first install, for the whole cluster, each plugin headrace
    lacks whose Maven coordinate the plan names (Kafka's own connectors, Debezium's)."""
    timeout_s: float = WAIT_S
    supplied: Mapping[str | None, Mapping[str, str]] = field(default_factory=dict, repr=False)
    access: Access = field(default_factory=Access)
    worker: Mapping[str, str] | None = field(default=None, repr=False)
    """Kafka Connect's worker properties, moving from it: the converters it gives every
    connector that names none (``plan.with_implicit_converters``)."""

    def __post_init__(self) -> None:
        if self.direction not in (FROM, TO):
            raise BadRequest("direction", f"{self.direction!r} is neither {FROM!r} nor {TO!r}")
        if self.install and self.direction == TO:
            raise BadRequest(
                "install", "only moving from Kafka Connect: headrace installs plugins, not Connect"
            )
        if self.worker is not None and self.direction == TO:
            raise BadRequest(
                "worker",
                "only moving from Kafka Connect: moving to it, the converters headrace used "
                "are written into each config",
            )
        url = _url(self.url)
        if url.user is not None and (self.access.username or self.access.token):
            raise BadRequest("url", "holds a user, and connect names one too; use one of them")
        if not 0 < self.timeout_s <= 24 * 3600:
            raise BadRequest("timeout_s", f"{self.timeout_s:g} s is not in (0, 86400]")
        self.access.check()

    @property
    def shown_url(self) -> str:
        """The URL without its credentials."""
        return str(_url(self.url).with_user(None))

    @property
    def secrets(self) -> tuple[str, ...]:
        """Every value of this request never to be shown."""
        values = [v for by_key in self.supplied.values() for v in by_key.values()]
        password = _url(self.url).password
        return (*values, *self.access.secrets, *([password] if password else []))


def by_connector(values: Mapping[str, str]) -> dict[str | None, dict[str, str]]:
    """Supplied values by connector (None: for every connector), from ``[CONNECTOR:]KEY``."""
    found: dict[str | None, dict[str, str]] = {}
    for target, value in values.items():
        connector, colon, key = target.rpartition(":")
        if not key:
            raise BadRequest("set", "an entry names no key (it is not shown)")
        found.setdefault(connector if colon else None, {})[key] = value
    return found


def _url(raw: str) -> URL:
    try:
        url = URL(raw)
    except ValueError as exc:
        raise BadRequest("url", f"not a URL ({exc})") from None
    if url.scheme not in ("http", "https") or not url.host:
        raise BadRequest("url", "must be http:// or https:// with a host, as Kafka Connect's is")
    refused = network.unsafe_host(url.host, resolve=False)  # a name's addresses: as it connects
    if refused is not None:
        raise BadRequest("url", f"may not be reached: {refused}")
    return url


def connect_side(request: Request) -> Side:
    """Kafka Connect's side, as ``request`` reaches it. A client certificate and its key are
    on disk only while the TLS library loads them, which reads only files: in a folder of
    this user's own, removed at once."""
    access, url = request.access, _url(request.url)
    headers = {}
    if url.user is not None:  # basic auth's user and password, in the URL
        headers["Authorization"] = aiohttp.encode_basic_auth(url.user, url.password or "")
    elif access.username:
        headers["Authorization"] = aiohttp.encode_basic_auth(access.username, access.password)
    elif access.token:
        headers["Authorization"] = f"Bearer {access.token}"
    context = None
    if access.ca_pem or access.cert_pem:
        try:
            context = ssl.create_default_context(cadata=access.ca_pem or None)
            if access.cert_pem:
                _load_client_certificate(context, access)
        except (ssl.SSLError, ValueError) as exc:
            problem = f"its CA or client certificate cannot be used: {exc}"
            raise BadRequest("connect", problem) from None
    return Side(CONNECT, str(url.with_user(None)), headers, context)


def _load_client_certificate(context: ssl.SSLContext, access: Access) -> None:
    with tempfile.TemporaryDirectory(prefix="headrace-migrate-") as folder:  # 0700
        cert, key = Path(folder) / "client.pem", Path(folder) / "client.key"
        cert.write_text(access.cert_pem)
        key.touch(mode=0o600)
        key.write_text(access.key_pem)
        context.load_cert_chain(cert, key)


@dataclass
class Listener:
    """What a migration tells as it goes: its plan, each step taken, each connector moved, the
    one that could not move (after which no other is tried), and each plugin it installed."""

    planned: Callable[[Sequence[Move]], None] = lambda moves: None
    said: Callable[[str, str], None] = lambda name, line: None
    moved: Callable[[str], None] = lambda name: None
    failed: Callable[[str, str], None] = lambda name, message: None
    installed: Callable[[str], None] = lambda coordinate: None


async def migrate(
    request: Request,
    ours: Side,
    listener: Listener | None = None,
    our_worker: Mapping[str, str] | None = None,
) -> list[Move]:
    """Plans every connector ``request`` names (every one on the side they come from, if it
    names none) and, for a cutover, moves each in turn, until one cannot move: MoveError
    saying where it stands and which were not tried. RestError when a side cannot be read.
    ``our_worker``: headrace's worker config, whose converters its connectors ran with."""
    told = listener or Listener()
    from_connect = request.direction == FROM
    async with session(connect_side(request)) as connect, session(ours) as here:
        source, target = (connect, here) if from_connect else (here, connect)
        planning = partial(
            plan,
            source,
            target,
            request.connectors,
            request.supplied,
            keep=request.keep,
            implicit=partial(
                with_implicit,
                connect_worker=request.worker,
                our_worker=our_worker,
                from_connect=from_connect,
            ),
        )
        moves = await planning()
        lacking = sorted({m.install for m in moves if m.install})
        if request.install and lacking:
            for coordinate in lacking:
                await here.install_plugin(coordinate)
                told.installed(coordinate)
            moves = await planning()  # with what it now has
        told.planned(moves)
        if not request.cutover:
            return moves
        cutover = Cutover(
            source, target, keep=request.keep, wait_s=request.timeout_s, report=told.said
        )
        for done, move in enumerate(moves):
            try:
                await cutover.move(move)
            except MoveError as exc:
                told.failed(move.name, str(exc))
                rest = [m.name for m in moves[done + 1 :]]
                untouched = f"; not tried: {', '.join(rest)}" if rest else ""
                raise MoveError(f"{exc}{untouched}") from None
            told.moved(move.name)
        return moves


async def plan(
    source: ConnectApi,
    target: ConnectApi,
    names: Sequence[str],
    supplied: Mapping[str | None, Mapping[str, str]],
    *,
    keep: bool = False,
    implicit: Callable[[Mapping[str, str], str], tuple[dict[str, str], list[str]]] | None = None,
) -> list[Move]:
    """Each connector's move, from what both sides answer now; changes nothing. ``implicit``
    writes out what the worker it comes from gave a config of a kind (its converters, its
    clients' settings), and says what cannot be known."""
    plugins, theirs = await target.plugins(), await source.plugins()
    moves = []
    for name in names or await source.names():
        here, there = await source.status(name), await target.status(name)
        # Gone from where it comes from, a connector an earlier run moved is read where it is.
        side = source if here is not None else target
        config = await side.config(name) or {}
        kind = await side.kind(name) or ""
        unknown: list[str] = []
        if here is not None and implicit is not None:
            config, unknown = implicit(config, kind)
        try:
            step, conflict = next_step(here, there, keep=keep), None
        except MoveError as exc:
            step, conflict = None, str(exc)
        values = {**supplied.get(None, {}), **supplied.get(name, {})}
        merged = {**config, **values}
        validation, refused = None, None
        if step is Step.CREATE and HIDDEN not in merged.values():
            try:
                validation = await target.validate(merged.get("connector.class", ""), merged)
            except RestError as exc:
                refused = str(exc)
        from_version = version_to_run(theirs, config) if here is not None else ""
        if step in (Step.STOP, Step.MOVE_OFFSETS):
            conflict = differs(merged, await target.config(name) or {}, target.name)
        moves.append(
            plan_move(
                name,
                kind,
                config,
                await source.offsets(name) if here is not None else [],
                supplied=values,
                plugins=plugins,
                validation=validation,
                refused=refused,
                target=target.name,
                next_step=step.said(source.name, target.name) if step is not None else "",
                creating=step is Step.CREATE,
                conflict=conflict,
                from_version=from_version,
                unknown_converters=unknown,
                install=install_coordinate(full_class(theirs, config), from_version)
                if here is not None and target.name == HEADRACE
                else "",
            )
        )
    return moves


def differs(wanted: Mapping[str, str], there: Mapping[str, str], target: str) -> str | None:
    """Why a STOPPED connector of that name on the side it goes to is not the one a move
    created (keys whose values differ, a hidden value on either side aside); None if it is."""
    keys = sorted(
        k
        for k in set(wanted) | set(there)
        if k != "name"
        and HIDDEN not in (wanted.get(k), there.get(k))
        and wanted.get(k) != there.get(k)
    )
    if not keys:
        return None
    return (
        f"a STOPPED connector of that name on {target} has another config ({', '.join(keys)}): "
        "delete it there first, or move it from there"
    )
