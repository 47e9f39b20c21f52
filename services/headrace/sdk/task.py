"""The task side of the plugin API: ``SourceTask`` and ``SinkTask``, the units that move data.

Tasks are async: the plugin process runs every task of a plugin version on one event loop, so a
task must never block it (wrap blocking client calls in ``asyncio.to_thread``).

Source task, driven by the runtime's loop:

    await task.start(config)
    while running:
        records = await task.poll()           # may wait a little; [] when nothing is ready
        ... produced to Kafka, in a transaction with their source offsets ...
        ... the transaction commits (after each poll, by default: ``transaction.boundary``) ...
        await task.commit_record(record, metadata)   # per record of the transaction
        await task.commit()                   # once per transaction
    await task.stop(deleted=...)

Sink task:

    await task.start(config); await task.open(assigned partitions)
    while running:
        await task.put(records)               # may buffer
        committable = await task.pre_commit(offsets)   # by default: await flush(offsets)
        ... committable offsets committed to the consumer group ...
    await task.close(partitions); await task.stop(deleted=...)

Offsets handed to ``flush``/``pre_commit`` are the *next* offset to consume per partition
(last processed + 1), as in Connect.

Contexts: every task logs with ``self.context.logger``; a sink task writing through Spark hands
Arrow tables to ``self.context.executor`` (see ``headrace.sdk.executor``); a task that uses a
file named in its config resolves it with ``self.context.paths`` (see ``headrace.sdk.paths``). A
sink task steers its consumption with ``self.context``: ``offset`` (rewind or skip ahead),
``pause``/``resume`` (of its assigned partitions), ``request_commit``; and hands a record it cannot
write to ``self.context.errant_record_reporter`` instead of failing. A context built by hand (in a
unit test) logs through ``logging``, has no executor, allows no folder, ignores offsets, pauses
and resumes, and fails on an errant record, unless it is given what to do instead.
"""

from __future__ import annotations

import abc
import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence, Set
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, overload

from headrace.sdk.errors import ConnectError
from headrace.sdk.executor import Executor, NoExecutor
from headrace.sdk.logger import Logger, StdlibLogger
from headrace.sdk.paths import Paths
from headrace.sdk.records import (
    RecordMetadata,
    SinkBatch,
    SinkRecord,
    SourceBatch,
    SourceRecord,
    TopicPartition,
)


class OffsetReader(Protocol):
    """Reads the stored source offsets of this connector."""

    def offset(self, partition: Mapping[str, Any]) -> dict[str, Any] | None:
        """The latest stored offset of one source partition, or None if there is none."""
        ...

    def offsets(
        self, partitions: Sequence[Mapping[str, Any]]
    ) -> list[tuple[Mapping[str, Any], dict[str, Any] | None]]:
        """The latest offsets of several source partitions at once, in order."""
        ...


class NoOffsets:
    """An offset reader of a connector with no stored offsets."""

    def offset(self, partition: Mapping[str, Any]) -> dict[str, Any] | None:
        return None

    def offsets(
        self, partitions: Sequence[Mapping[str, Any]]
    ) -> list[tuple[Mapping[str, Any], dict[str, Any] | None]]:
        return [(p, None) for p in partitions]


class TransactionContext(Protocol):
    """How a source task ends its own transactions (``transaction.boundary=connector``).

    A request without a record applies after the next batch ``poll`` returns; one with a
    record, right after that record, which must be in that batch. For the last record of a
    batch, a request naming it wins over one for the whole batch.
    """

    def commit_transaction(self, record: SourceRecord | None = None) -> None:
        """Commits the open transaction: its records, and the offsets they carry."""
        ...

    def abort_transaction(self, record: SourceRecord | None = None) -> None:
        """Discards the open transaction's records (``commit_record`` is told they were not
        produced), but still commits their offsets, so they are not polled again. To have
        them polled again, raise from ``poll`` instead."""
        ...


@dataclass
class SourceTaskContext:
    """What the framework offers a running source task: its stored offsets, a logger, the
    folders a path in its config may name, and, when its connector ends transactions itself
    (``transaction.boundary=connector``), the ``transaction_context`` to do it with."""

    connector: str = ""
    task: int = 0
    offset_reader: OffsetReader = field(default_factory=NoOffsets)
    logger: Logger = field(default_factory=StdlibLogger, repr=False)
    paths: Paths = field(default_factory=Paths, repr=False)
    transaction_context: TransactionContext | None = field(default=None, repr=False)


Report = Callable[[SinkRecord, BaseException], Awaitable[asyncio.Future[None]]]


async def _intolerant(record: SinkRecord, error: BaseException) -> asyncio.Future[None]:
    raise ConnectError(
        f"errant record at {record.topic_partition} offset {record.offset}: {error}"
    ) from error


@dataclass(frozen=True)
class ErrantRecordReporter:
    """Where a sink task sends a record it cannot write, instead of failing (Kafka Connect's
    ``ErrantRecordReporter``, KIP-610): the connector's ``errors.*`` settings decide its fate,
    as they do for a record a converter or a transform refuses.

    Every sink task has one, whatever the settings; how a report ends depends on them:

    - ``errors.tolerance=none`` (the default): ``report`` raises, and the task fails with the
      reported error in its trace, even if it catches what ``report`` raised.
    - ``errors.tolerance=all``: the record is skipped and counted, logged when
      ``errors.log.enable=true``, and its original bytes go to the dead letter queue when
      ``errors.deadletterqueue.topic.name`` is set (with the ``__connect.errors.*`` headers when
      ``errors.deadletterqueue.context.headers.enable=true``).
    """

    _report: Report = field(default=_intolerant, repr=False)

    async def report(self, record: SinkRecord, error: BaseException) -> asyncio.Future[None]:
        """Reports one record ``put`` (or ``put_batch``) handed over, and why it failed.

        Returns once the record is on its way, with a future that is done once it is in the
        dead letter queue (at once when there is none). Awaiting it is optional: the framework
        waits for every reported record to be there before it calls ``pre_commit``, and again
        before it commits the offsets of the batch, so none is lost if the task fails later.
        """
        return await self._report(record, error)


@dataclass
class SinkTaskContext:
    """What the framework offers a running sink task: its partitions and how they are
    consumed, commits, a reporter for records it cannot write, the Spark executor, a logger,
    and the folders a path in its config may name."""

    connector: str = ""
    task: int = 0
    _assignment: Callable[[], set[TopicPartition]] = field(default=set, repr=False)
    _request_commit: Callable[[], None] = field(default=lambda: None, repr=False)
    executor: Executor = field(default_factory=NoExecutor, repr=False)
    logger: Logger = field(default_factory=StdlibLogger, repr=False)
    paths: Paths = field(default_factory=Paths, repr=False)
    errant_record_reporter: ErrantRecordReporter = field(
        default_factory=ErrantRecordReporter, repr=False
    )
    _offset: Callable[[Mapping[TopicPartition, int]], None] = field(
        default=lambda offsets: None, repr=False
    )
    _pause: Callable[[Set[TopicPartition]], None] = field(
        default=lambda partitions: None, repr=False
    )
    _resume: Callable[[Set[TopicPartition]], None] = field(
        default=lambda partitions: None, repr=False
    )

    def assignment(self) -> set[TopicPartition]:
        """The partitions this task currently consumes."""
        return self._assignment()

    def request_commit(self) -> None:
        """Asks for a flush and offset commit after the current batch."""
        self._request_commit()

    @overload
    def offset(self, partition: TopicPartition, offset: int, /) -> None: ...
    @overload
    def offset(self, offsets: Mapping[TopicPartition, int], /) -> None: ...
    def offset(
        self, target: TopicPartition | Mapping[TopicPartition, int], offset: int | None = None, /
    ) -> None:
        """Resets where consumption of assigned partitions goes on: the next record ``put``
        gets from each is the one at the given offset (an earlier one: records are seen again;
        a later one: records are skipped).

        For a task that keeps its own offsets in the system it writes to: it calls this in
        ``open`` with what it stored, as Connect's sink tasks do. Offsets asked for in ``open``
        apply before the partitions' first fetch; at any other time, before the next fetch, and
        nothing fetched before is handed over after them. A reset offset is not committed by
        itself: the group's offset moves once records past it were delivered and flushed.
        ConnectError for a partition this task is not assigned; ValueError for a negative offset.
        """
        if isinstance(target, TopicPartition):
            if offset is None:
                raise TypeError("offset(partition, offset) needs the offset")
            offsets: dict[TopicPartition, int] = {target: offset}
        else:
            offsets = dict(target)
        negative = {str(tp): o for tp, o in offsets.items() if o < 0}
        if negative:
            raise ValueError(f"offsets must be at least 0: {negative}")
        self._offset(offsets)

    def pause(self, *partitions: TopicPartition) -> None:
        """Stops fetching from these assigned partitions until ``resume``: ``put`` gets none of
        their records meanwhile (others keep flowing), and none is lost. A rebalance that keeps
        a partition with this task keeps it paused. ConnectError for a partition this task is
        not assigned."""
        self._pause(frozenset(partitions))

    def resume(self, *partitions: TopicPartition) -> None:
        """Fetches again from partitions ``pause`` stopped. ConnectError for a partition this
        task is not assigned."""
        self._resume(frozenset(partitions))


class Task(abc.ABC):
    """Base of every task."""

    def version(self) -> str:
        """The plugin version; by default the class attribute ``VERSION`` if set."""
        return str(getattr(self, "VERSION", "unknown"))

    @abc.abstractmethod
    async def start(self, config: Mapping[str, str]) -> None:
        """Acquires what the task needs; raising here FAILS the task."""

    @abc.abstractmethod
    async def stop(self, deleted: bool = False) -> None:
        """Releases what ``start`` acquired; ``deleted`` says the connector is gone for good."""


class SourceTask(Task):
    """Reads from an external system; the runtime produces what ``poll`` returns."""

    context: SourceTaskContext

    def initialize(self, context: SourceTaskContext) -> None:
        """Called by the framework before ``start``."""
        self.context = context

    @abc.abstractmethod
    async def poll(self) -> list[SourceRecord] | SourceBatch:
        """The next batch of records; [] when none is ready (after waiting a little).

        A ``SourceBatch`` (the batch API) gives many records of one source partition as columns,
        which the runtime converts and produces without a Python step per record.

        A stop cancels a pending ``poll`` (nothing it has not returned is lost to the framework),
        so keep it cancellation-safe: advance your own position only as you return records.
        """

    async def commit(self) -> None:
        """Called after each transaction committed: the offsets of everything it holds are
        stored. The next ``poll`` may be under way meanwhile (the runtime polls while a batch
        goes to Kafka), as may ``commit_record``'s."""

    async def commit_record(self, record: SourceRecord, metadata: RecordMetadata | None) -> None:
        """Called per record once the transaction holding it committed; metadata None if it
        was not produced (skipped under ``errors.tolerance``, or its transaction aborted).

        For a polled ``SourceBatch``, ``record`` is one of its ``records()``. A task that does
        not override this method is not called per record at all."""

    async def stop(self, deleted: bool = False) -> None:
        """Releases what ``start`` acquired; ``deleted`` says the connector is gone for good."""


class SinkTask(Task):
    """Writes records consumed from Kafka into an external system."""

    context: SinkTaskContext

    ARROW_VALUES: ClassVar[bool] = False
    """Whether ``put_batch`` would rather have record values in Arrow: with the plain JSON
    converter, a batch whose messages are all JSON objects then has its values read straight
    into Arrow (``ArrowRecords``), and made Python objects only if the task reads them so."""

    def initialize(self, context: SinkTaskContext) -> None:
        """Called by the framework before ``start``."""
        self.context = context

    @abc.abstractmethod
    async def put(self, records: list[SinkRecord]) -> None:
        """Takes a batch of records; may buffer them until ``flush``."""

    async def put_batch(self, batch: SinkBatch) -> None:
        """Takes one partition's records as columns (the batch API); by default ``put`` of its
        ``records()``. A task that overrides it gets its records this way whenever its
        converters can make columns of a whole fetch, and through ``put`` otherwise (a record
        a converter refuses is then found and handled one by one), so both must do the same."""
        await self.put(batch.records())

    async def flush(self, offsets: dict[TopicPartition, int]) -> None:
        """Writes out everything ``put`` buffered, and returns once it is durable."""

    async def pre_commit(self, offsets: dict[TopicPartition, int]) -> dict[TopicPartition, int]:
        """The offsets safe to commit; by default flushes and returns ``offsets`` unchanged."""
        await self.flush(offsets)
        return offsets

    async def open(self, partitions: set[TopicPartition]) -> None:
        """Called when partitions are assigned to this task (before their records arrive)."""

    async def close(self, partitions: set[TopicPartition]) -> None:
        """Called when partitions are taken away, after their last offsets were committed."""

    async def stop(self, deleted: bool = False) -> None:
        """Releases what ``start`` acquired; ``deleted`` says the connector is gone for good."""
