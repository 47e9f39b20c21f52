"""gRPC plumbing every service and client shares: message limits, addresses, retry hints.

One limit for every channel and server, so a batch a client may send is one every server may
take. The executor's clients split larger batches to fit (``headrace.runtime.executor.client``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

MAX_MESSAGE_BYTES = 64 * 1024 * 1024
GRPC_OPTIONS: list[tuple[str, Any]] = [
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
]

RETRY_AFTER_KEY = "retry-after-ms"
"""Trailing metadata on RESOURCE_EXHAUSTED: milliseconds to wait before trying again."""


def split_address(address: str, default_host: str = "127.0.0.1") -> tuple[str, int]:
    """(host, port) of ``host:port`` (``[::1]:port`` for IPv6, or the first of a comma-separated
    list such as Kafka's bootstrap servers); ValueError naming the address when it has none."""
    first = address.split(",")[0].strip()
    host, sep, port = first.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"{address!r} is not host:port")
    return host.strip("[]") or default_host, int(port)


def retry_after_s(metadata: Iterable[tuple[str, Any]] | None) -> float | None:
    """The retry hint in seconds from trailing metadata; None if there is none."""
    for key, value in metadata or ():
        if key == RETRY_AFTER_KEY:
            try:
                return max(0.0, int(value) / 1000)
            except ValueError:
                return None
    return None
