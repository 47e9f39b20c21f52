"""The console's login cookie and its CSRF header, on requests made without a server."""

from __future__ import annotations

from aiohttp.test_utils import make_mocked_request

from headrace.config.console import session
from headrace.core.security import auth

TOKEN = "an-admin-token-of-length"


def cookie(token: str) -> dict[str, str]:
    return {"Cookie": f"{session.COOKIE}={token}"}


def test_a_header_wins_over_the_cookie_and_needs_no_csrf_header() -> None:
    request = make_mocked_request(
        "DELETE", "/connectors/a", headers={"Authorization": "Bearer other", **cookie(TOKEN)}
    )
    given = session.credential(request)
    assert given == session.Credential("Bearer other")
    assert session.csrf_refusal(request, given) is None


def test_a_change_with_the_cookie_needs_the_token_s_own_csrf_value() -> None:
    reading = make_mocked_request("GET", "/connectors", headers=cookie(TOKEN))
    assert session.credential(reading) == session.Credential(f"Bearer {TOKEN}", True)
    assert session.csrf_refusal(reading, session.credential(reading)) is None
    for sent in ({}, {session.CSRF_HEADER: session.csrf_token("another-token-entirely")}):
        change = make_mocked_request(
            "PUT", "/connectors/a/pause", headers={**cookie(TOKEN), **sent}
        )
        refusal = session.csrf_refusal(change, session.credential(change))
        assert refusal is not None and session.CSRF_HEADER in refusal
    mine = {session.CSRF_HEADER: session.csrf_token(TOKEN)}
    change = make_mocked_request("PUT", "/connectors/a/pause", headers={**cookie(TOKEN), **mine})
    assert session.csrf_refusal(change, session.credential(change)) is None
    assert TOKEN not in session.csrf_token(TOKEN)


def test_a_page_of_another_site_is_told_apart_by_its_origin() -> None:
    def origin(value: str | None) -> bool:
        headers = {"Host": "console:8083", **({"Origin": value} if value else {})}
        request = make_mocked_request("POST", "/ui/login", headers=headers)
        return session.Site().cross_site(request)

    assert not origin(None) and not origin("https://console:8083")
    assert origin("https://evil.example") and origin("null")


def test_the_console_s_assets_and_login_need_no_role_and_its_documents_the_read_role() -> None:
    for path in ("/ui/login", "/ui/logout", "/ui/static/console.js"):
        assert auth.rest_need("POST" if "log" in path else "GET", path) is auth.Need.OPEN
    for path in ("/ui/", "/ui/api/board", "/ui/api/events", "/ui/api/cluster"):
        assert auth.rest_need("GET", path) is auth.Need.READ


def test_the_names_of_this_machine_are_loopback_whatever_their_spelling() -> None:
    site = session.Site.of("127.0.0.1:8083")
    for host in ("localhost:8083", "LOCALHOST.", "app.localhost:1", "127.0.0.2", "[::1]:8083"):
        assert site.host_refusal(make_mocked_request("GET", "/", headers={"Host": host})) is None
    for host in ("localhost.example", "127.0.0.1.nip.io:8083", "evil.example"):
        refusal = site.host_refusal(make_mocked_request("GET", "/", headers={"Host": host}))
        assert refusal is not None and host in refusal


def test_an_api_on_every_interface_answers_only_the_names_it_is_served_under() -> None:
    """Found by the second perimeter review: listening on 0.0.0.0 (as the compose file and the
    Kubernetes manifests run it, with auth off), the API answered a request naming any host,
    so a page whose DNS an attacker pointed at it afterwards could use it as its own origin."""

    def refusal(site: session.Site, host: str) -> str | None:
        return site.host_refusal(make_mocked_request("GET", "/", headers={"Host": host}))

    anywhere = session.Site.of("0.0.0.0:8083", hosts=("Connect.Internal.",))
    for served in ("connect.internal:8083", "localhost:8083", "10.1.2.3:8083", "[fd00::5]:8083"):
        assert refusal(anywhere, served) is None
    for rebound in ("evil.example", "config:8083", "10.1.2.3.nip.io"):
        said = refusal(anywhere, rebound)
        assert said is not None and "HEADRACE_REST_HOSTS" in said
    origins = session.Site.of("0.0.0.0:8083", ("https://console.example.com",))
    assert refusal(origins, "console.example.com") is None
    assert refusal(session.Site.of("10.0.0.7:8083"), "config") is not None


def test_a_network_listener_with_auth_off_is_refused_unless_said_to_be_open() -> None:
    refused = session.open_refusal("0.0.0.0:8083", has_auth=False, open_allowed=False)
    assert refused is not None and "HEADRACE_REST_OPEN=true" in refused
    assert "HEADRACE_AUTH_TOKENS" in refused
    assert session.open_refusal("0.0.0.0:8083", has_auth=True, open_allowed=False) is None
    assert session.open_refusal("0.0.0.0:8083", has_auth=False, open_allowed=True) is None
    for loopback in ("127.0.0.1:8083", "localhost:8083", "[::1]:8083"):
        assert session.open_refusal(loopback, has_auth=False, open_allowed=False) is None
