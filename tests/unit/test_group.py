"""The coordinator's group as scenarios: joins, hand-overs, deletions mid-rebalance, rejoins.

The group is driven event by event, without gRPC or Kafka; generations it would append are
collected in a list, and its clock is one the tests move by hand.
"""

from __future__ import annotations

import asyncio

from headrace.coordinator import assignmentlog
from headrace.coordinator.assignor import Plan
from headrace.coordinator.group import (
    Beat,
    ConfigsChanged,
    ConnectorDeleted,
    Event,
    Group,
    Joined,
    Left,
    Outbox,
    RevocationsDone,
    Tick,
)
from headrace.core.configstate import (
    ConfigState,
    ConnectorConfigured,
    ConnectorRemoved,
    TaskConfigured,
    TasksCommitted,
    apply,
    fold,
)
from headrace.core.structs import AssignmentUpdate, Revocation, WorkUnit

A, A0, A1, A2 = WorkUnit.of("a"), WorkUnit("a", 0), WorkUnit("a", 1), WorkUnit("a", 2)


def configs(**task_counts: int) -> ConfigState:
    events: list = []
    for name, count in task_counts.items():
        events.append(ConnectorConfigured(name, {"connector.class": "X", "name": name}))
        events += [TaskConfigured(name, i, {"task": str(i)}) for i in range(count)]
        events.append(TasksCommitted(name, count))
    return fold(events)


class Clock:
    """A monotonic clock that moves only when told."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class Harness:
    def __init__(self, session_timeout: float = 10.0) -> None:
        self.log: list[assignmentlog.Generation] = []

        async def append(generation: assignmentlog.Generation) -> None:
            self.log.append(generation)

        self.clock = Clock()
        self.group = Group(append, session_timeout=session_timeout, clock=self.clock)
        self.outboxes: dict[str, Outbox] = {}

    async def send(self, *events: Event) -> None:
        await self.group.process(list(events))

    async def join(self, worker: str, running: frozenset[WorkUnit] = frozenset()) -> None:
        self.outboxes[worker] = asyncio.Queue()
        await self.send(Joined(worker, running, self.outboxes[worker]))

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
    # w2's arrival moves half of w1's units: revoked first, then handed over.
    revocation = h.received("w1")
    assert revocation and revoked(revocation[0])
    assert not any(r.deleted for r in revoked(revocation[0]))
    assert h.received("w2") == []  # nothing is handed out before w1 acknowledged
    await h.send(RevocationsDone("w1", h.group.generation))
    w1, w2 = units(h.received("w1")[-1]), units(h.received("w2")[-1])
    assert len(w1) == len(w2) == 2 and not w1 & w2
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


async def test_deletion_revokes_with_the_marker() -> None:
    h = Harness()
    state = configs(a=1, b=1)
    await h.send(ConfigsChanged(state))
    await h.join("w1")
    h.received("w1")
    await h.send(ConfigsChanged(apply(state, ConnectorRemoved("a"))))
    (revocation,) = h.received("w1")
    assert revoked(revocation) == {Revocation(A, True), Revocation(A0, True)}
    assert h.log[-1].plan.revocations["w1"]  # the marker is in the log before it is sent


async def test_a_deletion_during_a_hand_over_still_gets_its_marker() -> None:
    h = Harness()
    state = configs(a=1, b=1)
    await h.send(ConfigsChanged(state))
    await h.join("w1")
    await h.join("w2")  # w1 must give up two units: the hand-over waits for it
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
    running = frozenset({A, A0, A1, A2})
    await h.join("w1", running)  # its stream broke before it acknowledged
    (again,) = h.received("w1")
    assert revoked(again) == revoked(revocation)
    await h.send(RevocationsDone("w1", again.generation))
    w1, w2 = units(h.received("w1")[-1]), units(h.received("w2")[-1])
    assert w1 | w2 == running and not w1 & w2


async def test_a_silent_worker_is_dropped_and_its_units_move_without_revocation() -> None:
    h = Harness(session_timeout=10.0)
    await h.send(ConfigsChanged(configs(a=1)))
    await h.join("w1")
    await h.send(RevocationsDone("w1", h.group.generation))
    h.clock.advance(60)  # w1 went quiet a minute ago
    h.outboxes["w2"] = asyncio.Queue()
    await h.send(Joined("w2", frozenset(), h.outboxes["w2"]), Tick())
    assert "w1" not in h.group.members
    (message,) = h.received("w2")
    assert units(message) == {A, A0} and not message.revoked


async def test_a_stale_stream_closing_does_not_remove_its_successor() -> None:
    h = Harness()
    await h.send(ConfigsChanged(configs(a=0)))
    await h.join("w1")
    old = h.outboxes["w1"]
    await h.join("w1")
    await h.send(Left("w1", old))
    assert "w1" in h.group.members


async def test_after_a_restart_units_wait_for_their_owners_to_rejoin() -> None:
    h = Harness()
    last = assignmentlog.Generation(
        7,
        Plan({"w1": frozenset({A}), "w2": frozenset({A0})}, {}),
    )
    h.group.resume(last)
    await h.send(ConfigsChanged(configs(a=1)))
    await h.join("w1", frozenset({A}))
    assert h.received("w1") == []  # w2 may still run a-0: hold until it is back
    await h.join("w2", frozenset({A0}))
    assert units(h.received("w1")[-1]) == {A}
    assert units(h.received("w2")[-1]) == {A0}
    assert h.group.generation == 8


async def test_a_connector_deleted_and_created_again_is_stopped_as_deleted_first() -> None:
    h = Harness()
    state = configs(a=1)
    await h.send(ConfigsChanged(state))
    await h.join("w1")
    h.received("w1")
    gone = apply(state, ConnectorRemoved("a"))
    recreated = apply(gone, ConnectorConfigured("a", {"connector.class": "X", "v": "2"}))
    # The tombstone and the re-create arrive together: the snapshot alone shows no deletion.
    await h.send(ConfigsChanged(gone), ConnectorDeleted("a"), ConfigsChanged(recreated))
    (revocation,) = h.received("w1")
    assert revoked(revocation) == {Revocation(A, True), Revocation(A0, True)}
    await h.send(RevocationsDone("w1", revocation.generation))
    # Then the new connector runs, and will write its own task configs.
    assignment = h.received("w1")[-1]
    assert units(assignment) == {A}
    assert {u.connector_config["v"] for u in assignment.units} == {"2"}


async def test_after_a_restart_an_owner_that_never_rejoins_is_given_up_after_the_timeout() -> None:
    h = Harness(session_timeout=10.0)
    h.group.resume(
        assignmentlog.Generation(7, Plan({"w1": frozenset({A}), "w2": frozenset({A0})}, {}))
    )
    await h.send(ConfigsChanged(configs(a=1)))
    await h.join("w1", frozenset({A}))
    h.clock.advance(5)
    await h.send(Beat("w1"), Tick())
    assert h.received("w1") == []  # w2 still has time to come back
    h.clock.advance(6)
    await h.send(Beat("w1"), Tick())
    assert units(h.received("w1")[-1]) == {A, A0}
    assert h.group.generation == 8


async def test_heartbeats_keep_a_member_past_the_session_timeout() -> None:
    h = Harness(session_timeout=10.0)
    await h.send(ConfigsChanged(configs(a=1)))
    await h.join("w1")
    for _ in range(3):
        h.clock.advance(8)
        await h.send(Beat("w1"), Tick())
    assert "w1" in h.group.members
    h.clock.advance(11)
    await h.send(Tick())
    assert "w1" not in h.group.members
