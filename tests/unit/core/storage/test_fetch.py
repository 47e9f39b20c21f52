"""A sink's fetches taken as columns, or as whole batches where they can be, hold what aiokafka's
own path hands over, record for record, over the same batches: compressed ones, transactional
ones with their commit and abort markers, read committed or not, from an offset inside a batch,
taken in pieces of any size."""

from __future__ import annotations

import gc
import inspect
import itertools
import struct
import weakref
from dataclasses import dataclass

import pytest
from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener
from aiokafka.consumer import fetcher
from aiokafka.consumer.fetcher import READ_COMMITTED, PartitionRecords
from aiokafka.record.default_records import DefaultRecordBatchBuilder
from aiokafka.record.memory_records import MemoryRecords
from aiokafka.record.util import calc_crc32c
from aiokafka.structs import TopicPartition
from hypothesis import given
from hypothesis import strategies as st

from headrace.core.storage.fetch import (
    Batches,
    Fetched,
    KeptRecords,
    subscribe_pattern,
    take,
    unpack,
)

TP = TopicPartition("lines", 3)
GZIP, NONE = 1, 0
CONTROL = 0x20  # a batch attribute: a transaction's commit or abort marker
COMMIT, ABORT = 1, 0


@dataclass(frozen=True)
class Batch:
    """One batch to write: its records, or a transaction's marker (``marker``)."""

    records: int
    compressed: bool = False
    producer: int = -1  # >= 0: transactional, of that producer
    marker: int | None = None
    headers: bool = False


def build(layout: list[Batch]) -> tuple[bytes, list[tuple[int, int]]]:
    """The batches as a fetch response holds them, and its aborted transactions (producer,
    first offset)."""
    chunks, aborted, begun = [], [], {}
    offset = 0
    for batch in layout:
        builder = DefaultRecordBatchBuilder(
            magic=2,
            compression_type=GZIP if batch.compressed else NONE,
            is_transactional=int(batch.producer >= 0),
            producer_id=batch.producer,
            producer_epoch=0 if batch.producer >= 0 else -1,
            base_sequence=-1,
            batch_size=1 << 24,
        )
        if batch.marker is not None:
            marker = struct.pack(">hh", 0, batch.marker)
            builder.append(0, timestamp=1, key=marker, value=b"", headers=[])
        else:
            for i in range(batch.records):
                n = offset + i
                builder.append(
                    i,
                    timestamp=1_700_000_000_000 + n,
                    key=None if n % 3 == 0 else b"k%d" % n,
                    value=None if n % 7 == 6 else b"line %d" % n,
                    headers=[("h", b"%d" % n)] if batch.headers and n % 2 else [],
                )
        built = bytearray(builder.build())
        struct.pack_into(">q", built, 0, offset)
        if batch.marker is not None:
            struct.pack_into(">h", built, 21, struct.unpack_from(">h", built, 21)[0] | CONTROL)
            struct.pack_into(">I", built, 17, calc_crc32c(bytes(built[21:])))
        if batch.producer >= 0 and batch.producer not in begun:
            begun[batch.producer] = offset
        if batch.marker is not None:
            first = begun.pop(batch.producer, offset)
            if batch.marker == ABORT:
                aborted.append((batch.producer, first))
        chunks.append(bytes(built))
        offset += max(batch.records, 1) if batch.marker is None else 1
    return b"".join(chunks), aborted


def partition(
    data: bytes, aborted: list[tuple[int, int]], start: int, committed: bool, kept: bool = False
) -> PartitionRecords:
    isolation = READ_COMMITTED if committed else 0
    records = (KeptRecords if kept else MemoryRecords)(data)
    return PartitionRecords(TP, records, aborted, start, None, None, True, isolation)


batches = st.one_of(
    st.builds(Batch, st.integers(1, 40), st.booleans(), st.just(-1), st.none(), st.booleans()),
    st.builds(Batch, st.integers(1, 20), st.booleans(), st.sampled_from([7, 8])),
)


@st.composite
def layouts(draw: st.DrawFn) -> list[Batch]:
    """Batches, each transaction of producers 7 and 8 ended by a commit or an abort marker."""
    layout: list[Batch] = []
    for batch in draw(st.lists(batches, min_size=1, max_size=12)):
        layout.append(batch)
        if batch.producer >= 0 and draw(st.booleans()):
            layout.append(Batch(0, producer=batch.producer, marker=draw(st.sampled_from([0, 1]))))
    return layout


def test_a_record_is_made_only_when_asked_for_and_slices_make_lists() -> None:
    raw, _ = build([Batch(5, headers=True)])
    piece = Fetched(TP.topic, TP.partition)
    assert not unpack(partition(raw, [], 0, False), 10, piece)
    assert piece.offsets == [0, 1, 2, 3, 4] and piece.values[1] == b"line 1"
    assert piece[-1].offset == 4 and piece[1].headers == (("h", b"1"),)
    assert [r.offset for r in piece[1:3]] == [1, 2]
    assert piece[0].key is None and piece[0].serialized_key_size == -1
    assert piece[1].serialized_value_size == 6


@pytest.mark.parametrize("whole_batches", [False, True], ids=["columns", "whole batches"])
@given(layouts(), st.lists(st.integers(1, 60), min_size=1, max_size=30), st.booleans(), st.data())
def test_what_is_taken_holds_what_aiokafka_hands_over(
    whole_batches: bool,
    layout: list[Batch],
    limits: list[int],
    committed: bool,
    data: st.DataObject,
) -> None:
    raw, aborted = build(layout)
    start = data.draw(st.integers(0, max(0, sum(max(b.records, 1) for b in layout) - 1)))
    theirs = partition(raw, aborted, start, committed)
    expected = list(theirs)

    ours = partition(raw, aborted, start, committed, kept=whole_batches)
    taken: list[Fetched | Batches] = []
    left = True
    for limit in itertools.islice(itertools.cycle(limits), 2_000):
        if not left:
            break
        piece, left = take(ours, limit, whole_batches)
        assert len(piece) <= limit
        if isinstance(piece, Batches):
            assert piece.following == ours.next_fetch_offset
            assert len(list(piece)) == len(piece)
        taken.append(piece)
    assert not left, "every record was taken"
    assert [r for piece in taken for r in piece] == expected
    assert ours.next_fetch_offset == theirs.next_fetch_offset


def test_batches_that_fit_are_handed_over_as_the_bytes_that_came() -> None:
    raw, _ = build([Batch(5), Batch(3, compressed=True), Batch(4, headers=True)])
    piece, left = take(partition(raw, [], 0, False, kept=True), 12, whole_batches=True)
    assert isinstance(piece, Batches) and not left
    assert (piece.data, len(piece), piece.following) == (raw, 12, 12)
    assert piece[5].value == b"line 5" and piece[9].headers == (("h", b"9"),)


def test_a_batch_begun_before_the_offset_fetched_from_comes_as_columns() -> None:
    raw, _ = build([Batch(5), Batch(3)])
    first, left = take(partition(raw, [], 2, False, kept=True), 10, whole_batches=True)
    assert isinstance(first, Fetched) and first.offsets == [2, 3, 4, 5, 6, 7] and not left


@pytest.mark.parametrize("whole_batches", [False, True], ids=["columns", "whole batches"])
def test_a_fetch_taken_is_freed_without_the_cyclic_collector(whole_batches: bool) -> None:
    """A replay runs with the collector off: what it took must not stay in memory."""
    raw, _ = build([Batch(5), Batch(3)])
    records = partition(raw, [], 0, False, kept=True)
    gone = weakref.ref(records._records)
    gc.disable()
    try:
        _, left = take(records, 100, whole_batches)
        assert not left
        del records
        assert gone() is None
    finally:
        gc.enable()


def test_the_fetcher_still_makes_its_record_sets_by_the_name_replaced() -> None:
    assert fetcher.MemoryRecords is KeptRecords
    assert "MemoryRecords(" in inspect.getsource(fetcher.Fetcher._proc_fetch_request)


class _Listener(ConsumerRebalanceListener):
    def on_partitions_assigned(self, assigned: object) -> None: ...

    def on_partitions_revoked(self, revoked: object) -> None: ...


async def test_a_pattern_subscription_takes_the_matcher_as_given() -> None:
    """The two aiokafka internals a pattern subscription calls are still there and still take
    a matcher that is not a compiled ``re`` (aiokafka is pinned; this says when it moved)."""

    class EveryTopicBut:
        def match(self, topic: str) -> bool:
            return topic != "__consumer_offsets"

    consumer = AIOKafkaConsumer(bootstrap_servers="127.0.0.1:1", group_id="g")
    try:
        matcher = EveryTopicBut()
        subscribe_pattern(consumer, matcher, _Listener())
        assert consumer._subscription.subscribed_pattern is matcher
        assert consumer.subscription() == set()  # no topic yet: metadata assigns them
    finally:
        await consumer.stop()
