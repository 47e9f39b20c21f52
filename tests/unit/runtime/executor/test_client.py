"""The client's pure parts: a batch as the chunks of its stream, retry hints."""

from __future__ import annotations

from headrace.clients.executor import chunks
from headrace.core.rpc import retry_after_s
from headrace.v1 import executor_pb2


def test_a_batch_streams_as_its_header_then_pieces_that_make_it_up_again() -> None:
    header = executor_pb2.WriteBatchRequest(topic="t", stream_bytes=10)
    data = bytes(range(10))
    sent = list(chunks(header, data, 4))
    assert [c.WhichOneof("part") for c in sent] == ["header", *["arrow_ipc"] * 3]
    assert sent[0].header == header
    assert [len(c.arrow_ipc) for c in sent[1:]] == [4, 4, 2]
    assert b"".join(c.arrow_ipc for c in sent[1:]) == data


def test_an_empty_stream_is_its_header_alone() -> None:
    header = executor_pb2.WriteBatchRequest(topic="t")
    assert [c.WhichOneof("part") for c in chunks(header, b"", 4)] == ["header"]


def test_the_retry_hint_is_read_from_trailing_metadata() -> None:
    assert retry_after_s((("other", "x"), ("retry-after-ms", "250"))) == 0.25
    assert retry_after_s((("retry-after-ms", "soon"),)) is None
    assert retry_after_s(()) is None
    assert retry_after_s(None) is None
