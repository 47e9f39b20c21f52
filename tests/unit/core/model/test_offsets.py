"""The offsets topic protocol: Connect's key format and the fold a task replays."""

from __future__ import annotations

from headrace.core.model.offsets import (
    EMPTY,
    OffsetMap,
    apply,
    decode,
    decode_key,
    offset_key,
    offset_value,
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
