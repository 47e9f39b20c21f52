"""Where a source task's transactions end (KIP-618's ``transaction.boundary``), as pure decisions.

- ``poll``: after every batch ``poll`` returns.
- ``interval``: after the first batch once the interval has passed since the transaction
  began; an idle task's open transaction commits once it is due, too.
- ``connector``: where the task asks, through its context's transaction context
  (:class:`Requests`): after a batch, or right after one of its records.

The source loop (``source.py``) asks :func:`plan` how to cut each polled batch into segments,
writes each segment into the open transaction, and ends the transaction as the segment says.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum

from headrace.core.model.connectorconfig import Boundary, Transactions
from headrace.sdk.records import SourceRecord


class End(Enum):
    """How a transaction ends after a segment."""

    COMMIT = "commit"
    ABORT = "abort"  # its records are discarded; their offsets are still committed


@dataclass
class Requests:
    """The task's transaction context (``transaction.boundary=connector``): what it asked for
    since the loop last looked. Records are told apart by identity, as the task returned them."""

    batch: End | None = None
    by_record: dict[int, End] = field(default_factory=dict)

    def commit_transaction(self, record: SourceRecord | None = None) -> None:
        self._ask(End.COMMIT, record)

    def abort_transaction(self, record: SourceRecord | None = None) -> None:
        self._ask(End.ABORT, record)

    def _ask(self, end: End, record: SourceRecord | None) -> None:
        if record is None:
            self.batch = end
        else:
            self.by_record[id(record)] = end

    def take(self) -> Requests:
        """What was asked, leaving nothing asked: a request applies to one batch only."""
        taken = Requests(self.batch, self.by_record)
        self.batch, self.by_record = None, {}
        return taken


@dataclass(frozen=True)
class Segment:
    """Records ``start`` to ``end`` (exclusive) of a polled batch, and how the transaction
    ends after them (None: it stays open)."""

    start: int
    end: int
    then: End | None


def plan(
    records: Sequence[object],
    settings: Transactions,
    asked: Requests,
    due: bool,
) -> list[Segment]:
    """How one polled batch (``records``, possibly empty) goes into transactions.

    ``due`` says whether an ``interval`` boundary has passed for the open transaction. For a
    ``connector`` boundary, a request naming the batch's last record wins over one for the
    whole batch, as in Kafka Connect; a request naming a record not in the batch is ignored.
    """
    n = len(records)
    if settings.boundary is Boundary.POLL:
        return [Segment(0, n, End.COMMIT)] if n else []
    if settings.boundary is Boundary.INTERVAL:
        return [Segment(0, n, End.COMMIT if due else None)]
    segments, start = [], 0
    for index, record in enumerate(records):
        end = asked.by_record.get(id(record))
        if end is not None:
            segments.append(Segment(start, index + 1, end))
            start = index + 1
    if start < n or not segments:
        segments.append(Segment(start, n, asked.batch))
    return segments


def is_due(opened_at: float | None, now: float, settings: Transactions) -> bool:
    """Whether an ``interval`` boundary has passed for a transaction opened at ``opened_at``
    (None: none is open, so the next batch opens one, due at once only for interval 0)."""
    if settings.boundary is not Boundary.INTERVAL:
        return False
    return now - (now if opened_at is None else opened_at) >= settings.interval_s
