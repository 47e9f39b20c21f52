"""A connector's offsets as KIP-875 shows them, read from and written to where they live.

A source connector's offsets are in the cluster's offsets topic, one record per source partition
(a tombstone forgets one); a sink connector's are the committed offsets of its consumer group.
Both are shown in Connect's shape: a list of ``{"partition": {...}, "offset": {...}}``, where a
sink's partition is ``{"kafka_topic", "kafka_partition"}`` and its offset ``{"kafka_offset"}``.
An entry whose offset is None forgets that partition's offset.

Parsing an entry is pure and names the key that is wrong; the I/O is in :class:`OffsetsAdmin`.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aiokafka import TopicPartition

from headrace.config.groupadmin import GroupAdmin
from headrace.config.validation import ConfigRejected, Problem
from headrace.core.model.connectorconfig import offsets_topic
from headrace.core.model.offsets import sink_group_id
from headrace.core.settings import Settings
from headrace.core.storage.stores import OffsetStore
from headrace.core.storage.topiclog import LogFactory

KAFKA_TOPIC = "kafka_topic"
KAFKA_PARTITION = "kafka_partition"
KAFKA_OFFSET = "kafka_offset"


@dataclass(frozen=True)
class ConnectorOffset:
    """One partition's offset; ``offset`` None forgets it."""

    partition: Mapping[str, Any]
    offset: Mapping[str, Any] | None


def _invalid(message: str) -> ConfigRejected:
    return ConfigRejected(Problem.INVALID, f"offsets: {message}")


def _whole_number(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise _invalid(f"{what} must be a whole number, not {value!r}")
    try:
        number = int(value)
    except ValueError:
        raise _invalid(f"{what} must be a whole number, not {value!r}") from None
    if number < 0:
        raise _invalid(f"{what} must not be negative, not {number}")
    return number


def sink_entry(entry: ConnectorOffset) -> tuple[TopicPartition, int | None]:
    """The topic partition and offset a sink connector's entry names."""
    topic = entry.partition.get(KAFKA_TOPIC)
    if not isinstance(topic, str) or not topic:
        raise _invalid(f"each partition needs {KAFKA_TOPIC}, a topic name")
    if KAFKA_PARTITION not in entry.partition:
        raise _invalid(f"each partition needs {KAFKA_PARTITION}")
    partition = _whole_number(entry.partition[KAFKA_PARTITION], KAFKA_PARTITION)
    if set(entry.partition) - {KAFKA_TOPIC, KAFKA_PARTITION}:
        extra = sorted(set(entry.partition) - {KAFKA_TOPIC, KAFKA_PARTITION})
        raise _invalid(
            f"a sink connector's partition has only {KAFKA_TOPIC} and {KAFKA_PARTITION}, "
            f"not {extra}"
        )
    if entry.offset is None:
        return TopicPartition(topic, partition), None
    if set(entry.offset) != {KAFKA_OFFSET}:
        raise _invalid(f"a sink connector's offset is {{{KAFKA_OFFSET!r}: n}} or null")
    return TopicPartition(topic, partition), _whole_number(entry.offset[KAFKA_OFFSET], KAFKA_OFFSET)


def source_entry(entry: ConnectorOffset) -> tuple[Mapping[str, Any], Mapping[str, Any] | None]:
    """A source connector's entry, checked: a partition is a non-empty object."""
    if not isinstance(entry.partition, Mapping) or not entry.partition:
        raise _invalid("each partition must be a non-empty JSON object")
    if entry.offset is not None and not isinstance(entry.offset, Mapping):
        raise _invalid("each offset must be a JSON object or null")
    return entry.partition, entry.offset


def parse_entries(partitions_and_offsets: Sequence[tuple[str, str]]) -> list[ConnectorOffset]:
    """Entries from JSON texts (an empty or ``null`` offset forgets the partition's)."""
    entries = []
    for partition_text, offset_text in partitions_and_offsets:
        try:
            partition = json.loads(partition_text)
            offset = json.loads(offset_text) if offset_text.strip() else None
        except json.JSONDecodeError as exc:
            raise _invalid(f"not JSON: {exc}") from None
        if not isinstance(partition, dict) or not (offset is None or isinstance(offset, dict)):
            raise _invalid(
                "each partition and offset must be a JSON object (an offset may be null)"
            )
        entries.append(ConnectorOffset(partition, offset))
    return entries


def modified(handled: bool, *, reset: bool) -> str:
    """What an alteration (or a reset) is answered with, as Connect words it: whether the
    connector said it altered what it keeps outside Kafka too (KIP-875's ``alterOffsets``)."""
    done = "reset" if reset else "altered"
    if handled:
        return f"The offsets for this connector have been {done} successfully"
    return (
        f"The Connect framework-managed offsets for this connector have been {done} "
        "successfully. However, if this connector manages offsets externally, they will need "
        f"to be manually {done} in the system that the connector uses."
    )


def as_json(kind: str, entries: Sequence[ConnectorOffset]) -> list[dict[str, Any]]:
    """Entries in Connect's JSON shape, a sink's partition and offset as numbers."""
    if kind != "sink":
        return [
            {"partition": dict(e.partition), "offset": None if e.offset is None else dict(e.offset)}
            for e in entries
        ]
    return [
        {
            "partition": {KAFKA_TOPIC: tp.topic, KAFKA_PARTITION: tp.partition},
            "offset": None if offset is None else {KAFKA_OFFSET: offset},
        }
        for tp, offset in map(sink_entry, entries)
    ]


def check_entries(kind: str, entries: Sequence[ConnectorOffset]) -> None:
    """Refuses entries a connector of this kind (source or sink) cannot take, naming what is
    wrong, before anything is written."""
    for entry in entries:
        (sink_entry if kind == "sink" else source_entry)(entry)


class OffsetsAdmin:
    """Reads and changes connectors' offsets on one cluster: source offsets on its offsets
    topic, or in ``source_logs`` when given (standalone mode's file)."""

    def __init__(
        self,
        settings: Settings,
        source_logs: LogFactory | None = None,
        durable: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        """``durable``, when given, is awaited after source offsets are changed, before the
        change is answered: standalone mode's file writes them then, whatever its interval."""
        self.settings = settings
        self.groups = GroupAdmin(settings.bootstrap_servers, settings.kafka_security)
        self._source_logs = source_logs
        self._durable = durable

    async def _written(self, store: OffsetStore, pairs: Sequence[tuple[Any, Any]]) -> None:
        await store.override(pairs)
        if self._durable is not None:
            await self._durable()

    def _group(self, name: str, config: Mapping[str, str]) -> str:
        return sink_group_id(self.settings.cluster, name, config)

    async def _source_store(self, name: str, config: Mapping[str, str]) -> OffsetStore:
        own = offsets_topic(config, self.settings.cluster)
        store = OffsetStore(self.settings, name, self._source_logs, topic=own)
        await store.load()
        return store

    async def read(self, name: str, kind: str, config: Mapping[str, str]) -> list[ConnectorOffset]:
        if kind == "sink":
            found = await self.groups.offsets(self._group(name, config))
            return [
                ConnectorOffset(
                    {KAFKA_TOPIC: tp.topic, KAFKA_PARTITION: tp.partition}, {KAFKA_OFFSET: offset}
                )
                for tp, offset in sorted(found.items())
            ]
        store = await self._source_store(name, config)
        try:
            return [
                ConnectorOffset(json.loads(partition), dict(offset))
                for partition, offset in sorted(store.state.items())
            ]
        finally:
            await store.close()

    async def check(self, kind: str, entries: Sequence[ConnectorOffset]) -> None:
        """Refuses entries that cannot be written, before anything is: a sink's partitions must
        exist (NoSuchPartition)."""
        check_entries(kind, entries)
        if kind == "sink":
            await self.groups.check_partitions(tp for tp, _ in map(sink_entry, entries))

    async def alter(
        self, name: str, kind: str, config: Mapping[str, str], entries: Sequence[ConnectorOffset]
    ) -> None:
        """Sets or forgets the offsets of the partitions named; the others keep theirs."""
        if kind == "sink":
            parsed = dict(sink_entry(e) for e in entries)
            commits = {tp: o for tp, o in parsed.items() if o is not None}
            if commits:
                await self.groups.commit(self._group(name, config), commits)
            await self.groups.delete(
                self._group(name, config), [tp for tp, o in parsed.items() if o is None]
            )
            return
        pairs = [source_entry(e) for e in entries]
        store = await self._source_store(name, config)
        try:
            await self._written(store, pairs)
        finally:
            await store.close()

    async def reset(self, name: str, kind: str, config: Mapping[str, str]) -> None:
        """Forgets every offset of the connector: it starts over, as a new one would."""
        if kind == "sink":
            await self.groups.delete_group(self._group(name, config))
            return
        store = await self._source_store(name, config)
        try:
            await self._written(store, [(json.loads(p), None) for p in store.state])
        finally:
            await store.close()
