"""The offsets topic protocol: Connect's key format and the fold a task replays."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from headrace.core.model.offsets import (
    EMPTY,
    Marker,
    OffsetMap,
    OffsetStored,
    Pending,
    apply,
    canonical_partition,
    decode,
    decode_key,
    decode_pending,
    is_pending_key,
    offset_key,
    offset_value,
    pending_key,
    pending_value,
    settled,
)


def replay(connector: str, records: list[tuple[bytes | None, bytes | None]]) -> OffsetMap:
    """What one connector's store folds in from these records."""
    state = EMPTY
    for key, value in records:
        event = decode(key, value)
        if event is not None and event.connector == connector:
            state = apply(state, event)
    return state


def test_keys_are_connects_json_with_sorted_keys() -> None:
    assert offset_key("gen", {"task": 0, "generator": "gen"}) == (
        b'["gen",{"generator":"gen","task":0}]'
    )
    assert offset_key("gen", {"b": 1, "a": 2}) == offset_key("gen", {"a": 2, "b": 1})
    assert decode_key(offset_key("gen", {"a": 1})) == ("gen", {"a": 1})


def test_the_last_value_per_source_partition_wins() -> None:
    a, b = offset_key("c", {"p": "a"}), offset_key("c", {"p": "b"})
    state = replay(
        "c",
        [
            (a, offset_value({"next": 1})),
            (b, offset_value({"next": 5})),
            (a, offset_value({"next": 2})),
        ],
    )
    assert dict(state) == {'{"p":"a"}': {"next": 2}, '{"p":"b"}': {"next": 5}}


def test_a_tombstone_forgets_the_offset() -> None:
    a = offset_key("c", {"p": "a"})
    assert dict(replay("c", [(a, offset_value({"next": 1})), (a, None)])) == {}


def test_other_connectors_and_foreign_records_are_ignored() -> None:
    state = replay(
        "c",
        [
            (offset_key("other", {"p": "a"}), offset_value({"next": 1})),
            (b"not json", b"{}"),
            (b'["c"]', b"{}"),
            (None, b"{}"),
            (offset_key("c", {"p": "a"}), b"garbage"),
            (offset_key("c", {"p": "a"}), b"[1]"),
        ],
    )
    assert dict(state) == {}


def test_fold_does_not_mutate_its_input() -> None:
    before: OffsetMap = {}
    event = decode(offset_key("c", {"p": 1}), offset_value({"n": 1}))
    assert event is not None
    apply(before, event)
    assert before == {}


# -- Offsets pending their transaction's outcome ---------------------------------------------------

scalars = st.one_of(st.integers(), st.text(max_size=8), st.booleans(), st.none())
partitions = st.dictionaries(st.text(min_size=1, max_size=6), scalars, min_size=1, max_size=3)
offsets = st.one_of(st.none(), st.dictionaries(st.text(max_size=6), scalars, max_size=3))
pendings = st.builds(
    Pending,
    st.text(min_size=1, max_size=10),
    st.text(min_size=1, max_size=20),
    st.builds(Marker, st.text(min_size=1, max_size=10), st.integers(0, 99), st.integers(0, 2**40)),
    st.lists(st.tuples(partitions, offsets), max_size=4).map(tuple),
)


@given(pendings)
def test_a_pending_record_reads_back_as_written_and_is_no_connector_s_offset(
    pending: Pending,
) -> None:
    key = pending_key(pending.connector, pending.owner)
    assert decode_pending(key, pending_value(pending)) == (
        pending.connector,
        pending.owner,
        pending,
    )
    assert decode_pending(key, None) == (pending.connector, pending.owner, None)
    assert is_pending_key(key) and is_pending_key(key.decode())
    assert decode(key, pending_value(pending)) is None  # the offsets fold passes it over


def test_a_connector_named_like_the_pending_prefix_still_has_offsets() -> None:
    key = offset_key("headrace.pending", {"file": "a"})
    assert not is_pending_key(key)
    assert decode(key, b'{"position":1}') == OffsetStored(
        "headrace.pending", {"file": "a"}, {"position": 1}
    )


@pytest.mark.parametrize(
    "value",
    [b"{}", b'{"marker":["out",0],"offsets":[]}', b"not json", b'{"marker":1,"offsets":[]}'],
)
def test_a_malformed_pending_record_is_an_error_not_no_transaction(value: bytes) -> None:
    with pytest.raises(ValueError, match="pending offsets record"):
        decode_pending(pending_key("src", "t-src-0"), value)


A = {"file": "a"}
B = {"file": "b"}
PENDING = Pending("src", "t-src-0", Marker("out", 0, 7), ((A, {"position": 10}), (B, None)))


def test_a_committed_transaction_s_offsets_apply_where_nothing_newer_was_stored() -> None:
    # The pending record is at 5 in the log; A's latest offset was stored before it, B's after.
    stored_at = {canonical_partition(A): 3, canonical_partition(B): 6}
    assert settled(PENDING, 5, stored_at, committed=True) == [
        OffsetStored("src", A, {"position": 10})
    ]
    assert settled(PENDING, 5, {}, committed=True) == [
        OffsetStored("src", A, {"position": 10}),
        OffsetStored("src", B, None),
    ]


def test_an_aborted_transaction_s_offsets_never_apply() -> None:
    assert settled(PENDING, 5, {}, committed=False) == []
