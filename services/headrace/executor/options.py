"""What a write request may ask of a job beyond its rows: the options of each format (pure).

| option | formats | meaning |
| --- | --- | --- |
| ``partition.by`` | all | columns, by commas, whose values become ``column=value`` folders |
| ``merge.schema`` | delta | ``true`` lets a batch add columns to the table (schema evolution) |

An option a format does not take, or a value it cannot use, is refused, never ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

PARTITION_BY = "partition.by"
MERGE_SCHEMA = "merge.schema"

FILE_FORMATS = ("parquet", "json", "csv")
"""Formats written as one folder of files per batch (see ``layout.py``)."""
DELTA = "delta"
FORMATS = (*FILE_FORMATS, DELTA)

_TAKES: dict[str, frozenset[str]] = {
    **{f: frozenset({PARTITION_BY}) for f in FILE_FORMATS},
    DELTA: frozenset({PARTITION_BY, MERGE_SCHEMA}),
}
_BOOLEANS = {"true": True, "false": False}


class OptionError(ValueError):
    """An option the format does not take, or a value it cannot use; ``key`` names it."""

    def __init__(self, key: str, reason: str) -> None:
        super().__init__(f"{key}: {reason}")
        self.key = key
        self.reason = reason


@dataclass(frozen=True)
class WriteOptions:
    """A job's options, checked."""

    partition_by: tuple[str, ...] = ()
    merge_schema: bool = False


def parse_options(fmt: str, raw: Mapping[str, str]) -> WriteOptions:
    """The options of a write in ``fmt`` (one of :data:`FORMATS`), or OptionError."""
    takes = _TAKES[fmt]
    for key in sorted(raw):
        if key not in takes:
            allowed = ", ".join(sorted(takes))
            raise OptionError(key, f"not an option of {fmt} (it takes {allowed})")
    partition_by = _columns(raw.get(PARTITION_BY, ""))
    merge = raw.get(MERGE_SCHEMA, "false").strip().lower()
    if merge not in _BOOLEANS:
        raise OptionError(MERGE_SCHEMA, f"{raw[MERGE_SCHEMA]!r} is not true or false")
    return WriteOptions(partition_by=partition_by, merge_schema=_BOOLEANS[merge])


def _columns(raw: str) -> tuple[str, ...]:
    if not raw.strip():
        return ()
    names = [name.strip() for name in raw.split(",")]
    if any(not name for name in names):
        raise OptionError(PARTITION_BY, f"{raw!r} names an empty column")
    doubled = sorted({n for n in names if names.count(n) > 1})
    if doubled:
        raise OptionError(PARTITION_BY, f"{', '.join(doubled)} named twice")
    return tuple(names)


def check_columns(options: WriteOptions, columns: list[str]) -> None:
    """Checks that the partition columns are among the batch's, and leave some to write."""
    missing = [c for c in options.partition_by if c not in columns]
    if missing:
        raise OptionError(PARTITION_BY, f"no column {', '.join(missing)} in the batch")
    if options.partition_by and len(options.partition_by) == len(columns):
        raise OptionError(PARTITION_BY, "names every column; files would hold none")
