"""Closing a blocking channel without hanging on it."""

from __future__ import annotations

import socket
import threading
from pathlib import Path
from typing import Any, cast

import grpc
import pytest

from headrace.core.rpc import CHILD_GRPC_OPTIONS, close_channel


def test_a_channel_is_closed() -> None:
    channel = grpc.insecure_channel("127.0.0.1:9")
    assert close_channel(channel)
    stub = channel.unary_unary("/a.B/C")
    try:
        stub(b"", timeout=1)
    except ValueError as closed:  # gRPC refuses a call on a closed channel
        assert "closed" in str(closed).lower()
    else:
        raise AssertionError("a call went through a closed channel")


def test_a_close_that_hangs_is_given_up_after_the_bound() -> None:
    release = threading.Event()

    class Stuck:
        def close(self) -> None:
            release.wait(60)

    try:
        assert not close_channel(cast(Any, Stuck()), within_s=0.1)
    finally:
        release.set()


def test_a_child_channel_waits_out_a_slow_handshake(tmp_path: Path) -> None:
    """A process that has just started may take its time to answer a connection (a JVM
    loading its plugins on a busy machine): a call waits for it until its own deadline, and is
    not refused as unavailable after a fraction of a second."""
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(tmp_path / "s.sock"))
    listener.listen(8)  # accepts connections and never answers them
    channel = grpc.insecure_channel(f"unix:{tmp_path / 's.sock'}", options=CHILD_GRPC_OPTIONS)
    try:
        call = channel.unary_unary("/headrace.Test/Call")
        with pytest.raises(grpc.RpcError) as refused:
            call(b"", timeout=1.0)
        assert refused.value.code() is grpc.StatusCode.DEADLINE_EXCEEDED
    finally:
        channel.close()
        listener.close()
