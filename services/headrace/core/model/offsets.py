"""Source offsets and the ``<cluster>-offsets`` topic protocol.

The topic (``Settings().topic("offsets")``, many partitions, ``cleanup.policy=compact``) holds the
latest position of every source partition of every source connector, in Kafka Connect's format:

| part | content |
| --- | --- |
| key | JSON ``[connector, source_partition]``, keys sorted, no spaces: ``["gen",{"task":0}]`` |
| value | JSON source offset, e.g. ``{"next":42}``; a null value (tombstone) forgets the offset |

Writers: source tasks (in the Kafka transaction that holds the batch's records, so a stored offset
is committed with exactly the data it covers; readers read committed records only) and the
config service when offsets are altered or reset. Records
are partitioned by key, so one source partition's offsets stay in order on one Kafka partition.
Compaction keeps only the last value per key, which is all a reader needs: a task replays the topic
to its end when it starts and keeps the last value per key of its own connector (``apply``).
Sorted keys matter: the same source partition must always give the same key bytes, or compaction
and the fold would keep two offsets for it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import immutables

from headrace.core.model.persistent import with_item, without_item

OffsetMap = Mapping[str, Mapping[str, Any]]
"""Offsets by canonical source partition (its sorted-keys JSON)."""

EMPTY: OffsetMap = immutables.Map()


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def canonical_partition(source_partition: Mapping[str, Any]) -> str:
    """One source partition in one canonical form: equal partitions give equal strings."""
    return _canonical(dict(source_partition))


GROUP_OVERRIDE = "consumer.override.group.id"


def sink_group_id(cluster: str, connector: str, config: Mapping[str, str] | None = None) -> str:
    """The consumer group a sink connector's tasks consume in, and keep their offsets in: the
    one its config names (``consumer.override.group.id``, as Connect takes it), else
    ``<cluster>-connect-<connector>``."""
    named = (config or {}).get(GROUP_OVERRIDE, "").strip()
    return named or f"{cluster}-connect-{connector}"


def offset_key(connector: str, source_partition: Mapping[str, Any]) -> bytes:
    """The record key for one source partition of one connector."""
    return _canonical([connector, dict(source_partition)]).encode()


def offset_value(offset: Mapping[str, Any] | None) -> bytes | None:
    """The record value for an offset; None (a tombstone) for a reset."""
    return None if offset is None else _canonical(dict(offset)).encode()


def decode_key(key: bytes | str | None) -> tuple[str, dict[str, Any]] | None:
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


@dataclass(frozen=True)
class OffsetStored:
    """A source partition's offset was stored; ``offset`` None means it was reset."""

    connector: str
    partition: Mapping[str, Any]
    offset: Mapping[str, Any] | None


def decode(key: bytes | str | None, value: bytes | None) -> OffsetStored | None:
    """The event a record carries; None for a record that is not a well-formed offset."""
    decoded = decode_key(key)
    if decoded is None:
        return None
    connector, partition = decoded
    if value is None:
        return OffsetStored(connector, partition, None)
    try:
        offset = json.loads(value)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None  # not ours to interpret; a later valid write will replace it
    return OffsetStored(connector, partition, offset) if isinstance(offset, dict) else None


def apply(state: OffsetMap, event: OffsetStored) -> OffsetMap:
    """Folds one stored offset into one connector's offsets: the last value per partition wins."""
    partition_id = canonical_partition(event.partition)
    if event.offset is None:
        return without_item(state, partition_id)
    return with_item(state, partition_id, MappingProxyType(dict(event.offset)))
