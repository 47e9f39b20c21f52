"""Batch folder names, the high watermark they encode, and what is left to write."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from headrace.executor.writers.layout import (
    OffsetRange,
    batch_dir_name,
    high_watermark,
    parse_batch_dir,
    range_to_write,
    stale_temp_dirs,
    temp_dir_name,
    writer_key,
)

offsets = st.integers(min_value=0, max_value=10**19 - 1)
W = writer_key("sink", "AAAAAAAAAAAAAAAAAAAAAQ")


def test_a_batch_folder_is_named_for_its_offsets_zero_padded_and_its_writer() -> None:
    assert batch_dir_name(OffsetRange(5, 42), W) == (
        f"00000000000000000005-00000000000000000042-{W}"
    )


@given(offsets, offsets)
def test_folder_names_round_trip_and_sort_by_offset(a: int, b: int) -> None:
    low, high = sorted((a, b))
    name = batch_dir_name(OffsetRange(low, high), W)
    assert parse_batch_dir(name) == (OffsetRange(low, high), W)
    assert sorted([batch_dir_name(OffsetRange(high, high), W), name])[0] == name


def test_a_writer_is_one_connector_reading_one_topic_by_its_id() -> None:
    keys = {
        writer_key("sink", "AAAAAAAAAAAAAAAAAAAAAQ"),
        writer_key("other", "AAAAAAAAAAAAAAAAAAAAAQ"),  # another connector, same folder
        writer_key("sink", "AAAAAAAAAAAAAAAAAAAAAg"),  # the topic deleted and created again
        writer_key("sin", "kAAAAAAAAAAAAAAAAAAAAAQ"),  # no ambiguity where the two meet
    }
    assert len(keys) == 4
    assert all(len(k) == 16 and int(k, 16) >= 0 for k in keys)


def test_names_that_are_not_committed_batches_are_ignored() -> None:
    for name in [
        temp_dir_name(),
        "_tmp-00000000000000000000-00000000000000000009",
        ".00000000000000000000-00000000000000000009",
        "0-9",
        "00000000000000000000-00000000000000000009",  # no writer
        f"00000000000000000009-00000000000000000000-{W}",  # first after last
        f"00000000000000000000-00000000000000000009-{W}.parquet",
        "_SUCCESS",
    ]:
        assert parse_batch_dir(name) is None, name


def test_the_watermark_is_the_highest_last_offset_the_writer_committed() -> None:
    other = writer_key("other", "AAAAAAAAAAAAAAAAAAAAAQ")
    names = [
        batch_dir_name(OffsetRange(0, 9), W),
        batch_dir_name(OffsetRange(20, 29), W),
        batch_dir_name(OffsetRange(10, 19), W),
        batch_dir_name(OffsetRange(0, 99), other),  # another writer's rows hide none of W's
        "_tmp-abc",  # an unfinished write commits nothing, whatever it holds
    ]
    assert high_watermark(names, W) == 29
    assert high_watermark(names, other) == 99


def test_an_empty_partition_has_no_watermark() -> None:
    assert high_watermark([], W) is None
    assert high_watermark([temp_dir_name(), "_SUCCESS"], W) is None


def test_a_fresh_partition_takes_the_whole_range() -> None:
    assert range_to_write(OffsetRange(0, 9), None) == OffsetRange(0, 9)


def test_an_overlapping_batch_takes_only_what_lies_above_the_watermark() -> None:
    assert range_to_write(OffsetRange(5, 14), 9) == OffsetRange(10, 14)


def test_a_batch_at_or_below_the_watermark_takes_nothing() -> None:
    assert range_to_write(OffsetRange(0, 9), 9) is None
    assert range_to_write(OffsetRange(0, 9), 50) is None


def test_a_batch_after_a_gap_keeps_its_own_first_offset() -> None:
    # Compaction or a transform can leave gaps; the range never reaches back below `first`.
    assert range_to_write(OffsetRange(20, 29), 9) == OffsetRange(20, 29)


def test_only_old_temp_dirs_are_stale() -> None:
    entries = [
        ("_tmp-old", 0.0),
        ("_tmp-young", 990.0),
        (batch_dir_name(OffsetRange(0, 1), W), 0.0),
    ]
    assert stale_temp_dirs(entries, now=1000.0, max_age_s=60.0) == ["_tmp-old"]


def test_temp_dirs_are_hidden_from_readers_and_unique() -> None:
    a, b = temp_dir_name(), temp_dir_name()
    assert a != b
    assert a.startswith("_") and b.startswith("_")
