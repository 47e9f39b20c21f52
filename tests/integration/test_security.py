"""TLS, mTLS and roles on real services, with certificates the suite makes (``tests.pki``).

One stack speaks TLS and takes tokens: the config service, a coordinator and a worker, as real
processes. Clients are the real ones (``ConfigClient``, HTTPS with ``urllib``, a gRPC channel),
each with the credentials a user would give it. The worker holds an ``internal`` token: its
joining the coordinator, and the task configs of the connector it runs reaching the config
service, are the internal calls over TLS. A second config service requires client certificates
and knows their names' roles.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import secrets
import ssl
import stat
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

import grpc
import pyarrow as pa
import pytest

from headrace.cli import probe
from headrace.clients.config import ConfigClient
from headrace.clients.errors import rpc_code
from headrace.clients.executor import ExecutorClient
from headrace.core.security import tls
from headrace.core.security.guard import ServerSecurity
from headrace.core.settings import BUILTIN_PLUGINS, Settings
from headrace.executor.admission import Limits
from headrace.executor.server import build_server
from headrace.executor.service import ExecutorService
from headrace.local.kafka import free_port
from headrace.local.stack import COORDINATOR, Stack
from headrace.sdk.paths import Paths
from headrace.v1 import config_pb2, config_pb2_grpc, coordinator_pb2, coordinator_pb2_grpc
from tests.integration.test_automation import Automation
from tests.pki import Identity, Pki, make_pki
from tests.support import local_settings, wait_for

pytestmark = pytest.mark.kafka

ADMIN, READ, INTERNAL = (secrets.token_hex(16) for _ in range(3))
GEN = {"connector.class": "DatagenSource", "batch.size": "10", "interval.ms": "200"}


@dataclass(frozen=True)
class Secured:
    stack: Stack
    pki: Pki

    @property
    def settings(self) -> Settings:
        return self.stack.settings

    def client(
        self, token: str = "", holding: Identity | None = None, ca: Path | None = None
    ) -> ConfigClient:
        """A client trusting the stack's CA (or ``ca``), sending ``token``, presenting the
        certificate it is ``holding``."""
        return ConfigClient(self.settings.config_addr, self.as_client(token, holding, ca))

    def as_client(
        self, token: str = "", holding: Identity | None = None, ca: Path | None = None
    ) -> Settings:
        return Settings(
            tls_ca=str(ca or self.pki.ca),
            token=token,
            tls_cert=str(holding.cert) if holding else "",
            tls_key=str(holding.key) if holding else "",
        )

    def rest(
        self,
        method: str,
        path: str,
        token: str = "",
        body: Any = None,
        holding: Identity | None = None,
        ca: Path | None = None,
    ) -> tuple[int, Any]:
        """An HTTPS call of the REST API; (status, JSON body)."""
        settings = self.as_client(token, holding, ca)
        loaded = tls.load(settings)
        assert loaded is not None
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        request = urllib.request.Request(
            f"https://{self.settings.rest_addr}{path}",
            data=None if body is None else json.dumps(body).encode(),
            method=method,
            headers=headers,
        )
        context = tls.client_ssl_context(settings, loaded)
        try:
            with urllib.request.urlopen(request, timeout=30, context=context) as response:
                status, text = response.status, response.read()
        except urllib.error.HTTPError as error:
            status, text = error.code, error.read()
        return status, json.loads(text) if text else None


def secured_settings(
    kafka: str, folder: Path, pki: Pki, client_auth: str = "none", roles: str = "", token: str = ""
) -> Settings:
    server = pki.issue("headrace")
    tokens = folder / "tokens"
    tokens.write_text(
        f"# who may do what\nadmin {ADMIN}\nread {READ}\ninternal {INTERNAL} worker-*\n"
    )
    settings = local_settings(kafka, f"tls{free_port()}", folder, (BUILTIN_PLUGINS,))
    return replace(
        settings,
        tls_cert=str(server.cert),
        tls_key=str(server.key),
        tls_ca=str(pki.ca),
        auth_tokens=str(tokens),
        tls_client_auth=client_auth,
        auth_mtls_roles=roles,
        token=token,
    )


@pytest.fixture(scope="module")
def secured(kafka: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    folder = tmp_path_factory.mktemp("tls")
    pki = make_pki(folder / "pki")
    # Every service's token is the internal one: the worker's calls are the internal calls.
    stack = Stack(secured_settings(kafka, folder, pki, token=INTERNAL))
    try:
        stack.start("config")
        stack.start("coordinator", ready=COORDINATOR)
        stack.start("worker-1")  # serves health once it has joined the coordinator
        yield Secured(stack, pki)
    finally:
        stack.down()


@pytest.fixture(scope="module")
def mutual(kafka: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    folder = tmp_path_factory.mktemp("mtls")
    pki = make_pki(folder / "pki")
    settings = secured_settings(
        kafka,
        folder,
        pki,
        client_auth="required",
        roles="ops=admin,auditor=read",
    )
    stack = Stack(settings)
    try:
        stack.start("config")
        yield Secured(stack, pki)
    finally:
        stack.down()


def refused(call: Any) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as info:
        call()
    return info.value


def details(error: grpc.RpcError) -> str:
    return str(error.details())  # an RpcError is also its grpc.Call


def test_a_plaintext_client_or_one_trusting_another_ca_gets_nowhere(
    secured: Secured, tmp_path: Path
) -> None:
    address = secured.settings.config_addr
    with grpc.insecure_channel(address) as channel:
        stub = config_pb2_grpc.ConfigServiceStub(channel)
        error = refused(lambda: stub.ListConnectors(config_pb2.ListConnectorsRequest(), timeout=10))
    assert rpc_code(error) is grpc.StatusCode.UNAVAILABLE
    stranger = make_pki(tmp_path / "other")
    with ConfigClient(address, Settings(tls_ca=str(stranger.ca), token=ADMIN)) as client:
        assert rpc_code(refused(client.names)) is grpc.StatusCode.UNAVAILABLE
    with pytest.raises(urllib.error.URLError) as https:
        secured.rest("GET", "/connectors", ADMIN, ca=stranger.ca)
    assert isinstance(https.value.reason, ssl.SSLCertVerificationError)


def test_health_needs_no_token_but_tls(secured: Secured, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HEADRACE_TLS_CA", str(secured.pki.ca))
    monkeypatch.delenv("HEADRACE_TOKEN", raising=False)
    address, api = secured.settings.config_addr, "headrace.v1.ConfigService"
    assert probe.check(Settings(), address, api, 10) == "SERVING"
    # The name the certificate must carry, when the probe dials another (loopback in a pod).
    assert probe.check(Settings(), address, api, 10, server_name="localhost") == "SERVING"
    with pytest.raises(grpc.RpcError) as misnamed:
        probe.check(Settings(), address, api, 10, server_name="elsewhere")
    assert rpc_code(misnamed.value) is grpc.StatusCode.UNAVAILABLE
    status, body = secured.rest("GET", "/health")
    assert status == 200 and body["status"] == "healthy"


def test_without_a_token_every_call_is_unauthenticated(secured: Secured) -> None:
    with secured.client() as client:
        error = refused(client.names)
    assert rpc_code(error) is grpc.StatusCode.UNAUTHENTICATED
    assert "ListConnectors needs the role admin or read" in details(error)
    with secured.client("not-a-token-anyone-was-given") as client:
        assert rpc_code(refused(client.names)) is grpc.StatusCode.UNAUTHENTICATED
    status, body = secured.rest("GET", "/connectors")
    assert status == 401
    assert body["error_code"] == 401 and "needs the role admin or read" in body["message"]


def test_a_read_token_reads_but_creates_nothing_and_admin_creates(secured: Secured) -> None:
    config = {**GEN, "topic": "never"}
    with secured.client(READ) as reader:
        error = refused(lambda: reader.create("by-reader", config))
        assert rpc_code(error) is grpc.StatusCode.PERMISSION_DENIED
        assert details(error).endswith("CreateConnector needs the role admin, not read")
        status, body = secured.rest(
            "POST", "/connectors", READ, {"name": "by-reader", "config": config}
        )
        assert (status, body["error_code"]) == (403, 403)
        assert "needs the role admin, not read" in body["message"]
        status, _ = secured.rest(
            "PUT",
            "/connector-plugins/DatagenSource/config/validate",
            READ,
            {**config, "connector.class": "DatagenSource"},
        )
        assert status == 200  # validating changes nothing: a read
        assert "by-reader" not in reader.names()

    with secured.client(ADMIN) as admin:
        admin.create("by-admin", {**GEN, "topic": "by-admin"})
    status, body = secured.rest(
        "POST", "/connectors", ADMIN, {"name": "by-rest", "config": {**GEN, "topic": "by-rest"}}
    )
    assert status == 201 and body["name"] == "by-rest"
    with secured.client(READ) as reader:
        assert {"by-admin", "by-rest"} <= set(reader.names())
        assert "by-reader" not in reader.names()
    status, body = secured.rest("GET", "/connectors", READ)
    assert status == 200 and "by-reader" not in body


class Browser:
    """HTTPS as a browser speaks it to the console: forms, the cookie it was given, headers
    of its own; redirects are answers, not followed."""

    def __init__(self, secured: Secured) -> None:
        settings = secured.as_client()
        loaded = tls.load(settings)
        assert loaded is not None
        self.context = tls.client_ssl_context(settings, loaded)
        self.host, _, port = secured.settings.rest_addr.rpartition(":")
        self.port = int(port)
        self.cookie = ""

    def __call__(
        self, method: str, path: str, body: bytes | None = None, **headers: str
    ) -> tuple[int, dict[str, str], str]:
        connection = http.client.HTTPSConnection(self.host, self.port, context=self.context)
        sent = {k.replace("_", "-"): v for k, v in headers.items()}
        if self.cookie:
            sent["Cookie"] = self.cookie
        try:
            connection.request(method, path, body=body, headers=sent)
            response = connection.getresponse()
            return response.status, dict(response.getheaders()), response.read().decode()
        finally:
            connection.close()

    def log_in(self, token: str, **headers: str) -> tuple[int, dict[str, str], str]:
        form = urllib.parse.urlencode({"token": token}).encode()
        answer = self("POST", "/ui/login", form, Content_Type=FORM, **headers)
        given = answer[1].get("Set-Cookie", "")
        if given:
            self.cookie = given.split(";")[0]
        return answer


FORM = "application/x-www-form-urlencoded"


def test_the_console_takes_a_login_and_acts_with_its_role_and_csrf_header(
    secured: Secured,
) -> None:
    browser = Browser(secured)
    status, _, page = browser("GET", "/ui/")
    assert status == 401 and 'action="/ui/login"' in page
    assert browser.log_in("not-a-token-anyone-was-given")[0] == 401
    status, _, page = browser.log_in(INTERNAL)
    assert status == 403 and "read or admin" in page
    assert browser.log_in(ADMIN, Origin="https://elsewhere.example")[0] == 403
    assert not browser.cookie

    status, headers, _ = browser.log_in(READ)
    assert (status, headers["Location"]) == (303, "/ui/")
    assert {"HttpOnly", "Secure", "SameSite=Strict"} <= {
        part.strip() for part in headers["Set-Cookie"].split(";")
    }
    status, _, page = browser("GET", "/ui/")
    assert status == 200 and READ not in page
    status, _, text = browser("GET", "/ui/api/session")
    session = json.loads(text)
    assert status == 200 and session["role"] == "read" and READ not in text
    status, _, text = browser("GET", "/ui/api/cluster")
    assert status == 200 and [r["role"] for r in json.loads(text)["replicas"]] == ["leader"]
    config = json.dumps({"name": "by-console", "config": {**GEN, "topic": "by-console"}})
    status, _, text = browser(
        "POST",
        "/connectors",
        config.encode(),
        Content_Type="application/json",
        X_Headrace_Csrf=session["csrf"],
    )
    assert status == 403 and "needs the role admin, not read" in text

    assert browser.log_in(ADMIN)[0] == 303
    status, _, text = browser(
        "POST", "/connectors", config.encode(), Content_Type="application/json"
    )
    assert status == 403 and "X-Headrace-Csrf" in text  # another site's form could send this
    csrf = json.loads(browser("GET", "/ui/api/session")[2])["csrf"]
    status, _, text = browser(
        "POST",
        "/connectors",
        config.encode(),
        Content_Type="application/json",
        X_Headrace_Csrf=csrf,
    )
    assert status == 201, text
    assert browser("DELETE", "/connectors/by-console", X_Headrace_Csrf=csrf)[0] == 204
    status, headers, _ = browser("POST", "/ui/logout", X_Headrace_Csrf=csrf)
    assert status == 303 and "Max-Age=0" in headers["Set-Cookie"]


def task_running(client: ConfigClient, name: str) -> bool:
    """Whether the connector's one task is RUNNING."""
    status = client.status(name)
    return len(status.tasks) == 1 and status.tasks[0].state == "RUNNING"


def test_the_internal_token_runs_a_worker_but_not_the_api(secured: Secured) -> None:
    """The worker joined the coordinator with it (it serves health only then); the connector's
    task configs reached the config service from the worker, signed, over TLS."""
    with secured.client(INTERNAL) as internal:
        error = refused(internal.names)
    assert rpc_code(error) is grpc.StatusCode.PERMISSION_DENIED
    assert "not internal" in details(error)
    with secured.client(ADMIN) as admin:
        admin.create("over-tls", {**GEN, "topic": "over-tls"})
        wait_for(
            "the worker running the connector's task", partial(task_running, admin, "over-tls")
        )
    # The plugin process it runs it in listens in a folder only the worker's user may enter.
    assert stat.S_IMODE((secured.settings.var_dir / "run").stat().st_mode) == 0o700


def join_as(secured: Secured, token: str, worker_id: str) -> grpc.RpcError:
    """Joins the coordinator as ``worker_id`` with ``token``; the error the stream ends with."""
    join = coordinator_pb2.WorkerMessage(join=coordinator_pb2.Join(worker_id=worker_id))
    address = secured.settings.coordinator_addrs[0]
    with tls.channel(address, secured.as_client(token)) as channel:
        stream = coordinator_pb2_grpc.CoordinatorStub(channel).Join(iter([join]), timeout=30)
        with pytest.raises(grpc.RpcError) as ended:
            for _ in stream:
                pass
    return ended.value


def test_a_worker_joins_only_as_the_id_its_token_names(secured: Secured) -> None:
    """The internal token's line names worker-*: no holder of it, nor of another role, takes
    an id outside that, so no caller cuts a worker off by joining under its id."""
    intruder = join_as(secured, INTERNAL, "intruder")
    assert rpc_code(intruder) is grpc.StatusCode.PERMISSION_DENIED
    assert "this caller's credentials name worker-*, not 'intruder'" in details(intruder)
    reader = join_as(secured, READ, "worker-1")
    assert rpc_code(reader) is grpc.StatusCode.PERMISSION_DENIED
    assert "needs the role admin or internal, not read" in details(reader)
    # The worker it named is still in the group, running what it was given.
    with secured.client(ADMIN) as admin:
        admin.create("still-joined", {**GEN, "topic": "still-joined"})
        wait_for("worker-1 running its task", partial(task_running, admin, "still-joined"))
        admin.delete("still-joined")


def test_automation_commands_are_applied_under_auth(secured: Secured) -> None:
    """The agent calls its own service over TLS, with a token only that process holds."""

    async def scenario() -> dict[str, Any]:
        async with Automation(secured.settings) as automation:
            return await automation.call("tls-1", "ListConnectors", {})

    answer = asyncio.run(scenario())
    assert answer["code"] == "OK", answer


def test_mtls_refuses_clients_without_a_certificate(mutual: Secured) -> None:
    with mutual.client(ADMIN) as client:
        assert rpc_code(refused(client.names)) is grpc.StatusCode.UNAVAILABLE
    # Under TLS 1.3 the server's refusal comes after the handshake: a dropped connection.
    with pytest.raises((urllib.error.URLError, ConnectionError, ssl.SSLError)):
        mutual.rest("GET", "/connectors", ADMIN)


def test_mtls_gives_a_certificate_the_role_its_name_maps_to(mutual: Secured) -> None:
    ops, auditor, stranger = (mutual.pki.issue(name) for name in ("ops", "auditor", "stranger"))

    with mutual.client(holding=ops) as admin:
        admin.create("by-ops", {**GEN, "topic": "by-ops"})
    with mutual.client(holding=auditor) as reader:
        assert "by-ops" in reader.names()
        error = refused(lambda: reader.create("by-auditor", {**GEN, "topic": "x"}))
        assert rpc_code(error) is grpc.StatusCode.PERMISSION_DENIED
    with mutual.client(holding=stranger) as nobody:
        error = refused(nobody.names)
        assert rpc_code(error) is grpc.StatusCode.UNAUTHENTICATED
        assert "CN=stranger has no role" in details(error)
    with mutual.client(READ, holding=stranger) as with_token:
        assert "by-ops" in with_token.names()  # a known token does what a nameless cert cannot
    status, body = mutual.rest("GET", "/connectors", holding=auditor)
    assert status == 200 and "by-ops" in body
    status, _ = mutual.rest("DELETE", "/connectors/by-ops", holding=auditor)
    assert status == 403


@pytest.fixture
def executor(secured: Secured, tmp_path: Path) -> Iterator[str]:
    """The executor's own thread-pool server and servicer, in this process, with the stack's
    TLS and tokens. Nothing here reaches Spark: every call is refused, or counts rows of an
    empty folder, so the servicer runs without a SparkSession."""
    spark: Any = None
    service = ExecutorService(spark, Limits(), Paths((tmp_path,)))
    security = ServerSecurity.load(secured.settings)
    server, port = build_server(service, "127.0.0.1", 0, Limits(), security)
    server.start()
    try:
        yield f"127.0.0.1:{port}"
    finally:
        server.stop(0).wait()


def test_the_executor_takes_writes_from_data_callers_and_reads_from_readers(
    secured: Secured, executor: str, tmp_path: Path
) -> None:
    # Many pieces, each one a write the refusal could race.
    batch = pa.table({"kafka_offset": pa.array(range(20_000), pa.int64())})

    async def scenario(token: str, call: str) -> Any:
        client = ExecutorClient(
            executor, settings=secured.as_client(token), retry_deadline_s=5, chunk_bytes=1024
        )
        async with client:
            if call == "count":
                return await client.count_rows(str(tmp_path / "empty"))
            return await client.write_batch(
                connector="c",
                task=0,
                topic="t",
                topic_id="id",
                partition=0,
                table=batch,
                path=str(tmp_path / "out"),
            )

    def code(token: str, call: str) -> tuple[grpc.StatusCode, str]:
        with pytest.raises(grpc.aio.AioRpcError) as info:
            asyncio.run(scenario(token, call))
        return info.value.code(), str(info.value.details())

    assert asyncio.run(scenario(READ, "count")) == 0
    assert asyncio.run(scenario(ADMIN, "count")) == 0
    assert code(INTERNAL, "count") == (
        grpc.StatusCode.PERMISSION_DENIED,
        "/headrace.v1.Executor/CountRows needs the role admin or read, not internal",
    )
    # A write streams its batch: refused before a byte of it is sent, with the refusal whole
    # every time.
    for _ in range(20):
        assert code(READ, "write") == (
            grpc.StatusCode.PERMISSION_DENIED,
            "/headrace.v1.Executor/WriteStream needs the role admin or data or internal, not read",
        )
        assert code("", "write")[0] is grpc.StatusCode.UNAUTHENTICATED
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("service", ["config", "coordinator", "worker", "executor"])
def test_a_service_with_a_bad_setting_does_not_start_and_names_it(
    service: str, tmp_path: Path
) -> None:
    pki = make_pki(tmp_path / "pki")
    own, other = pki.issue("own"), pki.issue("other")
    env = {
        **os.environ,
        "HEADRACE_TLS_CERT": str(own.cert),
        "HEADRACE_TLS_KEY": str(other.key),
        "HEADRACE_TLS_CA": str(pki.ca),
    }
    started = subprocess.run(
        [sys.executable, "-m", f"headrace.{service}"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert started.returncode == 2, started.stderr
    assert f"HEADRACE_TLS_KEY: {other.key} is not the key of HEADRACE_TLS_CERT" in started.stderr
