"""The group under random histories: joins, crashes, partitions, quick rejoins, clean leaves,
connector creates, updates, deletes and re-creates, and restarts of the coordinator itself.

Workers are simulated: each runs what it is told, stops what is revoked (with the deletion
marker when it is set), carries out clean-ups, and answers as the real worker does. A worker cut
off from the coordinator keeps running until its own session timeout, then stops everything, as
the real one fences itself. The coordinator is the real group over an in-memory assignments
log, rebuilt from that log when it restarts.

What must hold, whatever the history:
- no unit ever runs on two workers at once;
- a plugin sees ``stop(deleted=True)`` at most once per instance, and only for an instance that
  was really deleted (never on an update, a rebalance or a shutdown);
- once things settle: every wanted unit runs exactly once, connectors and tasks are balanced
  within one, and every deleted instance that ever ran was stopped as deleted exactly once.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass, field

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from headrace.coordinator import group as g
from headrace.coordinator.assignmentlog import AssignmentLog
from headrace.coordinator.configview import retired_by
from headrace.core.model.configstate import (
    ConfigEvent,
    ConfigState,
    ConnectorConfigured,
    ConnectorRemoved,
    TaskConfigured,
    TasksCommitted,
    apply,
)
from headrace.core.model.structs import AssignmentUpdate, Instance, WorkUnit
from headrace.core.storage.topiclog import MemoryTopic, memory_logs

SESSION = 10.0
WORKERS = ("w1", "w2", "w3")
NAMES = ("a", "b", "c", "d")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Worker:
    name: str
    alive: bool = False  # the process runs (and with it, its units)
    outbox: g.Outbox | None = None  # its stream to the coordinator, when it has one
    running: dict[WorkUnit, str] = field(default_factory=dict)
    seen: int = 0  # the newest generation it has acted on
    deleted: set[Instance] = field(default_factory=set)  # deletions it has carried out
    last_contact: float = 0.0


class GroupMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.clock = Clock()
        self.topic = MemoryTopic("assignments")
        self.grace = 0.0
        self.longest_grace = 0.0  # a grace period set earlier still runs for who departed then
        self.configs = ConfigState()
        self.retired: list[g.ConnectorRetired] = []
        self.workers = {w: Worker(w) for w in WORKERS}
        self.where: dict[WorkUnit, set[str]] = {}
        # Instances that ran and are owed stop(deleted=True) should their incarnation be
        # deleted: a task that a smaller task set removed is not.
        self.owed: set[Instance] = set()
        self.deletion_stops: Counter[Instance] = Counter()
        self.incarnations = 0
        self.group = self._coordinator(resume=False)

    def teardown(self) -> None:
        self.loop.run_until_complete(self.log.close())
        self.loop.close()

    # -- the coordinator ------------------------------------------------------------------

    def _coordinator(self, resume: bool) -> g.Group:
        self.log = AssignmentLog(memory_logs(self.topic))
        self.loop.run_until_complete(self.log.start())
        group = g.Group(
            self.log.append, session_timeout=SESSION, grace=self.grace, clock=self.clock
        )
        if resume and self.log.last is not None:
            group.resume(self.log.last)
        return group

    def _send(self, *events: g.Event) -> None:
        self.loop.run_until_complete(self.group.process(list(events)))
        self._deliver()

    def _deliver(self) -> None:
        """Hands every message the group sent to its worker, and the answers back, until
        nobody has anything more to say."""
        while True:
            answers: list[g.Event] = []
            for worker in self.workers.values():
                while worker.outbox is not None and not worker.outbox.empty():
                    update = worker.outbox.get_nowait()
                    if update is None:
                        worker.outbox = None  # the coordinator closed the stream
                        break
                    worker.last_contact = self.clock.now
                    answers += self._act(worker, update)
            if not answers:
                return
            self.loop.run_until_complete(self.group.process(answers))

    # -- a worker ---------------------------------------------------------------------------

    def _start(self, worker: Worker, unit: WorkUnit, incarnation: str) -> None:
        others = self.where.setdefault(unit, set()) - {worker.name}
        assert not others, f"{unit} starts on {worker.name} while it runs on {others}"
        self.where[unit].add(worker.name)
        worker.running[unit] = incarnation
        self.owed.add((unit, incarnation))

    def _stop(self, worker: Worker, unit: WorkUnit, deleted: bool) -> None:
        incarnation = worker.running.pop(unit)
        self.where[unit].discard(worker.name)
        if deleted:
            self._deletion(worker, (unit, incarnation))

    def _deletion(self, worker: Worker, instance: Instance) -> None:
        unit, incarnation = instance
        assert self.configs.incarnations.get(unit.connector) != incarnation, (
            f"{unit} of a live incarnation was stopped as deleted"
        )
        self.deletion_stops[instance] += 1
        worker.deleted.add(instance)

    def _act(self, worker: Worker, update: AssignmentUpdate) -> list[g.Event]:
        if update.generation < worker.seen:
            return []
        worker.seen = update.generation
        done: set[Instance] = set()
        if update.revoked:
            for r in update.revoked:
                if worker.running.get(r.unit) is not None:
                    if r.deleted:
                        done.add((r.unit, worker.running[r.unit]))
                    self._stop(worker, r.unit, r.deleted)
            out: list[g.Event] = [g.RevocationsDone(worker.name, update.generation)]
            return ([g.DeletionsDone(worker.name, frozenset(done))] if done else []) + out
        assigned = {u.unit: u.incarnation for u in update.units}
        for unit in list(worker.running):
            if assigned.get(unit) != worker.running[unit]:
                assert unit not in assigned, f"{unit}'s old incarnation stopped without a marker"
                self._stop(worker, unit, deleted=False)
        for unit, incarnation in assigned.items():
            if unit not in worker.running:
                self._start(worker, unit, incarnation)
        for cleanup in update.cleanups:
            if cleanup.instance not in worker.deleted:
                self._deletion(worker, cleanup.instance)
            done.add(cleanup.instance)
        return [g.DeletionsDone(worker.name, frozenset(done))] if done else []

    def _fence(self) -> None:
        """Workers cut off for their session timeout stop everything, as the real one does."""
        for worker in self.workers.values():
            cut_off = worker.outbox is None and worker.alive and worker.running
            if cut_off and self.clock.now - worker.last_contact >= SESSION:
                for unit in list(worker.running):
                    self._stop(worker, unit, deleted=False)

    # -- rules ------------------------------------------------------------------------------

    @rule(grace=st.sampled_from([0.0, 5.0, 30.0]))
    def set_grace(self, grace: float) -> None:
        self.grace = self.group.grace = grace
        self.longest_grace = max(self.longest_grace, grace)

    @rule(name=st.sampled_from(WORKERS))
    def join(self, name: str) -> None:
        worker = self.workers[name]
        if worker.outbox is not None:
            return
        if not worker.alive:
            worker.alive, worker.running, worker.deleted, worker.seen = True, {}, set(), 0
        worker.outbox = asyncio.Queue()
        worker.last_contact = self.clock.now
        self._send(g.Joined(name, dict(worker.running), worker.outbox))

    @rule(name=st.sampled_from(WORKERS))
    def crash(self, name: str) -> None:
        worker = self.workers[name]
        if not worker.alive:
            return
        for unit in worker.running:
            self.where[unit].discard(name)
        worker.alive, worker.running = False, {}
        self._close(worker)

    @rule(name=st.sampled_from(WORKERS))
    def cut_off(self, name: str) -> None:
        """The stream breaks, but the worker lives on with its units."""
        self._close(self.workers[name])

    @rule(name=st.sampled_from(WORKERS))
    def leave(self, name: str) -> None:
        worker = self.workers[name]
        if worker.outbox is None:
            return
        for unit in list(worker.running):
            self._stop(worker, unit, deleted=False)
        outbox, worker.outbox = worker.outbox, None
        self._send(g.Left(name, outbox, clean=True))

    def _close(self, worker: Worker) -> None:
        if worker.outbox is not None:
            outbox, worker.outbox = worker.outbox, None
            self._send(g.Left(worker.name, outbox))

    @rule(seconds=st.sampled_from([1.0, 4.0, 11.0, 40.0]))
    def time_passes(self, seconds: float) -> None:
        step = 1.0
        end = self.clock.now + seconds
        while self.clock.now < end:
            self.clock.now = min(end, self.clock.now + step)
            self._fence()
            beats = [g.Beat(w.name) for w in self.workers.values() if w.outbox is not None]
            for w in self.workers.values():
                if w.outbox is not None:
                    w.last_contact = self.clock.now
            self._send(*beats, g.Tick())

    def _configs(self, *events: ConfigEvent) -> None:
        group_events: list[g.Event] = []
        for event in events:
            retired = retired_by(self.configs, event)
            self.configs = apply(self.configs, event)
            self.retired += retired
            group_events += retired
            group_events.append(g.ConfigsChanged(self.configs))
        self.owed = {
            (u, i)
            for u, i in self.owed
            if u.is_connector
            or self.configs.incarnations.get(u.connector) != i
            or u.task < len(self.configs.tasks_of(u.connector))
        }
        self._send(*group_events)

    def _created(self, name: str, tasks: int, version: str = "1") -> list[ConfigEvent]:
        self.incarnations += 1
        return [
            ConnectorConfigured(name, {"v": version}, f"i{self.incarnations}"),
            *(TaskConfigured(name, i, {"t": str(i), "v": version}) for i in range(tasks)),
            TasksCommitted(name, tasks),
        ]

    @rule(name=st.sampled_from(NAMES), tasks=st.integers(0, 4))
    def create(self, name: str, tasks: int) -> None:
        if name not in self.configs.connectors:
            self._configs(*self._created(name, tasks))

    @rule(name=st.sampled_from(NAMES), tasks=st.integers(0, 4))
    def update(self, name: str, tasks: int) -> None:
        if name in self.configs.connectors:
            incarnation = self.configs.incarnations[name]
            self._configs(
                ConnectorConfigured(name, {"v": "updated"}, incarnation),
                *(TaskConfigured(name, i, {"t": str(i), "v": "updated"}) for i in range(tasks)),
                TasksCommitted(name, tasks),
            )

    @rule(name=st.sampled_from(NAMES))
    def delete(self, name: str) -> None:
        if name in self.configs.connectors:
            self._configs(ConnectorRemoved(name))

    @rule(name=st.sampled_from(NAMES), tasks=st.integers(0, 3))
    def delete_and_create_again(self, name: str, tasks: int) -> None:
        if name in self.configs.connectors:
            self._configs(ConnectorRemoved(name), *self._created(name, tasks, "again"))

    @rule()
    def restart_coordinator(self) -> None:
        for worker in self.workers.values():
            worker.outbox = None  # every stream breaks; the workers live on
        self.loop.run_until_complete(self.log.close())
        self.group = self._coordinator(resume=True)
        self._send(*self.retired, g.ConfigsChanged(self.configs))
        for worker in self.workers.values():
            if worker.alive and self.clock.now - worker.last_contact < SESSION:
                self.join(worker.name)

    # -- what must always hold ----------------------------------------------------------------

    @invariant()
    def no_deletion_twice(self) -> None:
        twice = [i for i, n in self.deletion_stops.items() if n > 1]
        assert not twice, f"stop(deleted=True) more than once: {twice}"

    @precondition(lambda self: any(w.outbox is not None for w in self.workers.values()))
    @rule()
    def settle(self) -> None:
        """Lets every grace period run out, then checks the group's final word."""
        self.time_passes(SESSION + self.longest_grace + 2.0)
        self.time_passes(1.0)  # the freed units are handed out, deletions carried out
        self.time_passes(1.0)  # and new incarnations that waited for them placed
        live = [w for w in self.workers.values() if w.outbox is not None]
        if not live:
            return
        wanted = {
            WorkUnit(n, t)
            for n in self.configs.connectors
            for t in [-1, *range(len(self.configs.tasks_of(n)))]
        }
        runs = Counter(u for w in live for u in w.running)
        assert set(runs) == wanted, f"running {sorted(runs)}, wanted {sorted(wanted)}"
        assert all(n == 1 for n in runs.values())
        stale = [
            (u, i)
            for w in live
            for u, i in w.running.items()
            if i != self.configs.incarnations[u.connector]
        ]
        assert not stale, f"an old incarnation still runs: {stale}"
        for connectors in (True, False):
            loads = [sum(1 for u in w.running if u.is_connector == connectors) for w in live]
            assert max(loads) - min(loads) <= 1, f"unbalanced: {loads}"
        deleted = {(u, i) for u, i in self.owed if self.configs.incarnations.get(u.connector) != i}
        missed = [i for i in deleted if self.deletion_stops[i] != 1]
        assert not missed, f"deleted instances never stopped as deleted: {missed}"


GroupMachine.TestCase.settings = settings(
    max_examples=150,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestGroupHistories = GroupMachine.TestCase
