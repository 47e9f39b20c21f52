"""Connect's dates and times as milliseconds since the epoch, UTC, and back.

Connect holds Date, Time and Timestamp values alike as ``java.util.Date``, an instant in
milliseconds; headrace holds them as ``datetime.date``, naive ``datetime.time`` and aware
``datetime.datetime``. Transformations that convert between them (TimestampConverter, Cast,
InsertField) go through the millisecond count, which also gives Connect's precision: anything
below a millisecond is dropped, toward the past.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from headrace.sdk.errors import DataError

MILLIS_PER_DAY = 24 * 60 * 60 * 1000
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def is_temporal(value: Any) -> bool:
    """Whether ``value`` is a date, time or datetime (what Connect holds as java.util.Date)."""
    return isinstance(value, date | time)


def to_millis(value: date | time | datetime) -> int:
    """Milliseconds since the epoch: a date at midnight UTC, a time on 1970-01-01, a naive
    datetime read as UTC."""
    if isinstance(value, datetime):
        aware = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
        return (aware - EPOCH) // timedelta(milliseconds=1)
    if isinstance(value, date):
        return (value - EPOCH.date()).days * MILLIS_PER_DAY
    if value.tzinfo is not None and value.utcoffset():
        raise DataError("a time of day with a UTC offset is not a Connect Time")
    return ((value.hour * 60 + value.minute) * 60 + value.second) * 1000 + value.microsecond // 1000


def timestamp_from_millis(millis: int) -> datetime:
    """The UTC instant ``millis`` after the epoch; DataError outside Python's years 1 to 9999."""
    try:
        return EPOCH + timedelta(milliseconds=millis)
    except OverflowError:
        raise DataError(f"{millis} ms since the epoch is outside years 1 to 9999") from None


def date_from_millis(millis: int) -> date:
    """The UTC day the instant ``millis`` falls on."""
    return timestamp_from_millis(millis).date()


def time_from_millis(millis: int) -> time:
    """The UTC time of day of the instant ``millis``, whole milliseconds."""
    ms = millis % MILLIS_PER_DAY
    seconds, ms = divmod(ms, 1000)
    minutes, seconds = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    return time(hours, minutes, seconds, ms * 1000)
