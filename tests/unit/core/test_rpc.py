"""Closing a blocking channel without hanging on it."""

from __future__ import annotations

import threading
from typing import Any, cast

import grpc

from headrace.core.rpc import close_channel


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
