"""Where committed batches live on disk, and what their names say (pure; no I/O).

A dataset root holds one folder per Kafka topic and partition, and in it one folder per committed
batch, named for the inclusive offset range it covers and for who wrote it::

    <root>/<topic>/<partition>/<first:020d>-<last:020d>-<writer>/part-*.parquet

``writer`` is a digest of the connector's name and the topic's Kafka id (:func:`writer_key`).

A batch is written under a temporary sibling whose name starts with ``_`` (so Spark, Hadoop and
pyarrow readers skip it), then renamed to its final name in one ``os.rename``. The folder name is
therefore the commit record: a batch exists exactly when its final folder does, and the highest
``last`` among one writer's folders is that writer's high watermark. Its offsets at or below it
are already in the dataset, which is what makes a retried batch harmless. Another connector
writing the same folder, or the same connector reading a topic deleted and created again (whose
offsets start at 0 again), is another writer, with a watermark of its own: neither ever makes
new rows look written.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Iterable
from dataclasses import dataclass

TEMP_PREFIX = "_tmp-"
_OFFSET_WIDTH = 20
_WRITER_CHARS = 16
_BATCH_NAME = re.compile(r"^(\d{20})-(\d{20})-([0-9a-f]{16})$")


@dataclass(frozen=True)
class OffsetRange:
    """An inclusive range of Kafka offsets."""

    first: int
    last: int


def writer_key(connector: str, topic_id: str) -> str:
    """Who wrote a batch, as its folder name says it: one connector reading one topic (by the
    topic's id, which a topic deleted and created again does not keep)."""
    digest = hashlib.sha256(f"{connector}\0{topic_id}".encode())
    return digest.hexdigest()[:_WRITER_CHARS]


def batch_dir_name(offsets: OffsetRange, writer: str) -> str:
    """The final folder name of a committed batch; zero-padded so names sort by offset."""
    return f"{offsets.first:0{_OFFSET_WIDTH}d}-{offsets.last:0{_OFFSET_WIDTH}d}-{writer}"


def parse_batch_dir(name: str) -> tuple[OffsetRange, str] | None:
    """The offsets a committed batch folder covers and its writer, or None for anything else
    (temp dirs, files)."""
    match = _BATCH_NAME.match(name)
    if match is None:
        return None
    first, last = int(match.group(1)), int(match.group(2))
    if first > last:
        return None
    return OffsetRange(first, last), match.group(3)


def high_watermark(names: Iterable[str], writer: str) -> int | None:
    """The highest offset ``writer`` committed among these folder names, None when there is
    none."""
    parsed = (p for p in map(parse_batch_dir, names) if p is not None)
    return max((offsets.last for offsets, by in parsed if by == writer), default=None)


def temp_dir_name() -> str:
    """A fresh name for an in-progress batch, hidden from readers by its ``_`` prefix."""
    return f"{TEMP_PREFIX}{uuid.uuid4().hex}"


def stale_temp_dirs(
    entries: Iterable[tuple[str, float]], now: float, max_age_s: float
) -> list[str]:
    """The temp dirs among (name, mtime) pairs old enough to be a crashed write's leftovers.

    Age, not ownership, decides: a second executor briefly alive during a restart may still be
    writing a young one.
    """
    return [
        name for name, mtime in entries if name.startswith(TEMP_PREFIX) and now - mtime > max_age_s
    ]


def range_to_write(requested: OffsetRange, watermark: int | None) -> OffsetRange | None:
    """The part of a batch's range not committed yet, None when all of it is.

    The final folder is named for this range, not for the rows present: a transform may have
    dropped records, and the name must still record that those offsets were handled.
    """
    first = requested.first if watermark is None else max(requested.first, watermark + 1)
    if first > requested.last:
        return None
    return OffsetRange(first, requested.last)
