"""Where the source loop sends each record: Kafka's partitioning rules, applied per poll."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

import pytest
from aiokafka.errors import KafkaTimeoutError
from aiokafka.producer.message_accumulator import BatchBuilder
from hypothesis import given
from hypothesis import strategies as st

from headrace.runtime.source.loop import latest_offsets
from headrace.runtime.source.produce import Outgoing, TopicLayout, acknowledged, fill, plan
from headrace.sdk.records import SourceRecord
from tests.support import batch_records

LAYOUTS = {
    "three": TopicLayout((0, 1, 2), (0, 1, 2)),
    "one-down": TopicLayout((0, 1, 2, 3), (0, 2, 3)),
}


def record(topic: str, partition: int | None, key: bytes | None) -> Outgoing:
    return (topic, partition, key, b"v", [], None)


def one_batch(topic: str, partition: int | None, keys: list[bytes | None]) -> list[Outgoing]:
    """The poll of one source batch: one topic, and one partition or none named."""
    return [record(topic, partition, key) for key in keys]


topics = st.sampled_from(sorted(LAYOUTS))
partitions = st.none() | st.integers(0, 2)
keys = st.none() | st.binary(max_size=12)
records = st.lists(st.builds(record, topics, partitions, keys), max_size=60) | st.builds(
    one_batch, topics, partitions, st.lists(st.none(), max_size=60) | st.lists(keys, max_size=60)
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


def test_a_batch_holds_the_records_it_is_given_as_kafka_reads_them() -> None:
    headers = [("trace", b"t1"), ("empty", None)]
    polled: list[Outgoing] = [
        ("t", None, b"k0", b"first", [], None),
        ("t", None, None, b"skipped by the plan", [], None),
        ("t", None, b"k2", None, headers, 1_700_000_000_002),
        ("t", None, None, b"", headers, None),
    ]
    stamps = [1_700_000_000_000 + i for i in range(len(polled))]
    batch = BatchBuilder(64 * 1024, 0, is_transactional=1)
    assert fill(batch, polled, [0, 2, 3], stamps, 0) == 3
    assert batch.record_count() == 3
    assert batch.append(timestamp=None, key=None, value=b"late", headers=[]) is None  # closed
    assert batch_records(batch) == [
        (0, 1_700_000_000_000, b"k0", b"first", []),
        (1, 1_700_000_000_002, b"k2", None, headers),
        (2, 1_700_000_000_003, None, b"", headers),
    ]


def test_records_beyond_a_full_batch_wait_for_the_next_and_a_huge_one_has_its_own() -> None:
    polled: list[Outgoing] = [("t", None, None, bytes([i]) * 100, [], None) for i in range(7)]
    polled.insert(3, ("t", None, None, b"h" * 5_000, [], None))  # alone above a batch's size
    indices, stamps = list(range(len(polled))), [0] * len(polled)
    batches, start = [], 0
    while start < len(indices):
        batch = BatchBuilder(400, 0, is_transactional=1)
        end = fill(batch, polled, indices, stamps, start)
        assert end > start
        batches.append([value for *_, value, _ in batch_records(batch)])
        start = end
    assert [value for values in batches for value in values] == [r[3] for r in polled]
    assert [len(values) for values in batches] == [3, 1, 3, 1]


def source(partition: Mapping[str, object], position: int) -> SourceRecord:
    return SourceRecord(partition, {"position": position}, "t", "v")


def test_the_last_offset_of_each_source_partition_is_stored() -> None:
    a, b = {"file": "a"}, {"file": "b"}
    polled = [source(a, 1), source(b, 7), source(dict(a), 2), source({"file": "b"}, 9)]
    assert latest_offsets(polled) == [(a, {"position": 2}), (b, {"position": 9})]
    assert latest_offsets([]) == []


def settled(value: object) -> asyncio.Future[object]:
    future: asyncio.Future[object] = asyncio.get_running_loop().create_future()
    if isinstance(value, BaseException):
        future.set_exception(value)
    else:
        future.set_result(value)
    return future


async def test_acknowledgements_are_the_batches_results_in_order() -> None:
    assert await acknowledged([settled("a"), settled("b")], 1.0) == ["a", "b"]
    assert await acknowledged([], 1.0) == []


async def test_a_failed_batch_fails_them_once_every_other_is_done() -> None:
    later: asyncio.Future[object] = asyncio.get_running_loop().create_future()
    waiting = asyncio.ensure_future(acknowledged([settled(ValueError("too large")), later], 5.0))
    done, _ = await asyncio.wait({waiting}, timeout=0.05)
    assert not done  # the other batch is still read
    later.set_result("b")
    with pytest.raises(ValueError, match="too large"):
        await waiting


async def test_batches_kafka_holds_fail_once_none_is_acknowledged_for_the_stall_bound() -> None:
    loop = asyncio.get_running_loop()
    held: list[asyncio.Future[object]] = [loop.create_future(), loop.create_future()]
    with pytest.raises(KafkaTimeoutError, match=r"none of 2 batches \(of 3\) within 0.05 s"):
        await acknowledged([settled("a"), *held], 0.05)
    held[0].set_exception(ValueError("refused, later"))  # still read: no error is left unread
    held[1].set_result("b")


async def test_batches_acknowledged_one_by_one_are_no_stall_however_long_they_take() -> None:
    loop = asyncio.get_running_loop()
    futures: list[asyncio.Future[object]] = [loop.create_future() for _ in range(4)]
    for i, future in enumerate(futures):
        loop.call_later(0.03 * (i + 1), future.set_result, i)  # 0.12 s in all; 0.03 s apart
    assert await acknowledged(futures, 0.08) == [0, 1, 2, 3]
