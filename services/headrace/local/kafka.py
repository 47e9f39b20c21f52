"""The embedded Kafka broker: one KRaft node on loopback, from the jars Maven resolved.

``make kafka-jars`` resolves Apache Kafka into ``deploy/kafka/lib/<version>`` (4.3.0, or the
release ``HEADRACE_KAFKA_VERSION`` names, which ``make KAFKA_VERSION=...`` sets); this module
formats a data folder, starts ``kafka.Kafka`` with a modest heap, waits until the broker answers,
and stops it.
The test suite starts its own broker through the same class, on free ports and a fresh folder,
with :class:`SecureListeners` beside the plaintext listener: SASL_SSL with SCRAM-SHA-512 logins,
and SSL with required client certificates (mTLS), on which clients' security is tried. Without
them (``make run``) the broker has its plaintext listener only.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import os
import random
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import KafkaError

from headrace.core.security.kafkasecurity import PLAINTEXT
from headrace.core.settings import project_home
from headrace.local.pidfile import running_pid

DEFAULT_KAFKA_VERSION = "4.3.0"
"""The release the embedded broker runs, and the deploy manifests' broker image, by default."""
KAFKA_VERSION = os.environ.get("HEADRACE_KAFKA_VERSION", DEFAULT_KAFKA_VERSION)
"""The embedded broker's Apache Kafka release (``make KAFKA_VERSION=...`` resolves another)."""


def _kafka_dir() -> Path:
    return project_home() / "deploy" / "kafka"


def _lib() -> Path:
    return _kafka_dir() / "lib" / KAFKA_VERSION


LISTEN_PORTS = range(20000, 32768)
"""Where ``free_port`` looks: below Linux's default ephemeral range (32768-60999), which the
kernel draws from for every outgoing connection. A port handed out from that range could be
taken by some client's connection before the service that asked for it binds it."""


def free_port() -> int:
    """A TCP port on loopback that nothing listens on right now, outside the ephemeral range."""
    for port in random.sample(LISTEN_PORTS, 200):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port among 200 tried in {LISTEN_PORTS}")


def _java_cmd(main: str, heap: str, *args: str) -> list[str]:
    lib = _lib()
    if not any(lib.glob("kafka_2.13-*.jar")):
        raise SystemExit(
            f"Kafka {KAFKA_VERSION} jars are missing under {lib}: run `make kafka-jars` "
            f"(with KAFKA_VERSION={KAFKA_VERSION} if it is not the default)"
        )
    return [
        "java",
        f"-Xmx{heap}",
        f"-Xms{heap}",
        "-XX:+UseG1GC",
        # Kafka 3 logs through log4j 1 (reload4j), Kafka 4 through log4j 2: each reads its own.
        f"-Dlog4j.configuration=file:{_kafka_dir() / 'log4j.properties'}",
        f"-Dlog4j2.configurationFile=file:{_kafka_dir() / 'log4j2.properties'}",
        "-cp",
        f"{lib}/*",
        main,
        *args,
    ]


def new_cluster_id() -> str:
    """A KRaft cluster id: a random UUID in URL-safe base64, as Kafka makes them. Like Kafka's
    own ``Uuid.randomUuid``, never one starting with ``-``: the storage tool would read it as an
    option and refuse to format (one id in 64 would)."""
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id


async def broker_ready(bootstrap: str) -> bool:
    """True once the broker answers a metadata request and has a controller."""
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)  # refusals are expected here
    # The broker's own first listener, which this module makes plaintext whatever the clients
    # of a user's cluster are told.
    admin = AIOKafkaAdminClient(**PLAINTEXT.client_kwargs(bootstrap), request_timeout_ms=3000)
    try:
        await admin.start()
        cluster = await admin.describe_cluster()
        return cluster.get("controller_id", -1) not in (-1, None)
    except KafkaError:
        return False
    finally:
        await admin.close()


STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
# Kafka moved its ACL tool from the core module to the tools one; either answers the same flags.
ACL_TOOLS = ("org.apache.kafka.tools.AclCommand", "kafka.admin.AclCommand")
SCRAM_MECHANISM = "SCRAM-SHA-512"
SCRAM_LOGIN = "org.apache.kafka.common.security.scram.ScramLoginModule required;"


@dataclass(frozen=True)
class SecureListeners:
    """Two listeners of the embedded broker beside its plaintext one, each on its own port:

    - ``SASL_SSL``: TLS, then a SCRAM-SHA-512 login as one of ``scram_users`` (name, password),
      which are created when the data folder is formatted;
    - ``MTLS``: TLS with a client certificate required, signed by one in ``truststore``.

    Both present ``keystore``: one PEM file with the broker's private key, unencrypted PKCS#8
    (Java cannot open a key encrypted by PBES2, what today's tools write), and its certificate
    chain. Without ``restricted_users`` no authorizer runs: a client that logs in may do
    anything, as on the plaintext one. With them, Kafka's authorizer runs: every principal but
    those may do anything (super users), and those may do what no ACL denies them
    (:meth:`EmbeddedKafka.deny`), as an operator scopes a login.
    """

    sasl_ssl_port: int
    mtls_port: int
    keystore: Path
    truststore: Path
    scram_users: Sequence[tuple[str, str]] = field(default=(), repr=False)
    restricted_users: Sequence[tuple[str, str]] = field(default=(), repr=False)
    client_principal: str = ""  # the mTLS client certificate's principal, e.g. CN=headrace

    @property
    def sasl_ssl_bootstrap(self) -> str:
        return f"127.0.0.1:{self.sasl_ssl_port}"

    @property
    def mtls_bootstrap(self) -> str:
        return f"127.0.0.1:{self.mtls_port}"

    def listeners(self) -> dict[str, str]:
        """Each listener's name and address."""
        return {"SASL_SSL": self.sasl_ssl_bootstrap, "MTLS": self.mtls_bootstrap}

    def properties(self) -> dict[str, str]:
        """The broker settings of the two listeners, apart from their addresses."""
        authorizer = {}
        if self.restricted_users:
            supers = ["User:ANONYMOUS", *(f"User:{name}" for name, _ in self.scram_users)]
            supers += [f"User:{self.client_principal}"] if self.client_principal else []
            authorizer = {
                "authorizer.class.name": STANDARD_AUTHORIZER,
                "allow.everyone.if.no.acl.found": "true",
                "super.users": ";".join(supers),
            }
        return {
            **authorizer,
            "listener.name.sasl_ssl.sasl.enabled.mechanisms": SCRAM_MECHANISM,
            f"listener.name.sasl_ssl.{SCRAM_MECHANISM.lower()}.sasl.jaas.config": SCRAM_LOGIN,
            "listener.name.mtls.ssl.client.auth": "required",
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(self.keystore),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(self.truststore),
        }

    def format_args(self) -> list[str]:
        """What the storage tool is given to create the SCRAM users as it formats."""
        return [
            arg
            for name, password in (*self.scram_users, *self.restricted_users)
            for arg in ("--add-scram", f"{SCRAM_MECHANISM}=[name={name},password={password}]")
        ]


@dataclass
class EmbeddedKafka:
    """A single-node KRaft broker whose data lives in ``data_dir``; with ``secure``, it also has
    the listeners that describes."""

    data_dir: Path
    port: int = 9092
    controller_port: int = 0
    heap: str = "512m"
    secure: SecureListeners | None = None
    # Where clients are told to find the plaintext listener, when they must go through
    # something in front of it (a proxy on this port); the broker's own port when unset.
    advertised_port: int | None = None
    internal_port: int = 0  # the broker's own listener, when clients are sent elsewhere
    _proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def pid_file(self) -> Path:
        return self.data_dir / "kafka.pid"

    def _write_properties(self) -> Path:
        if not self.controller_port:
            self.controller_port = free_port()
        # Clients' listeners: the plaintext one, which the broker also speaks to itself on, and
        # the secure ones if any. The controller's listener stays plaintext.
        clients = {"PLAINTEXT": self.bootstrap}
        protocols = {"PLAINTEXT": "PLAINTEXT", "CONTROLLER": "PLAINTEXT"}
        if self.secure is not None:
            clients |= self.secure.listeners()
            protocols |= {"SASL_SSL": "SASL_SSL", "MTLS": "SSL"}
        internal = "PLAINTEXT"
        if self.advertised_port is not None:
            # The broker speaks to itself (transaction markers, say) on a listener of its own,
            # so that what stands in front of the clients' listener is between it and them only.
            if not self.internal_port:
                self.internal_port = free_port()
            internal = "INTERNAL"
            clients["INTERNAL"] = f"127.0.0.1:{self.internal_port}"
            protocols["INTERNAL"] = "PLAINTEXT"
        listening = ",".join(f"{name}://{address}" for name, address in clients.items())
        if self.advertised_port is not None:
            clients["PLAINTEXT"] = f"127.0.0.1:{self.advertised_port}"
        advertised = ",".join(f"{name}://{address}" for name, address in clients.items())
        props = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@127.0.0.1:{self.controller_port}",
            "listeners": f"{listening},CONTROLLER://127.0.0.1:{self.controller_port}",
            "advertised.listeners": advertised,
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": internal,
            "listener.security.protocol.map": ",".join(f"{k}:{v}" for k, v in protocols.items()),
            "log.dirs": str(self.data_dir / "logs"),
            "num.partitions": "1",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "4",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            "auto.create.topics.enable": "true",
            "log.cleaner.dedupe.buffer.size": "8388608",
            **(self.secure.properties() if self.secure is not None else {}),
        }
        path = self.data_dir / "server.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        return path

    def running_pid(self) -> int | None:
        """The pid of a broker started earlier from this folder, if it still runs."""
        return running_pid(self.pid_file)

    def start(self, timeout: float = 90.0) -> None:
        """Formats the folder on first use, starts the broker and waits until it takes clients."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if self.running_pid() is not None:
            self.wait_ready(timeout)
            return
        props = self._write_properties()
        if not (self.data_dir / "logs" / "meta.properties").exists():
            cluster_id = new_cluster_id()
            subprocess.run(
                _java_cmd(
                    "kafka.tools.StorageTool",
                    "256m",
                    "format",
                    "-t",
                    cluster_id,
                    "-c",
                    str(props),
                    "--ignore-formatted",
                    *(self.secure.format_args() if self.secure is not None else []),
                ),
                check=True,
                stdout=subprocess.DEVNULL,
            )
        with (self.data_dir / "kafka.log").open("ab") as log:
            proc = subprocess.Popen(
                _java_cmd("kafka.Kafka", self.heap, str(props)),
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self._proc = proc
        self.pid_file.write_text(str(proc.pid))
        self.wait_ready(timeout, proc)

    def wait_ready(self, timeout: float, proc: subprocess.Popen[bytes] | None = None) -> None:
        """Waits until the broker answers a metadata request on its listener."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc is not None and proc.poll() is not None:
                raise RuntimeError(
                    f"Kafka exited with {proc.returncode}; see {self.data_dir}/kafka.log"
                )
            if asyncio.run(broker_ready(self.bootstrap)):
                return
            time.sleep(0.25)
        raise TimeoutError(f"Kafka did not become ready on {self.bootstrap} in {timeout}s")

    def deny(self, principal: str, topics: Sequence[str]) -> None:
        """Denies ``principal`` (``User:name``) every operation on each topic, with Kafka's own
        ACL tool over the plaintext listener; the broker must run an authorizer."""
        for tool in ACL_TOOLS:
            command = _java_cmd(
                tool,
                "256m",
                "--bootstrap-server",
                self.bootstrap,
                "--add",
                "--deny-principal",
                principal,
                "--operation",
                "All",
                *(a for topic in topics for a in ("--topic", topic)),
            )
            done = subprocess.run(command, capture_output=True, text=True, check=False)
            if done.returncode == 0:
                return
            if "ClassNotFoundException" not in done.stderr + done.stdout:
                raise RuntimeError(f"{tool} failed: {done.stderr or done.stdout}")
        raise RuntimeError(f"no ACL tool among {', '.join(ACL_TOOLS)} in Kafka {KAFKA_VERSION}")

    def transactions(self, *args: str) -> str:
        """Runs Kafka's transactions tool (``kafka-transactions.sh``) against this broker with
        ``args`` (``find-hanging --broker-id 1``, ``abort --topic ...``); its output. Raises
        RuntimeError, with what the tool said, when it fails."""
        command = _java_cmd(
            "org.apache.kafka.tools.TransactionsCommand",
            "256m",
            "--bootstrap-server",
            self.bootstrap,
            *args,
        )
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"kafka-transactions {' '.join(args)}: {done.stderr or done.stdout}")
        return done.stdout

    def stop(self, timeout: float = 30.0) -> None:
        """Stops the broker cleanly (SIGTERM), then by force if it does not go in time."""
        pid = self.running_pid()
        if pid is None:
            return
        os.kill(pid, signal.SIGTERM)
        if self._proc is not None:  # our own child: reap it, or it lingers as a zombie
            try:
                self._proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            self.pid_file.unlink(missing_ok=True)
            return
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.1)
        else:
            os.kill(pid, signal.SIGKILL)
        self.pid_file.unlink(missing_ok=True)
