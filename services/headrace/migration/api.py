"""Migrations over the config service's REST API and its gRPC API: two thin edges over
``headrace.migration.operations``, with one shape of answer (the gRPC API's ``Migration``, field
for field, as JSON over REST).

    POST   /migrations          plan (200, once planned) or start a cutover (202, RUNNING)
    GET    /migrations          every migration kept, newest first
    GET    /migrations/{id}     one, with where each connector's move stands
    DELETE /migrations/{id}     cancel a running cutover (200, CANCELLED)

Errors are Kafka Connect's body, ``{"error_code": N, "message": "..."}``: 400 naming the setting
that is wrong, 404 for no such migration, 409 for a cutover while another runs or a cancel of
one that has ended, 503 while the service starts. Over gRPC: INVALID_ARGUMENT, NOT_FOUND,
FAILED_PRECONDITION and UNAVAILABLE.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import grpc
from aiohttp import web
from google.protobuf import json_format

from headrace.core.security import forms
from headrace.migration.moving import BadRequest
from headrace.migration.operations import Migrations, Operation, Refused, Unavailable, request_of
from headrace.v1 import config_pb2, migration_pb2, migration_pb2_grpc

T = TypeVar("T")

PROBLEMS: tuple[tuple[type[Exception], int, grpc.StatusCode], ...] = (
    (BadRequest, 400, grpc.StatusCode.INVALID_ARGUMENT),
    (LookupError, 404, grpc.StatusCode.NOT_FOUND),
    (Refused, 409, grpc.StatusCode.FAILED_PRECONDITION),
    (Unavailable, 503, grpc.StatusCode.UNAVAILABLE),
)
"""Each refusal, as REST and gRPC answer it."""


def routes(migrations: Migrations) -> list[web.RouteDef]:
    async def start(request: web.Request) -> web.Response:
        async def started() -> web.Response:
            operation = await migrations.start(request_of(await _body(request)))
            if not operation.request.cutover:
                return web.json_response(operation.json())
            location = {"Location": f"/migrations/{operation.id}"}
            return web.json_response(operation.json(), status=202, headers=location)

        return await _answered(started())

    async def listed(request: web.Request) -> web.Response:
        return web.json_response([op.json() for op in migrations.all()])

    async def one(request: web.Request) -> web.Response:
        async def found() -> web.Response:
            return web.json_response(migrations.get(request.match_info["id"]).json())

        return await _answered(found())

    async def cancel(request: web.Request) -> web.Response:
        async def cancelled() -> web.Response:
            return web.json_response((await migrations.cancel(request.match_info["id"])).json())

        return await _answered(cancelled())

    return [
        web.post("/migrations", start),
        web.get("/migrations", listed),
        web.get("/migrations/{id}", one),
        web.delete("/migrations/{id}", cancel),
    ]


async def _body(request: web.Request) -> Any:
    forms.refuse_form_body(request)
    try:
        return json.loads((await request.read()).decode("utf-8") or "null")
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadRequest("body", f"not JSON: {exc}") from None


async def _answered(call: Awaitable[web.Response]) -> web.Response:
    try:
        return await call
    except tuple(kind for kind, _, _ in PROBLEMS) as exc:
        status = next(code for kind, code, _ in PROBLEMS if isinstance(exc, kind))
        message = str(exc.args[0]) if isinstance(exc, LookupError) else str(exc)
        return web.json_response({"error_code": status, "message": message}, status=status)


def to_pb(operation: Operation) -> migration_pb2.Migration:
    shown = operation.json()
    moves = []
    for move in shown.pop("moves"):
        offsets = [
            config_pb2.ConnectorOffset(
                partition=json.dumps(entry.get("partition")), offset=json.dumps(entry.get("offset"))
            )
            for entry in move.pop("offsets")
        ]
        moves.append(migration_pb2.ConnectorMove(offsets=offsets, **move))
    return migration_pb2.Migration(moves=moves, **shown)


class MigrationServicer(migration_pb2_grpc.MigrationServiceServicer):
    def __init__(self, migrations: Migrations) -> None:
        self.migrations = migrations

    async def StartMigration(
        self, request: migration_pb2.StartMigrationRequest, context: grpc.aio.ServicerContext
    ) -> migration_pb2.Migration:
        body = json_format.MessageToDict(request, preserving_proto_field_name=True)
        return await _called(context, lambda: self.migrations.start(request_of(body)))

    async def GetMigration(
        self, request: migration_pb2.MigrationRequest, context: grpc.aio.ServicerContext
    ) -> migration_pb2.Migration:
        async def found() -> Operation:
            return self.migrations.get(request.id)

        return await _called(context, found)

    async def ListMigrations(
        self, request: migration_pb2.ListMigrationsRequest, context: grpc.aio.ServicerContext
    ) -> migration_pb2.ListMigrationsResponse:
        return migration_pb2.ListMigrationsResponse(
            migrations=[to_pb(op) for op in self.migrations.all()]
        )

    async def CancelMigration(
        self, request: migration_pb2.MigrationRequest, context: grpc.aio.ServicerContext
    ) -> migration_pb2.Migration:
        return await _called(context, lambda: self.migrations.cancel(request.id))


async def _called(
    context: grpc.aio.ServicerContext, call: Callable[[], Awaitable[Operation]]
) -> migration_pb2.Migration:
    try:
        return to_pb(await call())
    except tuple(kind for kind, _, _ in PROBLEMS) as exc:
        code = next(code for kind, _, code in PROBLEMS if isinstance(exc, kind))
        await context.abort(code, str(exc.args[0]) if isinstance(exc, LookupError) else str(exc))
        raise  # abort raises
