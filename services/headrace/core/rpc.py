"""gRPC plumbing every service and client shares: message limits, addresses, retry hints.

One limit for every channel and server, so a batch a client may send is one every server may
take. The executor's clients split larger batches to fit (``headrace.clients.executor``).

A call whose client streams (the executor's ``WriteStream``, the coordinator's ``Join``) starts
with the server's go-ahead: the handler sends its initial metadata before it reads, and the client
waits for it (:func:`accepted`) before it writes. A server that refuses the call (a role too low,
a coordinator standing by) ends it before that, while the client has written nothing, so the
client always sees the server's status. A write racing the server's early end can otherwise come
back as INTERNAL from the client library, with the refusal lost.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

import grpc

MAX_MESSAGE_BYTES = 64 * 1024 * 1024
GRPC_OPTIONS: list[tuple[str, Any]] = [
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
]

CHILD_GRPC_OPTIONS: list[tuple[str, Any]] = [
    *GRPC_OPTIONS,
    ("grpc.initial_reconnect_backoff_ms", 50),
    ("grpc.max_reconnect_backoff_ms", 200),
]
"""For a channel to a process this one has just started, on a Unix socket: while it starts, the
channel tries again every 50 to 200 ms. With gRPC's backoff (one second, then 1.6 times longer
each time) a JVM host that served after 1.4 to 1.9 s was found serving after 2.6 to 2.8 s, and
a plugin process for a Java connector waits for two such starts. ``min_reconnect_backoff_ms``
is left at gRPC's 20 s: gRPC also takes it as the time a connection has to finish its
handshake, and at 50 ms a JVM host busy loading its plugins on a loaded machine was refused
as unavailable while it was answering."""

RETRY_AFTER_KEY = "retry-after-ms"
"""Trailing metadata on RESOURCE_EXHAUSTED: milliseconds to wait before trying again."""


def split_address(address: str, default_host: str = "127.0.0.1") -> tuple[str, int]:
    """(host, port) of ``host:port`` (``[::1]:port`` for IPv6, or the first of a comma-separated
    list such as Kafka's bootstrap servers); ValueError naming the address when it has none."""
    first = address.split(",")[0].strip()
    host, sep, port = first.rpartition(":")
    if not sep or not port.isdecimal():
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


MAX_SOCKET_PATH = 100  # a unix socket's sun_path holds 108 bytes on Linux, 104 on macOS
GO_AHEAD: tuple[tuple[str, str]] = (("headrace-go-ahead", "1"),)
"""The initial metadata a server sends to say a client-streaming call may start writing."""


async def accepted(call: Any) -> None:
    """Waits for the server's go-ahead on a call whose client streams; raises the call's
    ``grpc.aio.AioRpcError`` when the server ended it instead (a refusal, a standby)."""
    metadata = await call.initial_metadata()
    if any(key == GO_AHEAD[0][0] for key, _ in metadata or ()):
        return
    # No go-ahead: a response with trailers only, whose status may not have been read yet.
    code = await call.code()
    raise grpc.aio.AioRpcError(
        code,
        await call.initial_metadata(),
        await call.trailing_metadata(),
        await call.details(),
        await call.debug_error_string(),
    )


def close_channel(channel: grpc.Channel, within_s: float = 5.0) -> bool:
    """Closes a blocking channel, waiting at most ``within_s``: whether it closed in time.

    A blocking channel's ``close`` can hang on gRPC's own locks after a failed TLS handshake,
    and a process must not hang on its way out for a connection it has given up. The close goes
    on, on a daemon thread that cannot keep the process alive."""
    closing = threading.Thread(target=channel.close, name="grpc-channel-close", daemon=True)
    closing.start()
    closing.join(within_s)
    return not closing.is_alive()
