"""Where committed batches live on disk, and what their names say (pure; no I/O).

A dataset root holds one folder per Kafka topic and partition, and in it one folder per committed
batch, named for the inclusive offset range it covers::

    <root>/<topic>/<partition>/<first:020d>-<last:020d>/part-*.parquet

A batch is written under a temporary sibling whose name starts with ``_`` (so Spark, Hadoop and
pyarrow readers skip it), then renamed to its final name in one ``os.rename``. The folder name is
therefore the commit record: a batch exists exactly when its final folder does, and the highest
``last`` among those folders is the partition's high watermark. Offsets at or below it are already
in the dataset, which is what makes a retried batch harmless.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable
from dataclasses import dataclass

TEMP_PREFIX = "_tmp-"
_OFFSET_WIDTH = 20
_BATCH_NAME = re.compile(r"^(\d{20})-(\d{20})$")


@dataclass(frozen=True)
class OffsetRange:
    """An inclusive range of Kafka offsets."""

    first: int
    last: int


def batch_dir_name(offsets: OffsetRange) -> str:
    """The final folder name of a committed batch; zero-padded so names sort by offset."""
    return f"{offsets.first:0{_OFFSET_WIDTH}d}-{offsets.last:0{_OFFSET_WIDTH}d}"


def parse_batch_dir(name: str) -> OffsetRange | None:
    """The offsets a committed batch folder covers, or None for anything else (temp dirs, files)."""
    match = _BATCH_NAME.match(name)
    if match is None:
        return None
    first, last = int(match.group(1)), int(match.group(2))
    if first > last:
        return None
    return OffsetRange(first, last)


def high_watermark(names: Iterable[str]) -> int | None:
    """The highest offset already committed among these folder names, None when there is none."""
    lasts = [r.last for r in map(parse_batch_dir, names) if r is not None]
    return max(lasts, default=None)


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
