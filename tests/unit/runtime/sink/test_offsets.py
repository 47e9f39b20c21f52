"""The sink loop's commit and rebalance bookkeeping, without a broker or a task."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from headrace.runtime.sink.offsets import SinkOffsets
from headrace.runtime.sink.records import FlushPolicy
from headrace.sdk import TopicPartition

A0, A1, B0 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)


def test_delivered_batches_move_positions_and_count_as_pending() -> None:
    offsets = SinkOffsets(last_flush=0.0).delivered({A0: 5}, 5).delivered({A0: 8, A1: 2}, 5)
    assert offsets.positions == {A0: 8, A1: 2}
    assert offsets.pending == 10


def test_a_flush_is_due_by_the_policy_the_request_or_the_timer() -> None:
    every_batch, rare = FlushPolicy(), FlushPolicy(max_records=100, interval_ms=1000)
    idle = SinkOffsets(last_flush=10.0)
    assert not idle.flush_due(every_batch, 10.0)
    assert idle.delivered({A0: 1}, 1).flush_due(every_batch, 10.0)
    assert not idle.delivered({A0: 1}, 1).flush_due(rare, 10.5)
    assert idle.delivered({A0: 1}, 1).flush_due(rare, 11.0)
    assert idle.delivered({A0: 100}, 100).flush_due(rare, 10.0)
    assert idle.with_commit_requested().flush_due(rare, 10.0)


def test_pre_commit_gets_the_positions_of_assigned_partitions_or_only_some() -> None:
    offsets = SinkOffsets(last_flush=0.0).delivered({A0: 3, A1: 4, B0: 5}, 3)
    assert offsets.for_pre_commit({A0, A1}) == {A0: 3, A1: 4}
    assert offsets.for_pre_commit({A0, A1}, only={A1, B0}) == {A1: 4}


def test_only_assigned_partitions_that_changed_since_their_last_commit_are_committed() -> None:
    offsets = SinkOffsets(last_flush=0.0).delivered({A0: 3, A1: 4}, 2).after_commit({A0: 3})
    assert offsets.to_commit({A0: 3, A1: 4, B0: 9}, {A0, A1}) == {A1: 4}


def test_a_flush_resets_pending_the_request_and_the_timer_whether_or_not_the_commit_works() -> None:
    offsets = SinkOffsets(last_flush=0.0).delivered({A0: 3}, 3).with_commit_requested()
    failed = offsets.after_flush(7.0)  # the commit failed: nothing recorded as committed
    assert (failed.pending, failed.commit_requested, failed.last_flush) == (0, False, 7.0)
    assert failed.committed == {} and failed.positions == {A0: 3}
    assert failed.after_commit({A0: 3}).committed == {A0: 3}


def test_revoked_partitions_are_forgotten() -> None:
    offsets = SinkOffsets(last_flush=0.0).delivered({A0: 3, A1: 4}, 2).after_commit({A0: 3, A1: 4})
    revoked = offsets.after_revocation({A0})
    assert revoked.positions == {A1: 4} and revoked.committed == {A1: 4}
    # Reassigned later, a partition is committed again even at the offset it had before.
    assert revoked.delivered({A0: 3}, 0).to_commit({A0: 3}, {A0, A1}) == {A0: 3}


def test_every_step_leaves_the_value_it_started_from_alone() -> None:
    offsets = SinkOffsets(last_flush=0.0).delivered({A0: 3}, 3)
    offsets.delivered({A0: 9}, 6).after_flush(1.0).after_commit({A0: 9}).after_revocation({A0})
    assert offsets == SinkOffsets(last_flush=0.0, positions={A0: 3}, pending=3)


PARTITIONS = st.sampled_from([A0, A1, B0])
OPERATIONS = st.lists(
    st.one_of(
        st.tuples(st.just("deliver"), st.dictionaries(PARTITIONS, st.integers(1, 5))),
        st.tuples(st.just("assign"), st.frozensets(PARTITIONS)),
        st.tuples(st.just("revoke"), st.frozensets(PARTITIONS)),
        st.tuples(st.just("commit"), st.dictionaries(PARTITIONS, st.integers(0, 30))),
    ),
    max_size=40,
)


@dataclass
class Loop:
    """The sink loop's use of SinkOffsets, with a consumer group and a task in memory.

    The task's ``pre_commit`` answers with the offsets it was given, plus anything ``extra``:
    plugin code may return offsets for partitions it was not asked about.
    """

    state: SinkOffsets = field(default_factory=lambda: SinkOffsets(last_flush=0.0))
    assigned: set[TopicPartition] = field(default_factory=set)
    fetched: dict[TopicPartition, int] = field(default_factory=dict)
    delivered: dict[TopicPartition, int] = field(default_factory=dict)
    commits: list[tuple[dict[TopicPartition, int], frozenset[TopicPartition]]] = field(
        default_factory=list
    )

    def deliver(self, counts: dict[TopicPartition, int]) -> None:
        # As SinkRunner._deliver: records of partitions revoked since the fetch are dropped.
        positions = {}
        for tp, count in counts.items():
            if tp in self.assigned:
                self.fetched[tp] = self.fetched.get(tp, 0) + count
                positions[tp] = self.fetched[tp]
        self.state = self.state.delivered(positions, sum(counts.values()))
        self.delivered.update(positions)

    def commit(
        self, extra: dict[TopicPartition, int], only: frozenset[TopicPartition] | None = None
    ) -> None:
        given_offsets = self.state.for_pre_commit(self.assigned, only)
        answer = {**{tp: o for tp, o in extra.items() if tp not in given_offsets}, **given_offsets}
        offsets = self.state.to_commit(answer, self.assigned)
        self.state = self.state.after_flush(1.0)
        if offsets:
            self.commits.append((offsets, frozenset(self.assigned)))
            self.state = self.state.after_commit(offsets)

    def revoke(self, revoked: frozenset[TopicPartition]) -> None:
        ours = revoked & self.assigned
        if ours:
            self.commit({}, only=ours)
            self.state = self.state.after_revocation(ours)
        self.assigned -= ours
        for tp in ours:
            self.fetched.pop(tp, None)  # the next owner starts from the group's commit
            self.delivered.pop(tp, None)

    def run(self, operations: list[tuple[str, Any]]) -> None:
        for name, argument in operations:
            if name == "deliver":
                self.deliver(argument)
            elif name == "assign":
                self.assigned |= argument
            elif name == "revoke":
                self.revoke(argument)
            else:
                # Offsets for partitions the task was not given: a confused or stale plugin.
                self.commit({tp: o for tp, o in argument.items() if tp not in self.assigned})


@given(OPERATIONS)
def test_only_assigned_partitions_are_committed_and_never_beyond_what_was_delivered(
    operations: list[tuple[str, Any]],
) -> None:
    loop = Loop()
    loop.run(operations)
    for offsets, assigned in loop.commits:
        assert set(offsets) <= assigned
    assert set(loop.state.positions) <= loop.assigned
    assert set(loop.state.committed) <= loop.assigned
    for tp, offset in loop.state.committed.items():
        assert offset <= loop.delivered[tp]


@given(OPERATIONS, st.frozensets(PARTITIONS), st.dictionaries(PARTITIONS, st.integers(0, 30)))
def test_whatever_pre_commit_answers_only_assigned_and_changed_offsets_are_committed(
    operations: list[tuple[str, Any]],
    assigned: frozenset[TopicPartition],
    answer: dict[TopicPartition, int],
) -> None:
    loop = Loop()
    loop.run(operations)
    offsets = loop.state.to_commit(answer, assigned)
    assert set(offsets) <= assigned
    for tp, offset in answer.items():
        changed = loop.state.committed.get(tp) != offset
        assert (tp in offsets) == (tp in assigned and changed)
        assert offsets.get(tp, offset) == offset
