"""Source offsets and the ``<cluster>-offsets`` topic protocol.

The topic (``Settings().topic("offsets")``, many partitions, ``cleanup.policy=compact``) holds the
latest position of every source partition of every source connector, in Kafka Connect's format:

| part | content |
| --- | --- |
| key | JSON ``[connector, source_partition]``, keys sorted, no spaces: ``["gen",{"task":0}]`` |
| value | JSON source offset, e.g. ``{"next":42}``; a null value (tombstone) forgets the offset |

Writers: source tasks (after the batch's records were acknowledged by Kafka, so a stored offset
never runs ahead of the data) and the config service when offsets are altered or reset. Records
are partitioned by key, so one source partition's offsets stay in order on one Kafka partition.
Compaction keeps only the last value per key, which is all a reader needs: a task replays the topic
to its end when it starts and keeps the last value per key of its own connector (``fold``).
Sorted keys matter: the same source partition must always give the same key bytes, or compaction
and the fold would keep two offsets for it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from headrace.core import log
from headrace.core.settings import Settings
from headrace.runtime.kafka import OFFSETS_PARTITIONS, ensure_topic

OffsetMap = dict[str, dict[str, Any]]
"""Offsets by canonical source partition (its sorted-keys JSON)."""


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def offset_key(connector: str, source_partition: Mapping[str, Any]) -> bytes:
    """The record key for one source partition of one connector."""
    return _canonical([connector, dict(source_partition)]).encode()


def offset_value(offset: Mapping[str, Any] | None) -> bytes | None:
    """The record value for an offset; None (a tombstone) for a reset."""
    return None if offset is None else _canonical(dict(offset)).encode()


def decode_key(key: bytes | None) -> tuple[str, dict[str, Any]] | None:
    """(connector, source partition) from a key, or None when the key is not ours."""
    try:
        decoded = json.loads(key) if key is not None else None
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    if (
        isinstance(decoded, list)
        and len(decoded) == 2
        and isinstance(decoded[0], str)
        and isinstance(decoded[1], dict)
    ):
        return decoded[0], decoded[1]
    return None


def fold(state: OffsetMap, connector: str, key: bytes | None, value: bytes | None) -> OffsetMap:
    """Applies one offsets-topic record to ``connector``'s offsets (a new map; pure)."""
    updated = dict(state)
    fold_into(updated, connector, key, value)
    return updated


def fold_into(
    state: dict[str, Any], connector: str, key: bytes | None, value: bytes | None
) -> None:
    """:func:`fold` in place: a replay of many records must not copy the map for each one."""
    decoded = decode_key(key)
    if decoded is None or decoded[0] != connector:
        return
    partition_id = _canonical(decoded[1])
    if value is None:
        state.pop(partition_id, None)
        return
    try:
        offset = json.loads(value)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return  # not ours to interpret; a later valid write will replace it
    if isinstance(offset, dict):
        state[partition_id] = offset


class OffsetStore:
    """One connector's source offsets: replayed from the topic, then kept current by writes.

    Implements the SDK's ``OffsetReader`` for the task context.
    """

    def __init__(self, settings: Settings, connector: str) -> None:
        self.settings = settings
        self.connector = connector
        self.topic = settings.topic("offsets")
        self._offsets: OffsetMap = {}

    async def load(self) -> None:
        """Creates the topic if needed, then replays it to its current end."""
        bootstrap = self.settings.bootstrap_servers
        count = await ensure_topic(
            bootstrap, self.topic, OFFSETS_PARTITIONS, {"cleanup.policy": "compact"}
        )
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
        await consumer.start()
        try:
            self._offsets = await self._replay(consumer, count)
        finally:
            await consumer.stop()
        log.get().info(
            "source_offsets_loaded", connector=self.connector, partitions=len(self._offsets)
        )

    async def _replay(self, consumer: AIOKafkaConsumer, count: int) -> OffsetMap:
        partitions = [TopicPartition(self.topic, p) for p in range(count)]
        consumer.assign(partitions)
        await consumer.seek_to_beginning(*partitions)
        end = await consumer.end_offsets(partitions)
        state: dict[str, Any] = {}
        remaining = {tp for tp in partitions if end[tp] > 0}
        while remaining:
            batch = await consumer.getmany(*remaining, timeout_ms=1000)
            for messages in batch.values():
                for m in messages:
                    fold_into(state, self.connector, m.key, m.value)
            remaining = {tp for tp in remaining if await consumer.position(tp) < end[tp]}
        return state

    def offset(self, partition: Mapping[str, Any]) -> dict[str, Any] | None:
        """The latest stored offset of one source partition, or None."""
        found = self._offsets.get(_canonical(dict(partition)))
        return dict(found) if found is not None else None

    def offsets(
        self, partitions: Sequence[Mapping[str, Any]]
    ) -> list[tuple[Mapping[str, Any], dict[str, Any] | None]]:
        """The latest offsets of several source partitions, in order."""
        return [(p, self.offset(p)) for p in partitions]

    async def write(
        self, producer: AIOKafkaProducer, latest: Sequence[tuple[Mapping[str, Any], Any]]
    ) -> None:
        """Stores (source partition, offset) pairs and waits for Kafka to acknowledge them."""
        futures = [
            await producer.send(
                self.topic,
                key=offset_key(self.connector, partition),
                value=offset_value(offset),
            )
            for partition, offset in latest
        ]
        for future in futures:
            await future
        offsets = dict(self._offsets)
        for partition, offset in latest:
            key = offset_key(self.connector, partition)
            fold_into(offsets, self.connector, key, offset_value(offset))
        self._offsets = offsets
