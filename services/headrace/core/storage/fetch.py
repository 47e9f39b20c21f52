"""A consumer's fetches as columns: aiokafka's ``getmany`` without a Python object for each
record. A sink reads its topics this way, and the topic logs replay theirs.

aiokafka hands each record over as a ``ConsumerRecord``, built in Python through a generator,
a method call and a dataclass of eleven fields. Profiled under the sink-alone benchmark, that was
most of a sink's plugin process (56% of its samples; headrace's own work 13%), and a sink then
reads every record's key, value, offset and timestamp back out of those objects to make its
columns. :func:`getmany` takes the same fetched batches from the consumer's fetcher and unpacks
them in one pass into one list per field (:class:`Fetched`); a record becomes a
``ConsumerRecord`` only when something asks for one (a conversion record by record, the dead
letter queue).

It does what ``AIOKafkaConsumer.getmany``, ``Fetcher.fetched_records``, ``FetchResult.getall``
and ``PartitionRecords._unpack_records`` do, over their state, in aiokafka 0.14 (pinned): the
fetch waiters and position updates, CRC checks, control batches skipped, and, reading committed,
the batches of aborted transactions skipped. A unit test holds it to aiokafka's own path over
the same batches, transactional ones included.

A task converted where it runs (a Java connector's, in the JVM) needs no columns: it is given
whole record batches, the bytes the broker sent (:class:`Batches`), and Kafka's own record
reader unpacks them in the JVM, as Connect's consumer does. Nothing here then steps through the
records: a batch's header says how many it holds. So that those bytes can be had, the fetcher
builds its record sets as :class:`KeptRecords`, which keep them.
"""

from __future__ import annotations

import asyncio
import itertools
import struct
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Protocol, TypeAlias, overload

from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, ConsumerRecord
from aiokafka import errors as kafka_errors
from aiokafka.consumer import fetcher as _fetcher
from aiokafka.consumer.fetcher import READ_COMMITTED, FetchResult, PartitionRecords
from aiokafka.record.memory_records import MemoryRecords
from aiokafka.structs import TopicPartition as KafkaTopicPartition

Message: TypeAlias = ConsumerRecord[bytes, bytes]
"""A record as consumed from Kafka: its original bytes, headers and position."""

_BATCH = "_headrace_batch"  # the batch a take stopped inside, on its PartitionRecords
_AT = "_headrace_at"  # where the next batch begins in its KeptRecords' bytes; -1: unknown
_LOG_OVERHEAD = struct.Struct(">qi")
"""What every record batch (and older message set entry) begins with: its base offset and its
length after these 12 bytes."""
_MAGIC_AT, _V2_RECORD_COUNT = 16, struct.Struct(">i")
_V2_RECORD_COUNT_AT = 57  # in a batch of message format v2


class KeptRecords(MemoryRecords):
    """aiokafka's record set of one partition's fetch, which keeps the bytes it reads."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.data = data


# The fetcher makes each partition's record set by this name (aiokafka 0.14, pinned; a unit
# test checks it still does).
_fetcher.MemoryRecords = KeptRecords


class _Messages(Sequence[Message]):
    """Messages made only when asked for, one by one (:meth:`_message`)."""

    __slots__ = ()

    @overload
    def __getitem__(self, index: int) -> Message: ...

    @overload
    def __getitem__(self, index: slice) -> list[Message]: ...

    def __getitem__(self, index: int | slice) -> Message | list[Message]:
        if isinstance(index, slice):
            return [self._message(i) for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError("message index out of range")
        return self._message(index)

    def _message(self, index: int) -> Message:
        raise NotImplementedError


class Fetched(_Messages):
    """One partition's records from one fetch, in offset order: a list per field. Indexing
    makes the ``ConsumerRecord`` aiokafka would have."""

    __slots__ = (
        "headers",
        "keys",
        "offsets",
        "partition",
        "timestamp_types",
        "timestamps",
        "topic",
        "values",
    )

    def __init__(self, topic: str, partition: int) -> None:
        self.topic, self.partition = topic, partition
        self.offsets: list[int] = []
        self.timestamps: list[int] = []
        self.timestamp_types: list[int] = []
        self.keys: list[bytes | None] = []
        self.values: list[bytes | None] = []
        self.headers: list[Sequence[tuple[str, bytes]]] = []

    @classmethod
    def of(cls, topic: str, partition: int, messages: Iterable[Message]) -> Fetched:
        """``messages`` (of that partition, in offset order) as columns."""
        fetched = cls(topic, partition)
        for m in messages:
            fetched.offsets.append(m.offset)
            fetched.timestamps.append(m.timestamp)
            fetched.timestamp_types.append(m.timestamp_type)
            fetched.keys.append(m.key)
            fetched.values.append(m.value)
            fetched.headers.append(m.headers)
        return fetched

    def __len__(self) -> int:
        return len(self.offsets)

    @property
    def following(self) -> int:
        """The offset after the last message: where the partition goes on from."""
        return self.offsets[-1] + 1

    def __iter__(self) -> Iterator[Message]:
        return (self._message(i) for i in range(len(self)))

    def _message(self, index: int) -> Message:
        key, value = self.keys[index], self.values[index]
        return ConsumerRecord(
            self.topic,
            self.partition,
            self.offsets[index],
            self.timestamps[index],
            self.timestamp_types[index],
            key,
            value,
            None,  # no checksum per record since Kafka's message format v2
            -1 if key is None else len(key),
            -1 if value is None else len(value),
            tuple(self.headers[index]),
        )


class Batches(_Messages):
    """One partition's records from one fetch as the broker sent them: whole record batches
    (message format v2) in offset order, none a control batch or one of an aborted transaction,
    every record of them to be handed over. Their count and the offset that follows them come
    from the batches' headers; the records are unpacked only when one is asked for (the dead
    letter queue, a record the task reports)."""

    __slots__ = ("_unpacked", "data", "following", "held", "partition", "topic")

    def __init__(self, topic: str, partition: int, data: bytes, held: int, following: int):
        self.topic, self.partition = topic, partition
        self.data, self.held, self.following = data, held, following
        self._unpacked: Fetched | None = None

    def __len__(self) -> int:
        return self.held

    def unpacked(self) -> Fetched:
        """The records as columns."""
        if self._unpacked is None:
            source = MemoryRecords(self.data)
            batches = iter(source.next_batch, None)
            records = itertools.chain.from_iterable(batches)
            self._unpacked = Fetched.of(self.topic, self.partition, records)
        return self._unpacked

    def _message(self, index: int) -> Message:
        return self.unpacked()._message(index)


class Consumed(_Messages):
    """Fetches handed over together (to a task converted where it runs), as one sequence of
    messages: ``pieces`` keep their columns."""

    __slots__ = ("pieces",)

    def __init__(self, pieces: Iterable[Fetched | Batches] = ()) -> None:
        self.pieces: list[Fetched | Batches] = list(pieces)

    def __len__(self) -> int:
        return sum(map(len, self.pieces))

    def _message(self, index: int) -> Message:
        for piece in self.pieces:
            if index < len(piece):
                return piece[index]
            index -= len(piece)
        raise IndexError("message index out of range")

    def __iter__(self) -> Iterator[Message]:
        return itertools.chain.from_iterable(self.pieces)

    def has_headers(self) -> bool:
        """Whether a message of the pieces unpacked as columns has headers."""
        return any(any(p.headers) for p in self.pieces if isinstance(p, Fetched))


class Pattern(Protocol):
    """What aiokafka asks of a subscription's pattern: whether it takes a topic."""

    def match(self, topic: str) -> object: ...


def subscribe_pattern(
    consumer: AIOKafkaConsumer, pattern: Pattern, listener: ConsumerRebalanceListener
) -> None:
    """A pattern subscription that takes topics as ``pattern.match`` does, whatever it is (a
    sink's matcher that leaves out internal topics, say). aiokafka's own ``subscribe(pattern=)``
    compiles the pattern with ``re``; these are the two calls it makes next (aiokafka 0.14,
    pinned; ``tests/unit/core/storage/test_fetch.py`` checks they still do that)."""
    consumer._subscription.subscribe_pattern(pattern=pattern, listener=listener)
    consumer._client.set_topics([])


def client_of(consumer: AIOKafkaConsumer) -> Any:
    """The consumer's own aiokafka client (its connections and metadata), which it offers no
    public handle to: for the requests the consumer has no call for (topic ids)."""
    return consumer._client


async def getmany(
    consumer: AIOKafkaConsumer, timeout_ms: int, whole_batches: bool = False
) -> dict[KafkaTopicPartition, Fetched | Batches]:
    """What ``consumer.getmany(timeout_ms=...)`` returns, as columns: at most the consumer's
    ``max_poll_records`` records in all (every one fetched if it has none), waiting up to
    ``timeout_ms`` for the first. With ``whole_batches``, the batches that fit whole come as
    they were sent (:class:`Batches`)."""
    if consumer._closed:
        raise kafka_errors.ConsumerStoppedError()
    consumer._coordinator.check_errors()
    with consumer._subscription.fetch_context():
        return await _fetched(
            consumer._fetcher,
            timeout_ms / 1000,
            consumer._max_poll_records or sys.maxsize,
            whole_batches,
        )


async def _fetched(
    fetcher: Any, wait_s: float, limit: int, whole_batches: bool
) -> dict[KafkaTopicPartition, Fetched | Batches]:
    while True:
        if fetcher._subscriptions.reassignment_in_progress:
            await fetcher._subscriptions.wait_for_assignment()
        start = time.monotonic()
        drained: dict[KafkaTopicPartition, Fetched | Batches] = {}
        for tp in list(fetcher._records):
            result = fetcher._records[tp]
            if type(result) is FetchResult:
                taken = _take(result, limit, whole_batches)
                if not result.has_more():  # all handed over: fetch more
                    del fetcher._records[tp]
                    fetcher._notify(fetcher._wait_consume_future)
                if taken:
                    drained[tp] = taken
                    limit -= len(taken)
                    if limit == 0:
                        break
            elif drained:
                return drained  # the error is raised by the next call
            else:
                del fetcher._records[tp]
                fetcher._notify(fetcher._wait_consume_future)
                result.check_raise()
        if drained or not wait_s:
            return drained
        waiter = fetcher._create_fetch_waiter()
        done, pending = await asyncio.wait([waiter], timeout=wait_s)
        if not done or fetcher._closed:
            for each in pending:
                each.cancel()
            return {}
        waiter.result()  # an authorization error, say
        wait_s = max(0.0, wait_s - (time.monotonic() - start))


def _take(result: FetchResult, limit: int, whole_batches: bool) -> Fetched | Batches | None:
    """Up to ``limit`` records of one partition's fetch, moving its position past them: whole
    batches, if asked for and the next one fits, else columns."""
    tp = result._topic_partition
    if not result.check_assignment(tp) or not result.has_more():
        return None
    records = result._partition_records
    taken, left = take(records, limit, whole_batches)
    result._update_position()
    if not left:
        result._partition_records = None
    return taken


def take(
    records: PartitionRecords, limit: int, whole_batches: bool
) -> tuple[Fetched | Batches, bool]:
    """Up to ``limit`` of ``records`` from where an earlier take stopped: whole batches, if
    asked for and the next one can be taken whole, else columns; and whether any may be left."""
    # aiokafka's own iterator over the records is never run here. Unstarted, it still holds
    # ``records`` in a reference cycle, which would keep the fetch's bytes until the cyclic
    # collector ran, and a replay runs with the collector off; closed, it holds nothing.
    if records._records_iterator is not None:
        records._records_iterator.close()
    if whole_batches and (batches := take_batches(records, limit)) is not None:
        return batches, records._records.has_next() or getattr(records, _BATCH, None) is not None
    taken = Fetched(records._tp.topic, records._tp.partition)
    return taken, unpack(records, limit, taken)


def unpack(records: PartitionRecords, limit: int, into: Fetched) -> bool:
    """Appends up to ``limit`` of ``records`` to ``into``, from where an earlier call stopped;
    whether any may be left."""
    offsets, timestamps, types = into.offsets, into.timestamps, into.timestamp_types
    keys, values, headers = into.keys, into.values, into.headers
    batch = getattr(records, _BATCH, None)
    while True:
        if batch is not None:
            rest: Iterator[Any] = _rest(batch)  # begun: iterating it again would start over
        elif (batch := _next_batch(records)[0]) is None:
            return False
        else:
            rest = batch
        floor = records.next_fetch_offset
        for record in rest:
            offset = record.offset
            if offset < floor:
                continue  # before the offset fetched from, in a compressed set
            offsets.append(offset)
            timestamps.append(record.timestamp)
            types.append(record.timestamp_type)
            keys.append(record.key)
            values.append(record.value)
            headers.append(record.headers)
            if len(offsets) >= limit:
                records.next_fetch_offset = offset + 1
                setattr(records, _BATCH, batch)
                return True
        # Past a batch's last offset even where compaction removed its last records.
        records.next_fetch_offset = batch.next_offset
        batch = None
        setattr(records, _BATCH, None)


def _rest(batch: Any) -> Iterator[Any]:
    """The records of a batch already begun, from where it stopped."""
    while (record := next(batch, None)) is not None:
        yield record


def take_batches(records: PartitionRecords, limit: int) -> Batches | None:
    """Whole batches of ``records`` from where an earlier take stopped, up to ``limit`` records
    in all; None when the next batch cannot be taken whole (it begins before the offset fetched
    from, holds more than ``limit``, is of an older format, or a take stopped inside it): it is
    then left for :func:`unpack`."""
    data = getattr(records._records, "data", None)
    if data is None or getattr(records, _BATCH, None) is not None:
        return None
    spans: list[tuple[int, int]] = []
    count = 0
    while count < limit:
        batch, span = _next_batch(records)
        if batch is None:
            break
        if span is None:
            _leave_begun(records, batch)
            break
        start, end = span
        v2 = data[start + _MAGIC_AT] == 2 and end - start > _V2_RECORD_COUNT_AT + 4
        held = _V2_RECORD_COUNT.unpack_from(data, start + _V2_RECORD_COUNT_AT)[0] if v2 else 0
        if not v2 or batch.base_offset < records.next_fetch_offset or count + held > limit:
            _leave_begun(records, batch)
            break
        spans.append(span)
        count += held
        records.next_fetch_offset = batch.next_offset
    if not spans:
        return None
    view = memoryview(data)
    joined = b"".join(view[start:end] for start, end in _merged(spans))
    tp = records._tp
    return Batches(tp.topic, tp.partition, joined, count, records.next_fetch_offset)


def _leave_begun(records: PartitionRecords, batch: Any) -> None:
    """Leaves ``batch`` to :func:`unpack` as one a take stopped inside, at its first record."""
    iter(batch)  # a batch's records are read (decompressed, too) as its iteration begins
    setattr(records, _BATCH, batch)


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Adjacent spans as one."""
    merged = [spans[0]]
    for start, end in spans[1:]:
        if start == merged[-1][1]:
            merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


def _pulled(records: PartitionRecords) -> tuple[Any, tuple[int, int] | None]:
    """The next batch of the record set, and where its bytes lie in the KeptRecords' data
    (None when they cannot be told)."""
    source = records._records
    batch = source.next_batch()
    data = getattr(source, "data", None)
    start = getattr(records, _AT, 0)
    if data is None or start < 0:
        return batch, None
    base, length = _LOG_OVERHEAD.unpack_from(data, start)
    if base != batch.base_offset:  # not where it was thought to be: no span from here on
        setattr(records, _AT, -1)
        return batch, None
    end = start + 12 + length
    setattr(records, _AT, end)
    return batch, (start, end)


def _next_batch(records: PartitionRecords) -> tuple[Any, tuple[int, int] | None]:
    """The next batch of data to hand over, and where its bytes lie (``_pulled``): control
    batches, and reading committed, those of aborted transactions, skipped."""
    source = records._records
    while source.has_next():
        batch, span = _pulled(records)
        if records._check_crcs and not batch.validate_crc():
            raise kafka_errors.CorruptRecordException(f"Invalid CRC - {records._tp}")
        if records._isolation_level == READ_COMMITTED and batch.producer_id is not None:
            records._consume_aborted_up_to(batch.base_offset)
            if batch.is_control_batch and records._contains_abort_marker(batch):
                records._aborted_producers.discard(batch.producer_id)
            if batch.is_transactional and batch.producer_id in records._aborted_producers:
                records.next_fetch_offset = batch.next_offset
                continue
        if batch.is_control_batch:
            records.next_fetch_offset = batch.next_offset
            continue
        return batch, span
    return None, None


async def lag(consumer: AIOKafkaConsumer) -> int:
    """A consumer's lag as Kafka's consumers count theirs: per partition, its last stable
    offset (the end a read_committed consumer can reach) less the consumer's position, as of
    the last fetch. A partition not fetched yet in this assignment counts nothing."""
    ends: dict[KafkaTopicPartition, int] = {}
    for tp in consumer.assignment():  # no await in this loop: the set holds still
        end = consumer.last_stable_offset(tp)
        if end is None or end < 0:
            end = consumer.highwater(tp)
        if end is not None:
            ends[tp] = end
    behind = 0
    for tp, end in ends.items():
        try:
            behind += max(0, end - await consumer.position(tp))
        except kafka_errors.IllegalStateError:
            continue  # revoked meanwhile
    return behind
