"""The migrations' REST and gRPC edges: what each refusal is answered with, before anything
reaches Kafka Connect or headrace."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import grpc
import pytest
from aiohttp import ClientResponse, web
from aiohttp.test_utils import TestClient, TestServer

from headrace.clients.connect import GuardedResolver, Side
from headrace.migration import api
from headrace.migration.operations import Migrations
from headrace.v1 import migration_pb2

URL = "http://connect:8083"


@pytest.fixture
async def client() -> AsyncIterator[tuple[TestClient, Migrations]]:
    migrations = Migrations()
    application = web.Application()
    application.add_routes(api.routes(migrations))
    async with TestClient(TestServer(application)) as client:
        yield client, migrations


async def answer(response: ClientResponse) -> tuple[int, dict[str, Any]]:
    return response.status, await response.json()


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (b"{not json", "body: not JSON"),
        (b'{"from": "http://connect:8083"}', "from: not a migration setting"),
        (b'{"from_url": "http://connect:8083", "keep": "yes"}', "keep: must be true or false"),
    ],
)
async def test_a_bad_request_is_answered_400_naming_the_key(
    client: tuple[TestClient, Migrations], body: bytes, said: str
) -> None:
    http, migrations = client
    status, error = await answer(await http.post("/migrations", data=body))
    assert status == 400 and error == {"error_code": 400, "message": error["message"]}
    assert str(error["message"]).startswith(said)
    assert migrations.all() == []  # nothing was started


async def test_an_unknown_migration_is_answered_404(client: tuple[TestClient, Migrations]) -> None:
    http, _ = client
    for call in (http.get("/migrations/nope"), http.delete("/migrations/nope")):
        status, error = await answer(await call)
        assert status == 404 and "no migration 'nope'" in str(error["message"])


async def test_before_the_service_serves_its_api_a_migration_is_answered_503(
    client: tuple[TestClient, Migrations],
) -> None:
    http, _ = client
    status, error = await answer(await http.post("/migrations", json={"from_url": URL}))
    assert status == 503 and "still starting" in str(error["message"])


async def test_a_second_cutover_while_one_runs_is_answered_409_and_one_ends_when_cancelled(
    client: tuple[TestClient, Migrations],
) -> None:
    http, migrations = client

    async def never(request: web.Request) -> web.Response:
        await asyncio.Event().wait()  # a side that never answers: the cutover waits on it
        raise AssertionError

    hanging = web.Application()
    hanging.router.add_route("*", "/{tail:.*}", never)
    async with TestServer(hanging) as side:
        url = str(side.make_url(""))
        migrations.ours = Side("headrace", url)
        cutover = {"from_url": url, "cutover": True, "timeout_s": 60}
        status, started = await answer(await http.post("/migrations", json=cutover))
        assert status == 202 and started["state"] == "RUNNING"
        status, refused = await answer(await http.post("/migrations", json=cutover))
        assert status == 409 and f"migration {started['id']} is moving" in str(refused["message"])

        status, cancelled = await answer(await http.delete(f"/migrations/{started['id']}"))
        assert status == 200 and cancelled["state"] == "CANCELLED"
        status, ended = await answer(await http.delete(f"/migrations/{started['id']}"))
        assert status == 409 and "has ended (CANCELLED)" in str(ended["message"])
        listed = await (await http.get("/migrations")).json()
        assert [m["id"] for m in listed] == [started["id"]]


@pytest.mark.parametrize(
    "url",
    ["http://169.254.169.254/", "http://[fe80::1]:8083", "http://metadata.google.internal/"],
)
async def test_a_metadata_or_link_local_address_is_refused_and_never_tried(
    client: tuple[TestClient, Migrations], url: str
) -> None:
    """Found by the second perimeter review (reproduced): a link-local metadata address was
    tried as Kafka Connect's."""
    http, migrations = client
    migrations.ours = Side("headrace", "http://127.0.0.1:1")
    status, error = await answer(await http.post("/migrations", json={"from_url": url}))
    assert status == 400 and str(error["message"]).startswith("url: may not be reached")
    assert migrations.all() == []


async def a_side(handler: Any) -> Any:
    application = web.Application()
    application.router.add_route("*", "/{tail:.*}", handler)
    return TestServer(application)


async def test_what_another_server_answers_is_not_shown_nor_is_a_redirect_followed(
    client: tuple[TestClient, Migrations],
) -> None:
    """Found by the second perimeter review (reproduced): an internal server's 403 body came
    back word for word in the migration's answer, redirects were followed (with the
    migration's credentials), and an answer was read without a bound."""
    http, migrations = client
    reached: list[str] = []

    async def internal(request: web.Request) -> web.Response:
        reached.append(request.path)
        return web.Response(status=403, text="internal-only: db password hunter2")

    async def elsewhere(request: web.Request) -> web.Response:
        raise web.HTTPFound(str(target.make_url("/connectors")))

    async def endless(request: web.Request) -> web.StreamResponse:
        answer = web.StreamResponse()
        await answer.prepare(request)
        chunk = b"[" + b"1," * 1_000_000
        for _ in range(40):  # 80 MB: past what any Kafka Connect answers
            await answer.write(chunk)
        return answer

    async def headrace(request: web.Request) -> web.Response:
        return web.json_response([])

    async with (
        await a_side(headrace) as ours,
        await a_side(internal) as target,
        await a_side(elsewhere) as redirecting,
        await a_side(endless) as flooding,
    ):
        migrations.ours = Side("headrace", str(ours.make_url("")))
        for side, said in (
            (target, "answered 403: not Kafka Connect's error body"),
            (redirecting, "a redirect, which is not followed"),
            (flooding, "answered more than 67108864 bytes"),
        ):
            reached.clear()
            status, done = await answer(
                await http.post("/migrations", json={"from_url": str(side.make_url(""))})
            )
            assert status == 200 and done["state"] == "FAILED", done
            assert said in done["error"] and "hunter2" not in str(done)
            assert bool(reached) == (side is target)  # the redirect's target never reached


class Aborted(Exception):
    pass


class Context:
    """What a servicer is given: its abort raises, with the code kept."""

    code: grpc.StatusCode | None = None

    async def abort(self, code: grpc.StatusCode, message: str) -> None:
        self.code = code
        raise Aborted(message)


async def test_over_grpc_the_same_refusals_have_grpc_codes() -> None:
    servicer = api.MigrationServicer(Migrations())
    context = Context()
    with pytest.raises(Aborted, match="exactly one of from_url and to_url"):
        await servicer.StartMigration(migration_pb2.StartMigrationRequest(), context)
    assert context.code == grpc.StatusCode.INVALID_ARGUMENT
    with pytest.raises(Aborted):
        await servicer.GetMigration(migration_pb2.MigrationRequest(id="nope"), context)
    assert context.code == grpc.StatusCode.NOT_FOUND
    with pytest.raises(Aborted, match="still starting"):
        request = migration_pb2.StartMigrationRequest(from_url=URL)
        await servicer.StartMigration(request, context)
    assert context.code == grpc.StatusCode.UNAVAILABLE


async def test_a_name_that_resolves_to_a_metadata_address_is_refused_as_it_connects() -> None:
    """A name is checked when it is resolved for the connection, not when the request is: one
    pointed at a metadata service in between is refused all the same."""

    class Pointed(aiohttp.ThreadedResolver):
        async def resolve(self, host: str, port: int = 0, family: Any = 0) -> Any:
            address = "169.254.169.254" if host == "connect.example" else "10.0.0.8"
            return [
                {
                    "hostname": host,
                    "host": address,
                    "port": port,
                    "family": 2,
                    "proto": 0,
                    "flags": 0,
                }
            ]

    guarded = GuardedResolver()
    guarded._inner = Pointed()
    with pytest.raises(OSError, match=r"169\.254\.169\.254 is a cloud metadata service"):
        await guarded.resolve("connect.example", 8083)
    assert [r["host"] for r in await guarded.resolve("connect.internal", 8083)] == ["10.0.0.8"]
    await guarded.close()
