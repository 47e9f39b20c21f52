"""Migrations as operations of the config service, for automation: the REST and gRPC edges
(``headrace.migration.api``) start, read and cancel them here.

A plan is answered once planned. A cutover runs in the background, one at a time, and each
of its connectors says where its move stands: PLANNED, MOVING (with each step taken), MOVED,
FAILED (with where it stands and how to go on), or NOT_TRIED once one before it failed.
Cancelling a cutover puts the connector it was moving back where it came from, as far as its
move was not committed, as Ctrl-C does to ``headrace migrate``.

An operation lives in the process that runs it, and the last :data:`KEPT` that ended are kept
for reading. If that process stops, the cutover stops with it; starting the same migration
again goes on from where each connector stands, since a move's next step is always read from
both sides. Nothing of a request's access to Kafka Connect, nor any value it supplied, is kept
past the operation or shown.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from headrace.clients.connect import RestError, Side
from headrace.core.observability import log
from headrace.migration.cutover import MoveError
from headrace.migration.moving import (
    FROM,
    TO,
    Access,
    BadRequest,
    Listener,
    Request,
    by_connector,
    migrate,
)
from headrace.migration.plan import Move, clean, move_json

RUNNING, SUCCEEDED, FAILED, CANCELLED = "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED"
PLANNED, MOVING, MOVED, NOT_TRIED = "PLANNED", "MOVING", "MOVED", "NOT_TRIED"
KEPT = 100
REQUEST_KEYS = frozenset(
    {
        "from_url",
        "to_url",
        "connectors",
        "cutover",
        "keep",
        "set",
        "timeout_s",
        "connect",
        "worker",
        "install",
    }
)
ACCESS_KEYS = frozenset({"username", "password", "token", "ca_pem", "cert_pem", "key_pem"})


class Refused(Exception):
    """A migration that cannot start or be cancelled now (another cutover runs; it ended)."""


class Unavailable(Exception):
    """The service cannot run migrations yet: its REST API is not served."""


def request_of(body: Any) -> Request:
    """The request a JSON body (or a gRPC request as JSON) asks for; BadRequest naming the key
    that is unknown, of the wrong type, or wrong."""
    if not isinstance(body, Mapping):
        raise BadRequest("body", "must be a JSON object")
    unknown = sorted(set(body) - REQUEST_KEYS)
    if unknown:
        raise BadRequest(unknown[0], f"not a migration setting (those are {_listed(REQUEST_KEYS)})")
    origin, goal = _text(body, "from_url"), _text(body, "to_url")
    if bool(origin) == bool(goal):
        raise BadRequest("from_url", "give exactly one of from_url and to_url")
    connectors = body.get("connectors", [])
    if not isinstance(connectors, list) or not all(isinstance(c, str) and c for c in connectors):
        raise BadRequest("connectors", "must be a list of connector names")
    supplied = body.get("set", {})
    if not isinstance(supplied, Mapping) or not all(isinstance(v, str) for v in supplied.values()):
        raise BadRequest("set", "must be an object of [CONNECTOR:]KEY and string values")
    worker = body.get("worker")
    if worker is not None and (
        not isinstance(worker, Mapping)
        or not all(isinstance(k, str) and isinstance(v, str) for k, v in worker.items())
    ):
        raise BadRequest("worker", "must be an object of Kafka Connect's worker properties")
    timeout = body.get("timeout_s") or Request.timeout_s
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        raise BadRequest("timeout_s", "must be a number of seconds")
    return Request(
        FROM if origin else TO,
        origin or goal,
        tuple(connectors),
        cutover=_flag(body, "cutover"),
        keep=_flag(body, "keep"),
        install=_flag(body, "install"),
        timeout_s=float(timeout),
        supplied=by_connector(supplied),
        access=_access(body.get("connect", {})),
        worker=dict(worker) if worker is not None else None,
    )


def _access(body: Any) -> Access:
    if not isinstance(body, Mapping):
        raise BadRequest("connect", "must be an object")
    unknown = sorted(set(body) - ACCESS_KEYS)
    if unknown:
        raise BadRequest(f"connect.{unknown[0]}", f"not one of {_listed(ACCESS_KEYS)}")
    return Access(**{key: _text(body, key, "connect.") for key in body})


def _text(body: Mapping[str, Any], key: str, prefix: str = "") -> str:
    value = body.get(key, "")
    if not isinstance(value, str):
        raise BadRequest(prefix + key, "must be a string")
    return value


def _flag(body: Mapping[str, Any], key: str) -> bool:
    value = body.get(key, False)
    if not isinstance(value, bool):
        raise BadRequest(key, "must be true or false")
    return value


def _listed(keys: frozenset[str]) -> str:
    return ", ".join(sorted(keys))


@dataclass
class Progress:
    """One connector of an operation: its plan, and where its move stands."""

    move: Move
    state: str = PLANNED
    steps: list[str] = field(default_factory=list)
    error: str = ""


@dataclass
class Operation:
    """One migration, planned or moving."""

    request: Request
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:16])
    state: str = RUNNING
    progress: dict[str, Progress] = field(default_factory=dict)
    error: str = ""
    created: datetime = field(default_factory=lambda: datetime.now(UTC))
    ended: datetime | None = None
    task: asyncio.Task[None] | None = None

    async def run(self, ours: Side, our_worker: Mapping[str, str] | None = None) -> None:
        """The migration, to its end: state and error say how it ended."""
        try:
            await migrate(self.request, ours, self.listener(), our_worker)
            self.state = SUCCEEDED
        except (RestError, MoveError, BadRequest) as exc:
            self.state, self.error = FAILED, self._clean(str(exc))
        except asyncio.CancelledError:
            self.state, self.error = CANCELLED, "cancelled"
            raise
        except Exception:  # noqa: BLE001 - said as ended, with the trace in the log
            incident = uuid.uuid4().hex[:12]
            log.get().exception("migration_failed", migration=self.id, incident=incident)
            self.state = FAILED
            self.error = f"the config service failed; its log says why (incident {incident})"
        finally:
            self.ended = datetime.now(UTC)
            for each in self.progress.values():
                if self.request.cutover and each.state == PLANNED and self.state != SUCCEEDED:
                    each.state = NOT_TRIED
                elif each.state == MOVING and self.state == CANCELLED:
                    each.state, each.error = FAILED, "cancelled while moving: " + each.steps[-1]

    def listener(self) -> Listener:
        def planned(moves: Sequence[Move]) -> None:
            self.progress = {m.name: Progress(m) for m in moves}

        def said(name: str, line: str) -> None:
            self.progress[name].state = MOVING
            self.progress[name].steps.append(line)

        def moved(name: str) -> None:
            self.progress[name].state = MOVED

        def failed(name: str, message: str) -> None:
            self.progress[name].state, self.progress[name].error = FAILED, self._clean(message)

        return Listener(planned, said, moved, failed)

    def _clean(self, message: str) -> str:
        secrets = [
            *self.request.secrets,
            *(s for p in self.progress.values() for s in p.move.secrets),
        ]
        return clean(message, secrets)

    def json(self) -> dict[str, Any]:
        """As the APIs show it (the gRPC API's ``Migration``, field for field): no secret."""
        return {
            "id": self.id,
            "state": self.state,
            "direction": self.request.direction,
            "url": self.request.shown_url,
            "cutover": self.request.cutover,
            "keep": self.request.keep,
            "connectors": list(self.request.connectors),
            "moves": [
                {**move_json(p.move), "state": p.state, "steps": list(p.steps), "error": p.error}
                for p in self.progress.values()
            ],
            "error": self.error,
            "created": _time(self.created),
            "ended": _time(self.ended) if self.ended else "",
        }


def _time(at: datetime) -> str:
    return at.isoformat(timespec="seconds").replace("+00:00", "Z")


class Migrations:
    """The operations of one config service. ``ours`` is headrace's side, as the service
    reaches its own REST API: set once that is served."""

    def __init__(self, worker: Mapping[str, str] | None = None) -> None:
        self.ours: Side | None = None
        self.worker = worker or {}  # headrace's worker config: its connectors' converters
        self._operations: dict[str, Operation] = {}

    async def start(self, request: Request) -> Operation:
        """A plan, planned; or a cutover, started. Refused while another cutover runs."""
        if self.ours is None:
            raise Unavailable("the config service is still starting: try again shortly")
        running = [op for op in self._operations.values() if op.state == RUNNING]
        if request.cutover and running:
            raise Refused(
                f"migration {running[0].id} is moving connectors: wait for it to end, or cancel it"
            )
        operation = Operation(request)
        self._operations[operation.id] = operation
        self._forget_old()
        if request.cutover:
            operation.task = asyncio.create_task(
                _quietly(operation.run(self.ours, self.worker)), name=f"migration-{operation.id}"
            )
        else:
            await operation.run(self.ours, self.worker)
        return operation

    def get(self, operation_id: str) -> Operation:
        found = self._operations.get(operation_id)
        if found is None:
            raise LookupError(
                f"no migration {operation_id!r}: it never ran here, or has been forgotten"
            )
        return found

    def all(self) -> list[Operation]:
        """Newest first."""
        return sorted(self._operations.values(), key=lambda op: op.created, reverse=True)

    async def cancel(self, operation_id: str) -> Operation:
        """Stops a running cutover, once it has put back what it may."""
        operation = self.get(operation_id)
        if operation.task is None or operation.task.done():
            raise Refused(f"migration {operation_id} has ended ({operation.state})")
        operation.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await operation.task
        return operation

    async def close(self) -> None:
        for operation in list(self._operations.values()):
            if operation.task is not None and not operation.task.done():
                await self.cancel(operation.id)

    def _forget_old(self) -> None:
        ended = [op for op in self.all() if op.state != RUNNING]
        for operation in ended[KEPT:]:
            del self._operations[operation.id]


async def _quietly(running: Any) -> None:
    """A cutover's run: how it ended is in its operation, a cancel included."""
    with contextlib.suppress(asyncio.CancelledError):
        await running
