"""The sink loop's commit and rebalance bookkeeping, as one immutable value (pure; no I/O).

``SinkRunner`` holds one :class:`SinkOffsets` and replaces it after each step:

    delivered -> (flush_due?) -> for_pre_commit -> task.pre_commit -> to_commit
              -> after_flush -> consumer.commit -> after_commit
    revoked partitions -> after_revocation; assigned partitions -> after_assignment
    context.offset -> with_requested -> (before the next fetch, or after open) rewound
    context.pause / context.resume -> with_paused / with_resumed

Positions are the *next* offset to consume per partition, of records the task already holds, so
nothing is ever committed beyond what was delivered. A partition is committed only while it is
assigned, and only when its offset changed since its last commit.

What the task asks of its consumption through its context is kept here too: offsets to seek to,
and the partitions it paused. ``changes`` counts those requests: a fetch that began before one
is stale, as a fetch that began before a rebalance is.
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from dataclasses import dataclass, field, replace

from headrace.runtime.sink.records import FlushPolicy
from headrace.sdk.records import TopicPartition

Offsets = Mapping[TopicPartition, int]


@dataclass(frozen=True)
class SinkOffsets:
    """Where the task is, what was committed, and what makes the next flush due.

    ``positions``: next offset per partition of what the task holds (``put`` returned).
    ``committed``: last offset committed per partition, by this task in this assignment (or
    sought to at the task's request, which needs no commit of its own).
    ``pending``: records fetched since the last flush (skipped ones included).
    ``last_flush``: monotonic seconds of the last flush. ``commit_requested``: the task asked
    for a flush with ``context.request_commit()``.
    ``requested``: offsets the task asked for with ``context.offset()``, not sought yet.
    ``paused``: partitions the task paused. ``changes``: how many of those requests it made.
    """

    last_flush: float
    positions: Offsets = field(default_factory=dict)
    committed: Offsets = field(default_factory=dict)
    pending: int = 0
    commit_requested: bool = False
    requested: Offsets = field(default_factory=dict)
    paused: frozenset[TopicPartition] = frozenset()
    changes: int = 0

    def delivered(self, positions: Offsets, fetched: int) -> SinkOffsets:
        """After ``put`` took a batch: its partitions' new positions, ``fetched`` more pending."""
        return replace(
            self, positions={**self.positions, **positions}, pending=self.pending + fetched
        )

    def with_commit_requested(self) -> SinkOffsets:
        return replace(self, commit_requested=True)

    def flush_due(self, policy: FlushPolicy, now: float) -> bool:
        """Whether to flush and commit now (``now`` in the monotonic seconds of ``last_flush``)."""
        since_ms = (now - self.last_flush) * 1000
        return policy.due(self.pending, since_ms, self.commit_requested)

    def for_pre_commit(
        self, assigned: Set[TopicPartition], only: Set[TopicPartition] | None = None
    ) -> dict[TopicPartition, int]:
        """The positions to hand ``pre_commit``: of assigned partitions (of ``only`` if given)."""
        return {
            tp: offset
            for tp, offset in self.positions.items()
            if tp in assigned and (only is None or tp in only)
        }

    def to_commit(
        self, committable: Offsets, assigned: Set[TopicPartition]
    ) -> dict[TopicPartition, int]:
        """What of ``pre_commit``'s answer to commit: assigned, and changed since its last commit.

        ``pre_commit`` is plugin code: whatever it returns for a partition this task no longer
        owns must not be committed over the new owner's progress.
        """
        return {
            tp: offset
            for tp, offset in committable.items()
            if tp in assigned and self.committed.get(tp) != offset
        }

    def after_flush(self, now: float) -> SinkOffsets:
        """Once ``pre_commit`` returned: nothing pending, no request, the timer restarted.

        Also the state after a commit that failed: the flush happened, only the commit did not.
        """
        return replace(self, pending=0, commit_requested=False, last_flush=now)

    def after_commit(self, offsets: Offsets) -> SinkOffsets:
        """Once the consumer group took ``offsets``."""
        return replace(self, committed={**self.committed, **offsets})

    def after_revocation(self, revoked: Set[TopicPartition]) -> SinkOffsets:
        """Forgets revoked partitions: a later assignment starts from the group's commit.

        Their pauses and requested offsets wait for the assignment that follows: a rebalance
        revokes every partition first, even those it gives back (``after_assignment``).
        """
        return replace(
            self,
            positions={tp: o for tp, o in self.positions.items() if tp not in revoked},
            committed={tp: o for tp, o in self.committed.items() if tp not in revoked},
        )

    def after_assignment(self, assigned: Set[TopicPartition]) -> SinkOffsets:
        """Keeps the pauses and requested offsets of the partitions still assigned (as Connect
        does: a rebalance that keeps a paused partition keeps it paused), forgets the rest."""
        return replace(
            self,
            paused=self.paused & assigned,
            requested={tp: o for tp, o in self.requested.items() if tp in assigned},
        )

    def with_requested(self, offsets: Offsets) -> SinkOffsets:
        """The task asked to go on from ``offsets`` (``context.offset``)."""
        return replace(self, requested={**self.requested, **offsets}, changes=self.changes + 1)

    def with_paused(self, partitions: Set[TopicPartition]) -> SinkOffsets:
        return replace(self, paused=self.paused | partitions, changes=self.changes + 1)

    def with_resumed(self, partitions: Set[TopicPartition]) -> SinkOffsets:
        return replace(self, paused=self.paused - partitions, changes=self.changes + 1)

    def rewound(
        self, assigned: Set[TopicPartition]
    ) -> tuple[dict[TopicPartition, int], SinkOffsets]:
        """The requested offsets of assigned partitions, to seek to, and the state once sought:
        the task stands there, and, as in Connect, a reset alone commits nothing (it counts as
        committed until records past it are delivered). Requests for partitions not assigned
        now wait for ``after_assignment``."""
        sought = {tp: o for tp, o in self.requested.items() if tp in assigned}
        return sought, replace(
            self,
            requested={tp: o for tp, o in self.requested.items() if tp not in assigned},
            positions={**self.positions, **sought},
            committed={**self.committed, **sought},
        )
