"""Where the source loop sends each record: Kafka's partitioning rules, applied per poll."""

from __future__ import annotations

from collections.abc import Mapping

from hypothesis import given
from hypothesis import strategies as st

from headrace.runtime.produce import Outgoing, TopicLayout, plan
from headrace.runtime.source import latest_offsets
from headrace.sdk.records import SourceRecord

LAYOUTS = {
    "three": TopicLayout((0, 1, 2), (0, 1, 2)),
    "one-down": TopicLayout((0, 1, 2, 3), (0, 2, 3)),
}


def record(topic: str, partition: int | None, key: bytes | None) -> Outgoing:
    return (topic, partition, key, b"v", (), None)


records = st.lists(
    st.builds(
        record,
        st.sampled_from(sorted(LAYOUTS)),
        st.none() | st.integers(0, 2),
        st.none() | st.binary(max_size=12),
    ),
    max_size=60,
)


@given(records)
def test_every_record_is_sent_once_and_in_poll_order(batch: list[Outgoing]) -> None:
    groups = plan(batch, LAYOUTS)
    sent = [i for indices in groups.values() for i in indices]
    assert sorted(sent) == list(range(len(batch)))
    for indices in groups.values():
        assert indices == sorted(indices)


@given(records)
def test_records_go_where_kafkas_producer_sends_them(batch: list[Outgoing]) -> None:
    where = {i: tp for tp, indices in plan(batch, LAYOUTS).items() for i in indices}
    unkeyed: dict[str, set[int]] = {}
    for i, (topic, named, key, *_) in enumerate(batch):
        assert where[i][0] == topic
        partition = where[i][1]
        if named is not None:
            assert partition == named
        elif key is not None:
            assert partition == java_partition(key, len(LAYOUTS[topic].partitions))
        else:
            assert partition in LAYOUTS[topic].available  # never one without a leader
            unkeyed.setdefault(topic, set()).add(partition)
    # Sticky: one poll's unkeyed records of a topic share one partition.
    assert all(len(partitions) == 1 for partitions in unkeyed.values())


def java_partition(key: bytes, count: int) -> int:
    """``Utils.toPositive(Utils.murmur2(key)) % count``, as Kafka's Java producer places a key."""
    return (java_murmur2(key) & 0x7FFFFFFF) % count


def java_murmur2(key: bytes) -> int:
    """Kafka's ``Utils.murmur2``, written out here from its definition (signed 32 bits)."""
    m, r = 0x5BD1E995, 24
    h = (0x9747B28C ^ len(key)) & 0xFFFFFFFF
    for i in range(len(key) // 4):
        k = int.from_bytes(key[4 * i : 4 * i + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> r
        k = (k * m) & 0xFFFFFFFF
        h = ((h * m) & 0xFFFFFFFF) ^ k
    tail = key[len(key) // 4 * 4 :]
    if tail:
        h ^= int.from_bytes(tail, "little")
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def test_the_reference_hash_matches_kafkas_own_vectors() -> None:
    # Kafka's UtilsTest.testMurmur2: the partitioning property above leans on this hash.
    assert {
        k: java_murmur2(k) for k in (b"21", b"foobar", b"a-little-bit-long-string", b"abc")
    } == {
        b"21": -973932308,
        b"foobar": -790332482,
        b"a-little-bit-long-string": -985981536,
        b"abc": 479470107,
    }


def source(partition: Mapping[str, object], position: int) -> SourceRecord:
    return SourceRecord(partition, {"position": position}, "t", "v")


def test_the_last_offset_of_each_source_partition_is_stored() -> None:
    a, b = {"file": "a"}, {"file": "b"}
    polled = [source(a, 1), source(b, 7), source(dict(a), 2), source({"file": "b"}, 9)]
    assert latest_offsets(polled) == [(a, {"position": 2}), (b, {"position": 9})]
    assert latest_offsets([]) == []
