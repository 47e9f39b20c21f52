"""Apache Kafka Connect itself, as a peer, on the run's broker, from Maven's jars: standalone,
or distributed with two workers.

``make bench`` resolves ``deploy/kafka-connect/pom.xml`` (connect-runtime, connect-file,
connect-json and the basic auth extension at the broker's version) into
``deploy/kafka-connect/lib/<version>``. Each worker is
a JVM started as Kafka's scripts start one (their heap, ``-Xms256M -Xmx2G``, and their JVM
options, G1 among them), its REST listener on a free loopback port and the String converter
(the file connectors move text); it is ready once ``GET /health`` (KIP-1017) says so, after it
joined its group and read its topics. Connectors are created, watched and deleted over the REST
API, as a user would, so the clock starts at the create call as it does for headrace. Connect's
own defaults stay as they are unless a workload passes worker overrides. Tests pass a smaller
heap (``heap``). With ``credentials``, the
REST API takes only requests with that user and password (basic auth, Connect's own extension);
with ``tls``, it listens on HTTPS and takes only clients with a certificate its CA signed.
"""

from __future__ import annotations

import signal
import ssl
import subprocess
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from headrace.clients.connect import BlockingConnect, RestError, Side, basic_auth
from headrace.local.connect import STOCK_HEAP, java_command
from headrace.local.kafka import free_port

STRING_CONVERTER = "org.apache.kafka.connect.storage.StringConverter"


def _properties(path: Path, values: Mapping[str, str]) -> Path:
    path.write_text("".join(f"{k}={v}\n" for k, v in values.items()))
    return path


REST_RETRY_PAUSE_S = 0.02  # short: a wait on a rebalancing group (409) is counted against Connect


def rest_client(
    port: int,
    *,
    credentials: tuple[str, str] | None = None,
    context: ssl.SSLContext | None = None,
    retry_pause_s: float = REST_RETRY_PAUSE_S,
    on_retry: Callable[[], None] = lambda: None,
) -> BlockingConnect:
    """The one Connect REST client (``headrace.clients.connect``) for a REST API in Connect's
    shape on a loopback ``port``, Connect's or headrace's: with basic auth's ``credentials``,
    if given, and over HTTPS with ``context``, if given. A call answered 409 while a
    distributed group rebalances is made again every ``retry_pause_s``, ``on_retry`` called
    before each."""
    scheme = "https" if context is not None else "http"
    side = Side(
        "Kafka Connect",
        f"{scheme}://127.0.0.1:{port}",
        headers=basic_auth(*credentials) if credentials is not None else {},
        ssl=context,
    )
    return BlockingConnect(side, retry_pause_s=retry_pause_s, on_retry=on_retry)


BASIC_AUTH_EXTENSION = "org.apache.kafka.connect.rest.basic.auth.extension"


@dataclass(frozen=True)
class RestTls:
    """HTTPS for Connect's REST API, every client asked for a certificate: its own key and
    certificate (``keystore``) and the CA its clients' come from (``truststore``), both PKCS12
    under ``password``; ``client`` is how the calls made here present themselves."""

    keystore: Path
    truststore: Path
    password: str
    client: ssl.SSLContext

    def listener(self, port: int) -> dict[str, str]:
        https = "listeners.https."
        return {
            "listeners": f"https://127.0.0.1:{port}",
            "rest.advertised.listener": "https",
            https + "ssl.keystore.type": "PKCS12",
            https + "ssl.keystore.location": str(self.keystore),
            https + "ssl.keystore.password": self.password,
            https + "ssl.key.password": self.password,
            https + "ssl.truststore.type": "PKCS12",
            https + "ssl.truststore.location": str(self.truststore),
            https + "ssl.truststore.password": self.password,
            https + "ssl.client.auth": "required",
        }


@dataclass
class ConnectWorker:
    """One Connect worker JVM (``mode`` standalone or distributed), driven over its REST API."""

    bootstrap: str
    folder: Path
    mode: str = "standalone"
    worker_overrides: Mapping[str, str] = field(default_factory=dict)
    port: int = field(default_factory=free_port)
    credentials: tuple[str, str] | None = None
    tls: RestTls | None = None
    heap: Sequence[str] = STOCK_HEAP
    _proc: subprocess.Popen[bytes] | None = None
    _client: BlockingConnect | None = None

    def _config(self) -> dict[str, str]:
        worker = {
            "bootstrap.servers": self.bootstrap,
            "key.converter": STRING_CONVERTER,
            "value.converter": STRING_CONVERTER,
            # Its sink flushes its file when it commits offsets: a second, not the example's ten,
            # so the last lines are out within a second of arriving, as headrace's are.
            "offset.flush.interval.ms": "1000",
            "listeners": f"http://127.0.0.1:{self.port}",
            "rest.advertised.host.name": "127.0.0.1",
            "rest.advertised.port": str(self.port),
        }
        if self.mode == "standalone":
            worker["offset.storage.file.filename"] = str(self.folder / "offsets")
        if self.tls is not None:
            worker.update(self.tls.listener(self.port))
        if self.credentials is not None:
            worker["rest.extension.classes"] = (
                f"{BASIC_AUTH_EXTENSION}.BasicAuthSecurityRestExtension"
            )
        return {**worker, **self.worker_overrides}

    def _login_config(self) -> list[str]:
        """The JVM flag that points basic auth's login module at the one user's password."""
        if self.credentials is None:
            return []
        user, password = self.credentials
        users = _properties(self.folder / "rest-users.properties", {user: password})
        jaas = self.folder / "rest-jaas.conf"
        jaas.write_text(
            "KafkaConnect {\n"
            f'  {BASIC_AUTH_EXTENSION}.PropertyFileLoginModule required file="{users}";\n'
            "};\n"
        )
        return [f"-Djava.security.auth.login.config={jaas}"]

    def launch(self) -> None:
        """Starts the JVM; :meth:`wait_ready` waits for its REST API."""
        self.folder.mkdir(parents=True, exist_ok=True)
        properties = _properties(self.folder / "worker.properties", self._config())
        command = java_command(self.mode, properties, self.heap, self._login_config())
        with (self.folder / "connect.log").open("ab") as log:
            self._proc = subprocess.Popen(
                command,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )

    def wait_ready(self, timeout: float = 90.0) -> None:
        deadline = time.monotonic() + timeout
        while not self._answers():
            if (tail := self.failed()) is not None:
                raise RuntimeError(f"Kafka Connect exited:\n{tail}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"Kafka Connect did not answer in {timeout}s")
            time.sleep(0.2)

    def start(self, timeout: float = 90.0) -> None:
        """Starts the JVM and waits for its REST API; a worker that never answers is stopped."""
        self.launch()
        try:
            self.wait_ready(timeout)
        except BaseException:
            self.stop()
            raise

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def restart(self, timeout: float = 90.0) -> None:
        """Starts the worker again, on its port and with its files, once it has been stopped or
        killed; ready when this returns. A no-op while it runs (not a second JVM)."""
        if not self.running:
            self.start(timeout)

    def _answers(self) -> bool:
        """Whether the worker says it is ready (``GET /health``: 200 once it has joined its
        group and read its topics, 503 before; a release before 3.9 has none, and is taken as
        ready once it lists its connectors)."""
        for path in ("/health", "/connectors"):
            try:
                self.call("GET", path)
            except RestError as e:  # refused (no status) until it listens, 503 until ready
                if e.status != 404:  # a missing endpoint
                    return False
                continue
            return True
        return False

    def call(self, method: str, path: str, body: object = None) -> object:
        """One REST call; retried while a distributed group rebalances (409), as Connect's own
        clients are told to."""
        if self._client is None:
            context = self.tls.client if self.tls is not None else None
            self._client = rest_client(self.port, credentials=self.credentials, context=context)
        return self._client.call(method, path, body)

    def create(self, name: str, config: Mapping[str, str]) -> None:
        self.call("POST", "/connectors", {"name": name, "config": dict(config)})

    def delete(self, name: str) -> None:
        self.call("DELETE", f"/connectors/{name}")

    def status(self, name: str) -> dict[str, object]:
        """The connector's status as Connect's REST API gives it (``tasks``: id, state,
        worker_id)."""
        found = self.call("GET", f"/connectors/{name}/status")
        assert isinstance(found, dict)
        return found

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def failed(self) -> str | None:
        """The log's tail when the worker has exited, None while it runs."""
        if self._proc is None or self._proc.poll() is None:
            return None
        lines = (self.folder / "connect.log").read_text(errors="replace").splitlines()
        return "\n".join(lines[-30:])

    def kill(self) -> None:
        """SIGKILL: the worker is gone without a word to its group."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.send_signal(signal.SIGKILL)
            self._proc.wait()
        self._forget_connections()

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(30)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._forget_connections()

    def _forget_connections(self) -> None:
        """The client closed with the worker: a connection kept open to a worker that is gone
        would fail the first call to the one started in its place."""
        if self._client is not None:
            self._client.close()
            self._client = None


def standalone(bootstrap: str, folder: Path, **overrides: str) -> ConnectWorker:
    return ConnectWorker(bootstrap, folder, "standalone", overrides)


@dataclass
class ConnectDistributed:
    """A Connect cluster of ``workers`` distributed workers with a group and internal topics of
    its own; calls go to the first worker, which forwards them to the leader as Connect does."""

    bootstrap: str
    folder: Path
    workers: int = 2
    worker_overrides: Mapping[str, str] = field(default_factory=dict)
    credentials: tuple[str, str] | None = None
    tls: RestTls | None = None
    heap: Sequence[str] = STOCK_HEAP
    members: list[ConnectWorker] = field(default_factory=list)

    group: str = field(default_factory=lambda: f"connect-{uuid.uuid4().hex[:8]}")

    def topic(self, role: str) -> str:
        """The cluster's internal topic for ``role``: configs, offsets or status."""
        return f"{self.group}-{role}"

    def start(self, timeout: float = 120.0) -> None:
        shared = {
            "group.id": self.group,
            "config.storage.topic": self.topic("configs"),
            "offset.storage.topic": self.topic("offsets"),
            "status.storage.topic": self.topic("status"),
            "config.storage.replication.factor": "1",
            "offset.storage.replication.factor": "1",
            "status.storage.replication.factor": "1",
            **self.worker_overrides,
        }
        self.members = [
            ConnectWorker(
                self.bootstrap,
                self.folder / f"worker-{i}",
                "distributed",
                shared,
                credentials=self.credentials,
                tls=self.tls,
                heap=self.heap,
            )
            for i in range(1, self.workers + 1)
        ]
        try:
            for member in self.members:
                member.launch()
            for member in self.members:
                member.wait_ready(timeout)
        except BaseException:
            self.stop()
            raise

    @property
    def pids(self) -> list[int | None]:
        return [m.pid for m in self.members]

    def _live(self) -> ConnectWorker:
        return next(m for m in self.members if m.failed() is None and m.pid is not None)

    def create(self, name: str, config: Mapping[str, str]) -> None:
        self._live().create(name, config)

    def delete(self, name: str) -> None:
        self._live().delete(name)

    def status(self, name: str) -> dict[str, object]:
        return self._live().status(name)

    def stop(self) -> None:
        for member in self.members:
            member.stop()
