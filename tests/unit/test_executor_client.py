"""The client's pure parts: splitting oversized batches on offset boundaries, retry hints."""

from __future__ import annotations

import itertools

import pyarrow as pa
import pytest

from headrace.core.arrowipc import ipc_stream
from headrace.core.rpc import retry_after_s
from headrace.runtime.executor import encode_batches


def table(offsets: list[int]) -> pa.Table:
    payload = ["x" * 100] * len(offsets)
    return pa.table({"kafka_offset": pa.array(offsets, pa.int64()), "payload": payload})


def decode(data: bytes) -> pa.Table:
    return pa.ipc.open_stream(data).read_all()


def test_a_batch_that_fits_is_sent_whole_with_its_offset_range() -> None:
    rows = table([7, 3, 5])
    [(first, last, data)] = encode_batches(rows, 1 << 20)
    assert (first, last) == (3, 7)
    assert decode(data).equals(rows)


def test_an_oversized_batch_is_split_into_parts_that_fit() -> None:
    rows = table(list(range(200, 0, -1)))
    limit = len(ipc_stream(rows)) // 3
    parts = encode_batches(rows, limit)

    assert len(parts) > 2
    assert all(len(data) <= limit for _, _, data in parts)
    offsets = [decode(data).column("kafka_offset").to_pylist() for _, _, data in parts]
    assert list(itertools.chain(*offsets)) == list(range(1, 201))  # every row once, in order
    for (first, last, _), part in zip(parts, offsets, strict=True):
        assert (first, last) == (part[0], part[-1])
    assert all(a[1] < b[0] for a, b in itertools.pairwise(parts))  # ranges do not overlap


def test_rows_of_one_offset_are_never_split_apart() -> None:
    # Were they split, the second part would sit at the watermark the first left, and be skipped.
    rows = table([1] * 30 + [2] * 30 + [3] * 30)
    parts = encode_batches(rows, len(ipc_stream(rows)) // 2)
    for _, _, data in parts:
        offsets = decode(data).column("kafka_offset").to_pylist()
        assert all(offsets.count(o) == 30 for o in set(offsets))


def test_one_offset_too_big_for_a_request_is_an_error() -> None:
    rows = table([4] * 50)
    with pytest.raises(ValueError, match="the rows of offset 4 take"):
        encode_batches(rows, 100)


def test_the_retry_hint_is_read_from_trailing_metadata() -> None:
    assert retry_after_s((("other", "x"), ("retry-after-ms", "250"))) == 0.25
    assert retry_after_s((("retry-after-ms", "soon"),)) is None
    assert retry_after_s(()) is None
    assert retry_after_s(None) is None
