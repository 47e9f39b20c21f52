"""A browser sends credentials by itself (a login cookie, a client certificate) and, with auth
off, none are needed: the REST API refuses every change a browser says another site's page
asked for, and a JSON body sent as a form's content type, as Kafka Connect does (415). Over HTTP
on loopback, on the in-memory configs topic."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from aiohttp.test_utils import TestClient, TestServer

from headrace.config.commands import Commands
from headrace.config.console import session
from headrace.config.rest import ConnectApi, app
from headrace.migration import api as migration_api
from headrace.migration.operations import Migrations
from tests.unit.config.memory import memory_commands

BODY = '{"name": "planted", "config": {"connector.class": "Gen"}}'


async def _info() -> dict[str, str]:
    return {"version": "test"}


@pytest.fixture
async def served() -> AsyncIterator[tuple[TestClient, Commands]]:
    """The API as the config service serves it, its migrations' paths with it."""
    commands = await memory_commands()
    served = app(ConnectApi(commands, _info))
    served.add_routes(migration_api.routes(Migrations()))
    async with TestClient(TestServer(served)) as client:
        yield client, commands


@pytest.fixture
async def behind_proxy() -> AsyncIterator[tuple[TestClient, Commands]]:
    """The API on loopback, as a reverse proxy at https://connect.example reaches it."""
    commands = await memory_commands()
    site = session.Site.of("127.0.0.1:8083", ("https://connect.example",))
    async with TestClient(TestServer(app(ConnectApi(commands, _info), None, site))) as client:
        yield client, commands


@pytest.mark.parametrize(
    "browser",
    [
        {"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"},
        {"Sec-Fetch-Site": "same-site"},
        {"Origin": "https://evil.example"},  # a browser that sends no Sec-Fetch-Site
        {"Origin": "null"},  # a sandboxed frame, or a file
    ],
)
async def test_a_change_another_site_s_page_asks_for_is_refused_and_changes_nothing(
    served: tuple[TestClient, Commands], browser: dict[str, str]
) -> None:
    client, commands = served
    headers = {"Content-Type": "application/json", **browser}
    answer = await client.post("/connectors", data=BODY, headers=headers)
    assert answer.status == 403
    assert "another site" in (await answer.json())["message"]
    await commands.create("kept", {"connector.class": "Gen"})
    for method, path in (("PUT", "/connectors/kept/pause"), ("DELETE", "/connectors/kept")):
        assert (await client.request(method, path, headers=browser)).status == 403
    assert await commands.list() == ["kept"]
    assert (await commands.get("kept")).target.value == "RUNNING"
    # Reading is not a change: another site's page cannot read the answer anyway (no CORS).
    assert (await client.get("/connectors", headers=browser)).status == 200


async def test_the_console_s_own_page_and_a_program_make_changes(
    served: tuple[TestClient, Commands],
) -> None:
    client, commands = served
    json_body = {"Content-Type": "application/json"}
    own_page = {"Sec-Fetch-Site": "same-origin", "Origin": "https://proxy.example"}
    typed = {"Sec-Fetch-Site": "none"}  # an address typed by the user
    for name, browser in (("a", own_page), ("b", typed), ("c", {})):
        body = BODY.replace("planted", name)
        answer = await client.post("/connectors", data=body, headers={**json_body, **browser})
        assert answer.status == 201, await answer.text()
    host = f"{client.server.host}:{client.server.port}"
    same_origin = {"Origin": f"http://{host}"}  # a browser that sends no Sec-Fetch-Site
    assert (await client.put("/connectors/a/pause", headers=same_origin)).status == 202
    assert await commands.list() == ["a", "b", "c"]


@pytest.mark.parametrize(
    "content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data"]
)
async def test_a_body_sent_as_a_form_s_is_refused_with_415(
    served: tuple[TestClient, Commands], content_type: str
) -> None:
    client, commands = served
    for path in ("/connectors", "/migrations"):
        answer = await client.post(path, data=BODY, headers={"Content-Type": content_type})
        assert answer.status == 415, path
        message = (await answer.json())["message"]
        assert content_type in message and "application/json" in message
    assert await commands.list() == []
    assert (await (await client.get("/migrations")).json()) == []


async def test_a_proxy_s_page_makes_changes_when_its_origin_is_named_or_forwarded(
    behind_proxy: tuple[TestClient, Commands],
) -> None:
    """Over plain HTTP (no Sec-Fetch-Site) a proxy that rewrites the Host leaves a page's
    Origin unlike it: the origin named in the settings, or the X-Forwarded-Host the proxy
    adds, says the page is the console's own."""
    client, commands = behind_proxy
    await commands.create("kept", {"connector.class": "Gen"})
    named = {"Origin": "https://connect.example"}
    assert (await client.put("/connectors/kept/pause", headers=named)).status == 202
    forwarded = {"Origin": "http://other.example:8080", "X-Forwarded-Host": "other.example:8080"}
    assert (await client.put("/connectors/kept/resume", headers=forwarded)).status == 202
    unnamed = {"Origin": "http://other.example:8080"}
    refused = await client.put("/connectors/kept/pause", headers=unnamed)
    assert refused.status == 403
    assert "HEADRACE_CONSOLE_ORIGINS" in (await refused.json())["message"]
    assert (await commands.get("kept")).target.value == "RUNNING"


async def test_on_loopback_a_request_for_another_host_name_is_refused_and_changes_nothing(
    behind_proxy: tuple[TestClient, Commands],
) -> None:
    """A page whose name its DNS points at 127.0.0.1 after loading (DNS rebinding) is its own
    origin: its Host alone tells it apart."""
    client, commands = behind_proxy
    rebound = {"Host": "evil.example:8083", "Origin": "http://evil.example:8083"}
    for method, path in (("GET", "/connectors"), ("POST", "/connectors")):
        answer = await client.request(
            method, path, data=BODY, headers={"Content-Type": "application/json", **rebound}
        )
        assert answer.status == 403
        assert "evil.example:8083" in (await answer.json())["message"]
    assert await commands.list() == []
    for host in ("localhost:8083", "connect.example"):
        assert (await client.get("/connectors", headers={"Host": host})).status == 200
