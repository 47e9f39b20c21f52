"""The perimeter, from a hostile plugin's side: a stack with TLS, tokens and a Kafka login for
its plugins that the broker scopes, as docs/operations/security.md says to deploy it, runs the
prying test plugin, which tries to reach past what it was given, and fails at each:

- the tokens file and its worker's environment cannot be read (the plugin process is confined,
  and its worker keeps its memory to itself);
- it holds no service token, only the data role's, with which it cannot join the coordinator;
- its Kafka login is the one the operator gave plugins, which the broker keeps from the
  cluster's internal topics: it can neither produce a command nor read the session key.

Without Landlock in the kernel this test fails: the sandbox is required here, never skipped.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path

import pytest

from headrace.clients.config import ConfigClient
from headrace.core.settings import BUILTIN_PLUGINS, Settings
from headrace.core.storage.topics import TOPICS
from headrace.local.kafka import EmbeddedKafka, free_port
from headrace.local.stack import COORDINATOR, Stack
from tests.kafkatls import SecureBroker
from tests.pki import make_pki
from tests.support import consume, local_settings, log_events, wait_for

pytestmark = pytest.mark.kafka

TEST_PLUGINS = Path(__file__).parents[1] / "plugins"
GUARDED = "guarded"  # a data topic the plugins' own login may not touch
ADMIN, INTERNAL, DATA = (secrets.token_hex(16) for _ in range(3))


@dataclass(frozen=True)
class Perimeter:
    stack: Stack
    tokens: Path  # outside every folder a plugin may read
    files: Path  # the file root: what a connector may write
    broker: EmbeddedKafka
    secure: SecureBroker

    @property
    def settings(self) -> Settings:
        return self.stack.settings


@pytest.fixture(scope="module")
def perimeter(
    session_broker: tuple[EmbeddedKafka, SecureBroker],
    tmp_path_factory: pytest.TempPathFactory,
    java_prying_jar: Path,
) -> Iterator[Perimeter]:
    broker, secure = session_broker
    folder = tmp_path_factory.mktemp("perimeter")
    java_plugins = folder / "java-plugins"
    java_plugins.mkdir()
    shutil.copy(java_prying_jar, java_plugins)
    pki = make_pki(folder / "pki")
    server = pki.issue("headrace")
    tokens = folder / "tokens"
    tokens.write_text(f"admin {ADMIN}\ninternal {INTERNAL} worker-*\ndata {DATA}\n")
    bootstrap, services = secure.scram()
    _, plugins = secure.restricted()
    base = local_settings(
        broker.bootstrap,
        f"perim{free_port()}",
        folder,
        (BUILTIN_PLUGINS, TEST_PLUGINS, java_plugins),
    )
    settings = replace(
        base,
        bootstrap_servers=bootstrap,
        kafka_security=services,
        tls_cert=str(server.cert),
        tls_key=str(server.key),
        tls_ca=str(pki.ca),
        auth_tokens=str(tokens),
        token=INTERNAL,
        plugin_token=DATA,
        plugin_kafka_security=plugins,
        plugin_sandbox="required",
        file_roots=(folder / "files",),
        # A connector may log its clients in as another user, as Connect's Principal policy
        # lets it; nothing else.
        client_override_policy="Principal",
    )
    # As an operator scopes the plugins' login: none of the cluster's own topics but the
    # offsets, which source tasks write with their records.
    internal = [settings.topic(role) for role in TOPICS if role != "offsets"]
    broker.deny(f"User:{secure.restricted_user}", [*internal, settings.topic(GUARDED)])
    stack = Stack(settings)
    try:
        stack.start("config")
        stack.start("coordinator", ready=COORDINATOR)
        stack.start("worker-1")
        yield Perimeter(stack, tokens, settings.file_roots[0], broker, secure)
    finally:
        stack.down()


def test_a_prying_plugin_reaches_nothing_it_was_not_given(perimeter: Perimeter) -> None:
    settings = perimeter.settings
    # The file root is not made here: a plugin process makes its file roots before it is
    # confined to them (once confined, it could not).
    report = perimeter.files / "report.json"
    config = {
        "connector.class": "prying_source.PryingSourceConnector",
        "target.file": str(perimeter.tokens),
        "report.path": str(perimeter.files),
        "join.as": "worker-1",
    }
    admin = replace(settings, token=ADMIN)
    with ConfigClient(settings.config_addr, admin) as client:
        client.create("pry", config)
        found = wait_for("the prying plugin's report", lambda: report.is_file(), timeout=120)
        assert found
        tried = json.loads(report.read_text())
        client.delete("pry")
    assert set(tried) == {
        "read_file",
        "read_worker_environ",
        "join_coordinator",
        "produce_requests",
        "read_configs",
        "read_offsets",
        "listen_tcp",
        "call_sibling_hosts",
    }
    assert tried["read_file"].startswith("refused: [Errno 13] Permission denied"), tried
    assert tried["read_worker_environ"].startswith("refused: [Errno 13]"), tried
    assert tried["join_coordinator"].startswith("refused: PERMISSION_DENIED"), tried
    assert "needs the role admin or internal, not data" in tried["join_coordinator"], tried
    assert tried["produce_requests"].startswith("refused: TopicAuthorizationFailedError"), tried
    # The client retries a topic it may not describe until it gives up: the control, read with
    # the same login and code, says the broker is there and the refusal is its ACL.
    assert tried["read_configs"].startswith("refused: "), tried
    assert tried["read_offsets"].startswith("ok: read "), tried
    # Found by the second perimeter review: Landlock handled no network right, and a sibling's
    # host answered anyone who found its socket. No TCP listener (Landlock ABI 4 and later), and
    # no sibling host answers it (its run folder is not its to list; were it, each sibling
    # would want its key).
    assert tried["listen_tcp"].startswith("refused: [Errno 13]"), tried
    assert tried["call_sibling_hosts"].startswith("refused"), tried
    assert "ok:" not in tried["call_sibling_hosts"], tried
    # Its process said it was confined, and what with.
    confined = log_events(perimeter.stack.log_dir, "plugin_sandboxed")
    assert confined and all(e["landlock_abi"] >= 1 for e in confined)


def test_a_prying_java_connector_can_neither_serve_nor_call_its_siblings(
    perimeter: Perimeter,
) -> None:
    """Found by the second perimeter review, for the JVM host as for Python plugins: a Java
    connector runs in its plugin process's JVM, confined as that process is. It can open no TCP
    listener, and no other plugin host or JVM of its worker answers it: their folders are not its
    to list, and each would want its own key. The Python prying plugin runs beside it, so that
    there are siblings to find."""
    settings = perimeter.settings
    python_report = perimeter.files / "python"
    java_report = perimeter.files / "java"
    for report in python_report, java_report:
        report.mkdir(parents=True, exist_ok=True)
    admin = replace(settings, token=ADMIN)
    with ConfigClient(settings.config_addr, admin) as client:
        client.create(
            "pry-python",
            {
                "connector.class": "prying_source.PryingSourceConnector",
                "target.file": str(perimeter.tokens),
                "report.path": str(python_report),
            },
        )
        client.create(
            "pry-java",
            {
                "connector.class": "headrace.testing.PryingSourceConnector",
                "report.path": str(java_report),
            },
        )
        wait_for("the Python plugin's report", (python_report / "report.json").is_file, 120)
        found = wait_for("the Java connector's report", (java_report / "report.json").is_file, 120)
        assert found
        tried = json.loads((java_report / "report.json").read_text())
        client.delete("pry-java")
        client.delete("pry-python")
    assert set(tried) == {"listen_tcp", "call_sibling_hosts"}
    assert tried["listen_tcp"].startswith("refused: java.net.BindException"), tried
    assert tried["call_sibling_hosts"].startswith("refused"), tried
    assert "ok:" not in tried["call_sibling_hosts"], tried


def test_a_connector_logs_its_clients_in_as_the_principal_its_override_names(
    perimeter: Perimeter,
) -> None:
    """The plugins' login may not write the guarded topic; a connector whose producer logs in as
    another user, which the Principal policy lets it name, writes it."""
    settings = perimeter.settings
    topic = settings.topic(GUARDED)
    secure = perimeter.secure
    login = (
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="{secure.scram_user}" password="{secure.scram_password}";'
    )
    datagen = {
        "connector.class": "DatagenSource",
        "topic": topic,
        "records": "10",
        "value.converter": "json",
        "value.converter.schemas.enable": "false",
    }
    admin = replace(settings, token=ADMIN)
    with ConfigClient(settings.config_addr, admin) as client:
        client.create("as-plugins", datagen)
        client.create(
            "as-owner",
            {
                **datagen,
                "producer.override.sasl.jaas.config": login,
                "producer.override.sasl.mechanism": "SCRAM-SHA-512",
            },
        )
        trace = wait_for("the plugins' own login refused", partial(failed, client, "as-plugins"))
        assert "TopicAuthorizationFailed" in trace, trace
        written = asyncio.run(consume(perimeter.broker.bootstrap, topic, 10))
        # What is shown of the config hides the password; nothing else was allowed to change.
        shown = client.get("as-owner").config["producer.override.sasl.jaas.config"]
        assert secure.scram_password not in shown
        client.delete("as-plugins")
        client.delete("as-owner")
    assert sorted(int(json.loads(r.value)["id"]) for r in written) == list(range(10))


def failed(client: ConfigClient, name: str) -> str | None:
    """The trace of the connector's one task once it is FAILED."""
    tasks = client.status(name).tasks
    return tasks[0].trace if len(tasks) == 1 and tasks[0].state == "FAILED" else None
