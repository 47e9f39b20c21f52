"""The embedded broker's set-up that needs no broker."""

from __future__ import annotations

import socket
from pathlib import Path

from headrace.cli.kafka import LISTEN_PORTS, free_port, new_cluster_id


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
