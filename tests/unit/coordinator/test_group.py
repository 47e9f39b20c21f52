"""The coordinator's group as scenarios: joins, hand-overs, grace periods, deletions, restarts.

The group is driven event by event, without gRPC or Kafka; generations it would append are
collected in a list, and its clock is one the tests move by hand. The same group under random
histories is in ``test_group_properties``.
"""

from __future__ import annotations

import asyncio

import structlog

from headrace.coordinator import assignmentlog
from headrace.coordinator.group import (
    Beat,
    ConfigsChanged,
    ConnectorRetired,
    DeletionsDone,
    Event,
    Group,
    Joined,
    Left,
    Outbox,
    RevocationsDone,
    Tick,
)
from headrace.coordinator.leading import resume
from headrace.core.model.configstate import (
    ConfigState,
    ConnectorConfigured,
    ConnectorRemoved,
    TaskConfigured,
    TasksCommitted,
    apply,
    fold,
)
from headrace.core.model.structs import AssignmentUpdate, Cleanup, Instance, Revocation, WorkUnit
from headrace.core.storage.told import ToldRecords
from headrace.core.storage.topiclog import MemoryTopic, memory_logs

A, A0, A1, A2 = WorkUnit.of("a"), WorkUnit("a", 0), WorkUnit("a", 1), WorkUnit("a", 2)
B, B0 = WorkUnit.of("b"), WorkUnit("b", 0)


def configs(**task_counts: int) -> ConfigState:
    events: list = []
    for name, count in task_counts.items():
        config = {"connector.class": "X", "name": name}
        events.append(ConnectorConfigured(name, config, f"{name}-1"))
        events += [TaskConfigured(name, i, {"task": str(i)}) for i in range(count)]
        events.append(TasksCommitted(name, count))
    return fold(events)


def running(*units: WorkUnit) -> dict[WorkUnit, str]:
    return {u: f"{u.connector}-1" for u in units}


class Clock:
    """A monotonic clock that moves only when told."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class Harness:
    def __init__(
        self,
        session_timeout: float = 10.0,
        grace: float = 0.0,
        assignments: assignmentlog.AssignmentLog | None = None,
    ) -> None:
        """A group whose generations are collected in :attr:`log`, and appended to
        ``assignments`` too when one is given."""
        self.log: list[assignmentlog.Generation] = []

        async def append(generation: assignmentlog.Generation) -> None:
            self.log.append(generation)
            if assignments is not None:
                await assignments.append(generation)

        self.clock = Clock()
        self.group = Group(append, session_timeout=session_timeout, grace=grace, clock=self.clock)
        self.outboxes: dict[str, Outbox] = {}

    async def send(self, *events: Event) -> None:
        await self.group.process(list(events))

    async def submitted(self) -> None:
        """Processes what was submitted to the group's queue (as its ``run`` would)."""
        events = []
        while not self.group.queue.empty():
            events.append(self.group.queue.get_nowait())
        await self.send(*events)

    async def join(self, worker: str, units: dict[WorkUnit, str] | None = None) -> None:
        self.outboxes[worker] = asyncio.Queue()
        await self.send(Joined(worker, units or {}, self.outboxes[worker]))

    async def lose(self, worker: str) -> None:
        """The worker's stream breaks (a crash, or the network): nothing says it stopped."""
        await self.send(Left(worker, self.outboxes[worker]))

    async def tick(self, seconds: float, *beating: str) -> None:
        self.clock.advance(seconds)
        await self.send(*(Beat(w) for w in beating), Tick())

    def received(self, worker: str) -> list[AssignmentUpdate]:
        out = []
        while not self.outboxes[worker].empty():
            update = self.outboxes[worker].get_nowait()
            if update is not None:
                out.append(update)
        return out


def units(update: AssignmentUpdate) -> set[WorkUnit]:
    return {u.unit for u in update.units}


def revoked(update: AssignmentUpdate) -> set[Revocation]:
    return set(update.revoked)


async def test_two_workers_share_the_units_and_each_generation_is_logged_first() -> None:
    h = Harness()
    await h.send(ConfigsChanged(configs(a=3)))
    await h.join("w1")
    first = h.received("w1")
    await h.join("w2")
    assert units(first[0]) == {A, A0, A1, A2}
    # w2's arrival moves one of w1's tasks: revoked first, then handed over.
    revocation = h.received("w1")
    assert revocation and revoked(revocation[0])
    assert not any(r.deleted for r in revoked(revocation[0]))
    assert h.received("w2") == []  # nothing is handed out before w1 acknowledged
    await h.send(RevocationsDone("w1", h.group.generation))
    w1, w2 = units(h.received("w1")[-1]), units(h.received("w2")[-1])
    assert w1 | w2 == {A, A0, A1, A2} and not w1 & w2
    assert [g.number for g in h.log] == [1, 2]


async def test_nothing_new_is_sent_when_nothing_changed() -> None:
    h = Harness()
    state = configs(a=1)
    await h.send(ConfigsChanged(state))
    await h.join("w1")
    generations = len(h.log)
    await h.send(ConfigsChanged(state), Tick(), Beat("w1"))
    assert len(h.log) == generations
    assert len(h.received("w1")) == 1


async def test_a_changed_task_config_is_sent_again() -> None:
    h = Harness()
    state = configs(a=1)
    await h.send(ConfigsChanged(state))
    await h.join("w1")
    h.received("w1")
    state = apply(state, TaskConfigured("a", 0, {"task": "new"}))
    await h.send(ConfigsChanged(apply(state, TasksCommitted("a", 1))))
    (message,) = h.received("w1")
    assert [dict(u.task_config) for u in message.units if u.unit.task == 0] == [{"task": "new"}]


async def a_deleted_while_w1_runs_it(h: Harness) -> tuple[ConfigState, AssignmentUpdate]:
    """Connectors a and b on w1; a deleted: the configs before, and w1's revocation."""
    state = configs(a=1, b=1)
    await h.send(ConfigsChanged(state))
    await h.join("w1")
    h.received("w1")
    await h.send(ConfigsChanged(apply(state, ConnectorRemoved("a"))))
    (revocation,) = h.received("w1")
    return state, revocation


async def test_a_deletion_is_pending_in_the_log_until_the_plugin_acknowledged_it() -> None:
    h = Harness()
    _, revocation = await a_deleted_while_w1_runs_it(h)
    marked = {Revocation(A, True, "a-1"), Revocation(A0, True, "a-1")}
    assert revoked(revocation) == marked
    # recorded before it was sent
    assert {p.instance for p in h.log[-1].pending} == {(A, "a-1"), (A0, "a-1")}
    await h.send(
        DeletionsDone("w1", frozenset({(A, "a-1"), (A0, "a-1")})),
        RevocationsDone("w1", revocation.generation),
    )
    assert h.log[-1].pending == ()
    assert h.group.pending == {}


async def test_an_update_keeps_the_incarnation_and_never_sets_the_marker() -> None:
    h = Harness()
    state = configs(a=2)
    await h.send(ConfigsChanged(state))
    await h.join("w1")
    h.received("w1")
    updated = apply(state, ConnectorConfigured("a", {"connector.class": "X", "v": "2"}, "a-1"))
    updated = apply(apply(updated, TaskConfigured("a", 0, {"v": "2"})), TasksCommitted("a", 1))
    await h.send(ConfigsChanged(updated))
    sent = h.received("w1")
    assert not any(r.deleted for m in sent for r in m.revoked)
    assert {u.unit for u in sent[-1].units} == {A, A0}
    assert h.group.pending == {}


async def test_a_deletion_during_a_hand_over_still_gets_its_marker() -> None:
    h = Harness()
    state = configs(a=1, b=1)
    await h.send(ConfigsChanged(state))
    await h.join("w1")
    await h.join("w2")  # w1 must give up units: the hand-over waits for it
    h.received("w1"), h.received("w2")
    await h.send(ConfigsChanged(apply(state, ConnectorRemoved("a"))))
    await h.send(RevocationsDone("w1", h.group.generation))
    # The hand-over finishes with the configs it was planned with; then the deletion follows.
    sent = h.received("w1") + h.received("w2")
    assert all(dict(u.connector_config) for m in sent for u in m.units)
    deletions = {r.unit for m in sent for r in revoked(m) if r.deleted}
    assert deletions == {A, A0}


async def test_a_worker_that_rejoins_mid_hand_over_is_asked_again() -> None:
    h = Harness()
    await h.send(ConfigsChanged(configs(a=3)))
    await h.join("w1")
    h.received("w1")
    await h.join("w2")
    (revocation,) = h.received("w1")
    await h.join("w1", running(A, A0, A1, A2))  # its stream broke before it acknowledged
    (again,) = h.received("w1")
    assert revoked(again) == revoked(revocation)
    await h.send(RevocationsDone("w1", again.generation))
    w1, w2 = units(h.received("w1")[-1]), units(h.received("w2")[-1])
    assert w1 | w2 == {A, A0, A1, A2} and not w1 & w2


async def test_a_lost_worker_s_units_wait_out_its_session_and_grace_then_move() -> None:
    h = Harness(session_timeout=10.0, grace=20.0)
    await h.send(ConfigsChanged(configs(a=1)))
    await h.join("w1")
    await h.join("w2")
    await h.send(RevocationsDone("w1", h.group.generation))
    h.received("w1"), h.received("w2")
    w1_units = set(h.group.current["w1"])
    await h.lose("w1")
    await h.tick(29, "w2")  # 10 s of session and 20 s of grace: not yet
    assert not set(h.group.current["w2"]) & w1_units
    await h.tick(2, "w2")
    (message,) = h.received("w2")[-1:]
    assert units(message) == {A, A0} and not message.revoked


async def test_a_worker_back_within_its_grace_period_gets_its_own_units() -> None:
    h = Harness(session_timeout=10.0, grace=20.0)
    await h.send(ConfigsChanged(configs(a=3)))
    await h.join("w1")
    await h.join("w2")
    await h.send(RevocationsDone("w1", h.group.generation))
    h.received("w1"), h.received("w2")
    before = {m: set(u) for m, u in h.group.current.items()}
    await h.lose("w2")
    await h.tick(15, "w1")
    await h.join("w2")  # restarted: it runs nothing
    assert units(h.received("w2")[-1]) == before["w2"]
    assert all(not m.revoked for m in h.received("w1"))  # w1 stopped nothing


async def test_a_clean_leave_hands_the_units_out_at_once() -> None:
    h = Harness(grace=300.0)
    await h.send(ConfigsChanged(configs(a=1, b=1)))
    await h.join("w1")
    await h.join("w2")
    await h.send(RevocationsDone("w1", h.group.generation))
    assert units(h.received("w2")[-1])
    await h.send(Left("w2", h.outboxes["w2"], clean=True))
    assert units(h.received("w1")[-1]) == {A, A0, B, B0}


async def test_a_silent_worker_is_lost_after_its_session_timeout() -> None:
    h = Harness(session_timeout=10.0, grace=5.0)
    await h.send(ConfigsChanged(configs(a=1)))
    await h.join("w1")
    await h.join("w2")
    for _ in range(3):
        await h.tick(8, "w1", "w2")
    assert set(h.group.members) == {"w1", "w2"}
    await h.tick(11, "w1")  # w2 said nothing
    assert set(h.group.members) == {"w1"} and "w2" in h.group.departed


async def test_a_stale_stream_closing_does_not_remove_its_successor() -> None:
    h = Harness()
    await h.send(ConfigsChanged(configs(a=0)))
    await h.join("w1")
    old = h.outboxes["w1"]
    await h.join("w1")
    await h.send(Left("w1", old))
    assert "w1" in h.group.members


def last_generation() -> assignmentlog.Generation:
    return assignmentlog.Generation(7, members={"w1": running(A), "w2": running(A0)})


async def test_after_a_restart_units_wait_for_their_owners_to_rejoin() -> None:
    h = Harness()
    h.group.resume(last_generation())
    await h.send(ConfigsChanged(configs(a=1)))
    await h.join("w1", running(A))
    assert units(h.received("w1")[-1]) == {A}  # a-0 is kept for w2, which may still run it
    await h.join("w2", running(A0))
    assert units(h.received("w2")[-1]) == {A0}
    assert all(not m.revoked for m in h.received("w1"))


async def test_after_a_restart_an_owner_that_never_rejoins_is_given_up_in_time() -> None:
    h = Harness(session_timeout=10.0, grace=5.0)
    h.group.resume(last_generation())
    await h.send(ConfigsChanged(configs(a=1)))
    await h.join("w1", running(A))
    await h.tick(14, "w1")
    assert A0 not in h.group.current["w1"]
    await h.tick(2, "w1")
    assert units(h.received("w1")[-1]) == {A, A0}


async def test_a_hand_over_a_crash_interrupted_keeps_the_unit_for_both_members() -> None:
    h = Harness()
    # w1 was giving a-0 to w2 when the coordinator died: either may run it now.
    h.group.resume(
        assignmentlog.Generation(
            7,
            members={"w1": running(A), "w2": running(A0)},
            revocations={"w1": frozenset({Revocation(A0, incarnation="a-1")})},
        )
    )
    await h.send(ConfigsChanged(configs(a=1)))
    await h.join("w1", running(A))  # it had stopped a-0
    assert units(h.received("w1")[-1]) == {A}  # w2 may have started it
    await h.join("w2", running())  # it had not
    assert units(h.received("w2")[-1]) == {A0}


async def test_deleted_and_created_again_stops_the_old_incarnation_as_deleted_first() -> None:
    h = Harness()
    state = configs(a=1)
    await h.send(ConfigsChanged(state))
    await h.join("w1")
    h.received("w1")
    gone = apply(state, ConnectorRemoved("a"))
    again = apply(gone, ConnectorConfigured("a", {"connector.class": "X", "v": "2"}, "a-2"))
    # The snapshot alone shows no deletion: the incarnation does.
    await h.send(ConfigsChanged(again))
    (revocation,) = h.received("w1")
    assert revoked(revocation) == {Revocation(A, True, "a-1"), Revocation(A0, True, "a-1")}
    await h.send(RevocationsDone("w1", revocation.generation))
    assert h.received("w1")[-1].units == ()  # the new one waits for the old one's deletion
    await h.send(DeletionsDone("w1", frozenset({(A, "a-1"), (A0, "a-1")})))
    (assignment,) = h.received("w1")
    assert {(u.unit, u.incarnation) for u in assignment.units} == {(A, "a-2")}
    assert {u.connector_config["v"] for u in assignment.units} == {"2"}


async def test_a_deletion_reaches_its_owner_when_it_comes_back() -> None:
    h = Harness(session_timeout=10.0, grace=60.0)
    state = configs(a=1)
    await h.send(ConfigsChanged(state))
    await h.join("w1")
    await h.lose("w1")
    await h.send(ConfigsChanged(apply(state, ConnectorRemoved("a"))))
    assert {p.owner for p in h.group.pending.values()} == {"w1"}
    await h.tick(30)
    await h.join("w1")  # restarted: it runs nothing, but its plugin must still hear of it
    (message,) = h.received("w1")[-1:]
    assert {c.instance for c in message.cleanups} == {(A, "a-1"), (A0, "a-1")}


async def test_a_deletion_whose_owner_never_returns_is_cleaned_up_elsewhere_once() -> None:
    h = Harness(session_timeout=10.0, grace=5.0)
    state = configs(a=1, b=0)
    await h.send(ConfigsChanged(state))
    await h.join("w1")
    await h.join("w2")
    await h.send(RevocationsDone("w1", h.group.generation))
    h.received("w2")
    lost = set(h.group.current["w1"])
    await h.lose("w1")
    config = state.connectors["a"]
    await h.send(
        ConnectorRetired("a", "a-1", config, state.tasks_of("a")),
        ConfigsChanged(apply(state, ConnectorRemoved("a"))),
    )
    # what w2 ran of a is stopped there as deleted; w1's part waits for w1
    revocation = h.received("w2")[-1]
    own = frozenset((r.unit, r.incarnation) for r in revocation.revoked if r.deleted)
    await h.send(DeletionsDone("w2", own), RevocationsDone("w2", revocation.generation))
    await h.tick(16, "w2")
    (message,) = h.received("w2")[-1:]
    expected = [
        Cleanup(u, "a-1", config, state.tasks_of("a")[0] if u == A0 else {})
        for u in sorted(lost)
        if u.connector == "a"
    ]
    assert expected and list(message.cleanups) == expected
    await h.send(DeletionsDone("w2", frozenset(c.instance for c in expected)))
    assert h.group.pending == {}
    await h.tick(1, "w2")
    assert all(not m.cleanups for m in h.received("w2"))


async def test_a_deletion_acknowledged_mid_hand_over_stays_acknowledged_after_a_failover() -> None:
    """Seen in a nemesis run: a deletion acknowledged while a hand-over waited went unrecorded
    until the next generation; the coordinator lost its lease first, and the next one, resuming
    from the log, had the deletion told again by another worker."""
    h = Harness(session_timeout=10.0, grace=5.0)
    state, revocation = await a_deleted_while_w1_runs_it(h)
    # w1's plugin returned from stop(deleted=True); its acknowledgement of the revocation as a
    # whole has not arrived, so the hand-over still waits.
    await h.send(DeletionsDone("w1", frozenset({(A, "a-1"), (A0, "a-1")})))
    assert h.group.handover is not None
    assert h.log[-1].pending == ()  # recorded at once, in the generation it amends
    assert h.log[-1].number == revocation.generation

    # The coordinator fails over; w1 never comes back, w2 joins the new leader.
    after = Harness(session_timeout=10.0, grace=5.0)
    after.group.resume(h.log[-1])
    await after.send(ConfigsChanged(apply(state, ConnectorRemoved("a"))))
    await after.join("w2")
    await after.tick(16, "w2")
    assert after.group.pending == {}
    assert all(not m.cleanups for m in after.received("w2"))


async def test_a_unit_given_up_in_a_hand_over_that_was_abandoned_still_hears_of_its_deletion() -> (
    None
):
    """Found by the nemesis (seed 20261128, on 362a078): a worker stopped a connector as asked,
    the hand-over waited on another worker that was then lost, and the connector was deleted
    before the next generation; the unit was in no one's placement any more, and its deletion
    was never told."""
    h = Harness(session_timeout=10.0, grace=60.0)
    state = configs(a=5, b=1)
    await h.send(ConfigsChanged(state))
    await h.join("w1")
    await h.join("w2")
    await h.send(RevocationsDone("w1", h.group.generation))
    h.received("w1"), h.received("w2")
    await h.join("w3")  # both must give some up
    given_up = {r.unit for r in revoked(h.received("w1")[-1])}
    assert given_up and h.group.handover is not None and "w2" in h.group.handover.waiting
    await h.send(RevocationsDone("w1", h.group.generation))
    gone = apply(apply(state, ConnectorRemoved("a")), ConnectorRemoved("b"))
    await h.send(ConfigsChanged(gone))  # planned for once the hand-over is over
    await h.lose("w2")  # before it acknowledged: the hand-over is abandoned
    told = set(h.group.pending) | {
        c.instance for w in ("w1", "w3") for m in h.received(w) for c in m.cleanups
    }
    assert {(u, f"{u.connector}-1") for u in given_up} <= told


async def test_a_deletion_whose_acknowledgement_a_failover_lost_is_acknowledged_on_rejoin() -> None:
    """Found by the nemesis (seed 20261128, on dd6b7b6): w1 told a connector of its deletion and
    acknowledged it; the coordinator lost the broker before recording it and failed over. The
    next one, resuming from the log, still had it pending, and once w1 was killed it had
    another worker tell it again. w1's Join to the new coordinator says it told it."""
    h = Harness(session_timeout=10.0, grace=5.0)
    state, _ = await a_deleted_while_w1_runs_it(h)
    told = frozenset({(A, "a-1"), (A0, "a-1")})

    after = Harness(session_timeout=10.0, grace=5.0)
    after.group.resume(h.log[-1])  # nothing acknowledged in it
    await after.send(ConfigsChanged(apply(state, ConnectorRemoved("a"))))
    assert set(after.group.pending) == told
    after.outboxes["w1"] = asyncio.Queue()
    await after.send(Joined("w1", {}, after.outboxes["w1"], delivered=told))
    assert after.group.pending == {}
    assert after.log[-1].pending == ()
    await after.tick(16, "w1")
    assert all(not m.cleanups for m in after.received("w1"))


async def a_told_deletion_no_leader_heard(
    topic: MemoryTopic,
) -> tuple[ConfigState, ToldRecords, frozenset[Instance]]:
    """w1 ran connector a, deleted; its plugin heard of the deletion, and w1's acknowledgement
    went to a leader that was frozen and never heard it. The configs before, the recorder w1
    records told deletions with, and the deletions."""
    first = assignmentlog.AssignmentLog(memory_logs(topic))
    await first.start()
    h = Harness(session_timeout=10.0, grace=5.0, assignments=first)
    state, revocation = await a_deleted_while_w1_runs_it(h)
    heard = frozenset((r.unit, r.incarnation) for r in revocation.revoked if r.deleted)
    assert heard == {(A, "a-1"), (A0, "a-1")}
    recorder = ToldRecords(memory_logs(topic), "w1", structlog.get_logger())
    await recorder.start()
    return state, recorder, heard


async def a_standby_leads(topic: MemoryTopic) -> tuple[Harness, assignmentlog.AssignmentLog]:
    """The standby takes the lead: it replays the assignments topic and resumes from it."""
    replayed = assignmentlog.AssignmentLog(memory_logs(topic))
    await replayed.start()
    after = Harness(session_timeout=10.0, grace=5.0, assignments=replayed)
    resume(after.group, replayed)
    return after, replayed


async def test_a_deletion_told_while_no_leader_listened_is_not_told_again_elsewhere() -> None:
    """Found by the nemesis (seed 412, on e6c3cfe): w1 told a connector of its deletion while
    the leading coordinator was frozen, so its acknowledgement went unheard; w1 was killed, and
    its new process frozen past its grace period. The standby took the lead, resumed with the
    deletion pending and w1 gone, and had w2 tell it again. A worker now records each deletion
    it told on the assignments topic, and a leader that resumes reads it there."""
    topic = MemoryTopic("assignments", compacted=True)
    state, w1, heard = await a_told_deletion_no_leader_heard(topic)
    await w1.record(heard)  # then w1 is killed, and never heard from within its grace period
    after, _ = await a_standby_leads(topic)
    await after.send(ConfigsChanged(apply(state, ConnectorRemoved("a"))))
    await after.join("w2")
    await after.tick(16, "w2")
    assert after.group.pending == {}
    assert all(not m.cleanups for m in after.received("w2"))
    # The records are tombstoned with the generation that no longer owes the deletions.
    again = assignmentlog.AssignmentLog(memory_logs(topic))
    await again.start()
    assert again.last is not None and again.last.pending == ()
    assert len(again.history.told) == 0


async def test_a_deletion_recorded_as_told_after_the_leader_resumed_is_its_acknowledgement() -> (
    None
):
    """The same, with w1's record landing only once the standby leads (w1's link to the broker
    was slow): the leader reads it as w1's acknowledgement, before w1's grace period is over."""
    topic = MemoryTopic("assignments", compacted=True)
    state, w1, heard = await a_told_deletion_no_leader_heard(topic)
    after, replayed = await a_standby_leads(topic)
    await after.send(ConfigsChanged(apply(state, ConnectorRemoved("a"))))
    await after.join("w2")
    assert set(after.group.pending) == heard  # kept for w1, in its grace period
    await w1.record(heard)
    await after.submitted()
    assert after.group.pending == {}
    assert after.log[-1].pending == ()
    await after.tick(16, "w2")
    assert all(not m.cleanups for m in after.received("w2"))
    assert len(replayed.history.told) == 0  # tombstoned, and read back
