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


# -- Offsets that wait for their transaction's outcome ---------------------------------------------
#
# Where source offsets cannot be written in the Kafka transaction of their records (standalone
# mode keeps them in a file), a task commits in two phases: before the commit it stores the
# transaction's offsets as pending, with where one of its records landed (the marker); after the
# commit it stores them as offsets and drops the pending record. A task that starts and finds a
# pending record of its own reads the marker back as a committed reader does: found, the
# transaction committed and its offsets apply; gone, it aborted and they do not.

PENDING = "headrace.pending"
"""The first element of a pending record's key, which no connector's offset key has."""


@dataclass(frozen=True)
class Marker:
    """Where one record of a transaction landed."""

    topic: str
    partition: int
    offset: int


@dataclass(frozen=True)
class Pending:
    """A transaction's source offsets, stored before its commit by the task whose transactional
    id is ``owner``."""

    connector: str
    owner: str
    marker: Marker
    offsets: tuple[tuple[Mapping[str, Any], Mapping[str, Any] | None], ...]


def pending_key(connector: str, owner: str) -> bytes:
    return _canonical([PENDING, connector, owner]).encode()


def pending_value(pending: Pending) -> bytes:
    marker = pending.marker
    return _canonical(
        {
            "marker": [marker.topic, marker.partition, marker.offset],
            "offsets": [[dict(p), None if o is None else dict(o)] for p, o in pending.offsets],
        }
    ).encode()


def decode_pending(key: bytes | str | None, value: bytes | None) -> tuple[str, str, Pending | None]:
    """(connector, owner, the pending offsets or None for a tombstone) of a pending record.

    Raises ValueError for a record that is not one, or is malformed: a pending record is
    headrace's own, and one it cannot read must not be taken for no transaction at all."""
    named = pending_name(key)
    if named is None:
        raise ValueError(f"not a pending offsets key: {key!r}")
    connector, owner = named
    if value is None:
        return connector, owner, None
    try:
        body = json.loads(value)
        topic, partition, offset = body["marker"]
        marker = Marker(str(topic), int(partition), int(offset))
        offsets = tuple((dict(p), None if o is None else dict(o)) for p, o in body["offsets"])
    except (UnicodeDecodeError, KeyError, TypeError, ValueError) as exc:  # JSONDecodeError too
        raise ValueError(f"a malformed pending offsets record {key!r}: {exc!r}") from None
    return connector, owner, Pending(connector, owner, marker, offsets)


def is_pending_key(key: bytes | str | None) -> bool:
    return pending_name(key) is not None


def pending_name(key: bytes | str | None) -> tuple[str, str] | None:
    """(connector, owner) of a pending record's key; None for any other key. Its value is not
    read: one connector's malformed record is no other's concern."""
    if key is None:
        return None
    text = key.decode(errors="replace") if isinstance(key, bytes) else key
    if not text.startswith(f'["{PENDING}",'):  # most keys: no need to parse them
        return None
    try:
        decoded = json.loads(text)
    except json.JSONDecodeError:
        return None
    if (
        isinstance(decoded, list)
        and len(decoded) == 3
        and decoded[0] == PENDING
        and isinstance(decoded[1], str)
        and isinstance(decoded[2], str)
    ):
        return decoded[1], decoded[2]
    return None


def settled(
    pending: Pending, pending_at: int, stored_at: Mapping[str, int], committed: bool
) -> list[OffsetStored]:
    """The offsets a pending transaction leaves once its outcome is known: none if it aborted;
    if it committed, its offsets, but only for the source partitions nothing was stored for
    since the pending record (``pending_at``, and ``stored_at``: the log position of each
    partition's latest offset, by canonical partition). A later write is newer than the
    transaction, and must not be set back."""
    if not committed:
        return []
    return [
        OffsetStored(pending.connector, partition, offset)
        for partition, offset in pending.offsets
        if stored_at.get(canonical_partition(partition), -1) < pending_at
    ]
