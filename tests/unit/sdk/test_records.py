"""The SDK's batch of source records (``headrace.sdk.records.SourceBatch``)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from headrace.sdk.records import SourceBatch


def _batch(**more: object) -> SourceBatch:
    return SourceBatch({"file": "a"}, {"position": 3}, "t", **more)  # type: ignore[arg-type]


def test_one_timestamp_holds_for_every_record_of_the_batch() -> None:
    batch = _batch(values=["a", "b"], timestamp=9)
    assert [r.timestamp for r in batch.records()] == [9, 9]


def test_timestamps_give_each_record_its_own() -> None:
    batch = _batch(values=pa.array(["a", "b"]), timestamps=pa.array([1, 2]))
    assert [(r.value, r.timestamp) for r in batch.records()] == [("a", 1), ("b", 2)]
    assert {r.source_offset["position"] for r in batch.records()} == {3}


@pytest.mark.parametrize(
    ("more", "error"),
    [
        ({"timestamp": 1, "timestamps": [1, 2]}, "one timestamp or one per record"),
        ({"timestamps": [1]}, "1 timestamps for 2 values"),
        ({"keys": [b"k"]}, "1 keys for 2 values"),
    ],
)
def test_a_batch_whose_columns_disagree_is_refused(more: dict[str, object], error: str) -> None:
    with pytest.raises(ValueError, match=error):
        _batch(values=[b"a", b"b"], **more)
