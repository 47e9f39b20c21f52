"""The embedded broker's set-up that needs no broker."""

from __future__ import annotations

import socket
from pathlib import Path

from headrace.local.kafka import (
    LISTEN_PORTS,
    EmbeddedKafka,
    SecureListeners,
    free_port,
    new_cluster_id,
)


def test_cluster_ids_never_look_like_an_option() -> None:
    # One random id in 64 used to start with "-", and the storage tool refused to format.
    ids = {new_cluster_id() for _ in range(2000)}
    assert len(ids) == 2000
    assert not any(i.startswith("-") for i in ids)
    assert all(len(i) == 22 for i in ids)


def test_free_ports_lie_below_the_range_outgoing_connections_take() -> None:
    # A port from the ephemeral range can be taken by any client's connection before the
    # service it was meant for binds it: a service then fails to start now and then.
    low, _high = (
        int(p) for p in Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
    )
    ports = {free_port() for _ in range(50)}
    assert all(p in LISTEN_PORTS and p < low for p in ports)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", ports.pop()))  # free means bindable now


def _properties(broker: EmbeddedKafka) -> dict[str, str]:
    lines = broker._write_properties().read_text().splitlines()
    return dict(line.split("=", 1) for line in lines)


def test_the_broker_of_make_run_listens_in_plaintext_only(tmp_path: Path) -> None:
    props = _properties(EmbeddedKafka(tmp_path, port=9092, controller_port=9093))
    assert props["listeners"] == "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093"
    assert props["advertised.listeners"] == "PLAINTEXT://127.0.0.1:9092"
    assert props["listener.security.protocol.map"] == "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
    assert not [k for k in props if "ssl" in k or "sasl" in k]


def test_secure_listeners_sit_beside_the_plaintext_one(tmp_path: Path) -> None:
    secure = SecureListeners(
        sasl_ssl_port=9094,
        mtls_port=9095,
        keystore=tmp_path / "ks.pem",
        truststore=tmp_path / "ca.pem",
        scram_users=(("u", "p"),),
    )
    broker = EmbeddedKafka(tmp_path, port=9092, controller_port=9093, secure=secure)
    props = _properties(broker)
    assert props["advertised.listeners"] == (
        "PLAINTEXT://127.0.0.1:9092,SASL_SSL://127.0.0.1:9094,MTLS://127.0.0.1:9095"
    )
    assert props["inter.broker.listener.name"] == "PLAINTEXT"
    assert "MTLS:SSL" in props["listener.security.protocol.map"].split(",")
    assert props["listener.name.mtls.ssl.client.auth"] == "required"
    assert secure.format_args() == ["--add-scram", "SCRAM-SHA-512=[name=u,password=p]"]
    assert "'p'" not in repr(secure)
