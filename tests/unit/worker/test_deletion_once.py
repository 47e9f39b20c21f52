"""A deletion a worker delivered is not delivered again by that worker once restarted, even
when its acknowledgement was lost with it (found by the nemesis: a worker stopped right after
delivering; the coordinator handed the deletion back, and the plugin heard it twice).

The plugin processes are fakes that count the deletions they were told of."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from headrace.clients.taskconfigs import TaskConfigsFailed, TaskConfigsGone
from headrace.coordinator.assignmentlog import AssignmentLog
from headrace.core.model import wire
from headrace.core.model.plugins import PluginCatalog, PluginDescriptor
from headrace.core.model.structs import (
    AssignedUnit,
    AssignmentUpdate,
    Cleanup,
    DeletionHeard,
    Instance,
    Revocation,
    WorkUnit,
)
from headrace.core.settings import Settings
from headrace.core.storage.topiclog import MemoryTopic, memory_logs
from headrace.isolation.supervisor import plugin_key
from headrace.worker import worker as worker_module
from headrace.worker.worker import Worker, build_worker

REC = PluginDescriptor("rec.RecConnector", "1.0.0", "sink", "rec", "RecConnector", Path("/rec"))
CLEANUP = Cleanup(WorkUnit("gone", 0), "inc-1", {"connector.class": "rec.RecConnector"}, {})


class Told:
    def __init__(self) -> None:
        self.deletions: Counter[Instance] = Counter()
        self.stopped: list[tuple[WorkUnit, bool]] = []  # (unit, deleted) of each stop
        self.started: list[WorkUnit] = []
        self.on_task_start: Callable[[], None] = lambda: None  # what a task's start brings
        # When set, a stop with the deletion marker says the plugin heard it, as a plugin
        # process does, then waits for ``closed`` (its clients closing) before it answers.
        self.closing: asyncio.Event | None = None
        self.heard = asyncio.Event()
        self.gone: set[WorkUnit] = set()  # units its plugin process stopped by itself
        self.cleaned_by: list[str] = []  # the plugin process (its plugin key) of each clean-up

    def tellings(self, unit: WorkUnit) -> int:
        """How often the plugin was told of the unit's deletion, by a stop or a clean-up."""
        cleaned = sum(n for (u, _), n in self.deletions.items() if u == unit)
        return self.stopped.count((unit, True)) + cleaned


def fake_process(told: Told) -> Any:
    class Host:
        async def start_task(self, unit: WorkUnit, *_: object, **__: object) -> None:
            told.started.append(unit)
            told.on_task_start()

        async def start_connector(self, name: str, *_: object, **__: object) -> list[Any]:
            told.started.append(WorkUnit.of(name))
            return [{}]

        def __init__(self, process: Any) -> None:
            self.process = process

        async def stop(self, unit: WorkUnit, *, deleted: bool, **_: object) -> bool:
            if unit in told.gone:  # stopped already, without the marker: nothing to stop now
                return False
            told.stopped.append((unit, deleted))
            if deleted and told.closing is not None:
                self.process.on_event(self.process, DeletionHeard(unit))
                told.heard.set()
                await told.closing.wait()
            return True

        async def clean_up(self, cleanup: Cleanup, **_: object) -> None:
            told.deletions[cleanup.instance] += 1
            told.cleaned_by.append(self.process.key)

    class Process:
        def __init__(self, plugin: PluginDescriptor, *args: Any) -> None:
            self.key = plugin_key(plugin)
            self.plugin = plugin
            self.on_event = args[0]  # the launch's: on_event, on_exit, lease
            self.client: Host | None = None
            self.log_file = Path(f"{self.key}.log")

        async def start(self, **__: object) -> None:
            self.client = Host(self)

        async def stop(self, **_: object) -> None:
            self.client = None

    return Process


async def a_worker(
    worker_id: str,
    run_dir: Path,
    told: Told,
    monkeypatch: pytest.MonkeyPatch,
    assignments: MemoryTopic | None = None,
) -> tuple[Worker, list[Instance]]:
    """A worker whose acknowledgements are only recorded (none reaches a coordinator); the
    deletions it records as told go to ``assignments``."""
    settings = Settings(
        config_addr="127.0.0.1:1", coordinator_addr="127.0.0.1:1", plugin_spare="off"
    )  # no plugin process: none kept spare
    topics = {role: MemoryTopic(role) for role in ("status", "configs")}
    topics["assignments"] = assignments or MemoryTopic("assignments")
    worker = build_worker(
        settings,
        worker_id,
        PluginCatalog((REC,)),
        run_dir,
        run_dir,
        logs=lambda role: memory_logs(topics[role]),
        launch=fake_process(told),
    )
    await worker.open()
    acknowledged: list[Instance] = []
    monkeypatch.setattr(worker.membership, "deletions_done", acknowledged.extend)
    return worker, acknowledged


async def test_a_restarted_worker_acknowledges_a_deletion_it_delivered_without_the_plugin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    told = Told()
    handed = AssignmentUpdate(1, (), cleanups=(CLEANUP,))
    first, acknowledged = await a_worker("w1", tmp_path, told, monkeypatch)
    await first._apply(handed)
    assert told.deletions == {CLEANUP.instance: 1} and acknowledged == [CLEANUP.instance]
    # Its acknowledgement is lost with it; the coordinator hands the deletion back to it.
    again, acknowledged = await a_worker("w1", tmp_path, told, monkeypatch)
    await again._apply(AssignmentUpdate(2, (), cleanups=(CLEANUP,)))
    assert told.deletions == {CLEANUP.instance: 1}  # the plugin heard it once
    assert acknowledged == [CLEANUP.instance]  # and the coordinator hears it is done


async def test_a_deletion_told_here_is_recorded_where_the_next_leader_reads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    told, assignments = Told(), MemoryTopic("assignments")
    worker, _ = await a_worker("w1", tmp_path, told, monkeypatch, assignments)
    await worker._apply(AssignmentUpdate(1, (), cleanups=(CLEANUP,)))
    replayed = AssignmentLog(memory_logs(assignments))
    await replayed.start()
    assert [(t.instance, t.worker_id) for t in replayed.history.told.values()] == [
        (CLEANUP.instance, "w1")
    ]


async def test_a_deletion_told_here_and_handed_back_is_acknowledged_before_any_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by the nemesis (seed 20261128, on dd6b7b6): a worker was handed back a deletion it
    had told (its acknowledgement lost with a coordinator that failed over) with seven units to
    start; it acknowledged it only after starting them, was killed 4 s into the starts, and
    another worker told it again."""
    told = Told()
    first, _ = await a_worker("w1", tmp_path, told, monkeypatch)
    await first._apply(AssignmentUpdate(1, (), cleanups=(CLEANUP,)))
    again, acknowledged = await a_worker("w1", tmp_path, told, monkeypatch)
    acknowledged_at_start: list[list[Instance]] = []
    told.on_task_start = lambda: acknowledged_at_start.append(list(acknowledged))
    task = AssignedUnit(WorkUnit("live", 0), dict(CLEANUP.connector_config), {})
    await again._apply(AssignmentUpdate(2, (task,), cleanups=(CLEANUP,)))
    assert acknowledged_at_start == [[CLEANUP.instance]]
    assert told.deletions == {CLEANUP.instance: 1} and acknowledged == [CLEANUP.instance]


def test_a_worker_s_join_acknowledges_again_the_deletions_it_told_last(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the coordinator that took over from one that lost them hears of them."""
    told = Told()
    worker, _ = asyncio.run(a_worker("w1", tmp_path, told, monkeypatch))
    instances = [(WorkUnit(f"c{n}", 0), "inc") for n in range(worker_module.REACKNOWLEDGED + 5)]
    for instance in instances:
        worker._deletions.remember(instance)
    join = worker.membership.join_message()
    said = [wire.instance_from_pb(u) for u in join.delivered]
    assert said == instances[-worker_module.REACKNOWLEDGED :]


async def test_a_worker_killed_while_a_told_task_closes_its_clients_does_not_tell_it_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by the nemesis (seed 20261128, on 1e87552): a deleted task's plugin returned from
    stop(deleted=True); its plugin process then spent seconds closing the task's consumer
    before it answered the stop, and the worker, killed meanwhile, had recorded nothing. The
    coordinator handed the deletion back to it once it returned, and the plugin, started
    again only to hear of it, heard it twice."""
    told = Told()
    first, acknowledged = await a_worker("w1", tmp_path, told, monkeypatch)
    unit = WorkUnit("gone", 0)
    task = AssignedUnit(unit, dict(CLEANUP.connector_config), {})
    await first._apply(AssignmentUpdate(1, (task,)))
    told.closing = asyncio.Event()  # the task's clients never finish closing
    deletion = AssignmentUpdate(2, (), revoked=(Revocation(unit, deleted=True),))
    applying = asyncio.create_task(first._apply(deletion))
    await asyncio.wait_for(told.heard.wait(), 10)
    assert acknowledged == [(unit, task.incarnation)]  # told the coordinator at once
    applying.cancel()  # the worker is killed before the stop answers
    with contextlib.suppress(asyncio.CancelledError):
        await applying
    # Its acknowledgement is lost with it; back, it is handed the deletion as a clean-up.
    again, acknowledged = await a_worker("w1", tmp_path, told, monkeypatch)
    cleanup = Cleanup(unit, task.incarnation, task.connector_config, task.task_config)
    await again._apply(AssignmentUpdate(3, (), cleanups=(cleanup,)))
    assert told.tellings(unit) == 1  # the plugin heard it once
    assert acknowledged == [(unit, task.incarnation)]


async def test_a_plugin_process_s_word_counts_only_for_the_deletion_it_was_asked_to_tell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plugin process that says a deletion was heard that nobody asked it to tell (another
    connector's, or one of a unit it never ran) changes nothing: that deletion is still told."""
    told = Told()
    worker, acknowledged = await a_worker("w1", tmp_path, told, monkeypatch)
    task = AssignedUnit(WorkUnit("live", 0), dict(CLEANUP.connector_config), {})
    await worker._apply(AssignmentUpdate(1, (task,)))
    [process] = worker.processes.of_each()
    process.on_event(process, DeletionHeard(CLEANUP.unit))  # type: ignore[attr-defined]
    assert acknowledged == []
    await worker._apply(AssignmentUpdate(2, (task,), cleanups=(CLEANUP,)))
    assert told.deletions == {CLEANUP.instance: 1} and acknowledged == [CLEANUP.instance]


async def test_a_deletion_stop_that_found_nothing_to_stop_is_told_as_a_clean_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by the nemesis (seed 404, on 4fd5400): a worker's stops with the deletion marker
    reached a plugin process that had just stopped every unit without it, as its lease ran
    out; the host answered the stops of units it no longer had as done, and the worker took
    three deletions as told that no plugin had heard."""
    told = Told()
    worker, acknowledged = await a_worker("w1", tmp_path, told, monkeypatch)
    unit = WorkUnit("gone", 0)
    task = AssignedUnit(unit, dict(CLEANUP.connector_config), {})
    await worker._apply(AssignmentUpdate(1, (task,)))
    told.gone.add(unit)  # its process stopped it, without the marker
    deletion = (Revocation(unit, deleted=True, incarnation=task.incarnation),)
    await worker._apply(AssignmentUpdate(2, (), revoked=deletion))
    assert told.deletions == {(unit, task.incarnation): 1}  # told, in a clean-up
    assert acknowledged == [(unit, task.incarnation)]


async def test_another_worker_id_keeps_its_own_deliveries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    told = Told()
    first, _ = await a_worker("w1", tmp_path, told, monkeypatch)
    await first._apply(AssignmentUpdate(1, (), cleanups=(CLEANUP,)))
    other, acknowledged = await a_worker("w2", tmp_path, told, monkeypatch)
    other_cleanup = Cleanup(WorkUnit("other", 0), "inc-9", CLEANUP.connector_config, {})
    await other._apply(AssignmentUpdate(1, (), cleanups=(other_cleanup,)))
    assert told.deletions == {CLEANUP.instance: 1, other_cleanup.instance: 1}
    assert acknowledged == [other_cleanup.instance]


async def test_a_worker_cut_off_while_applying_an_assignment_delivers_none_of_its_deletions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by the nemesis: a worker slow to start its units was cut off meanwhile, and
    minutes later delivered a deletion that the coordinator had given another worker since."""
    told = Told()
    worker, acknowledged = await a_worker("w1", tmp_path, told, monkeypatch)
    told.on_task_start = worker._on_fence  # cut off while it starts a task
    task = AssignedUnit(WorkUnit("live", 0), {"connector.class": "rec.RecConnector"}, {})
    await worker._apply(AssignmentUpdate(1, (task,), cleanups=(CLEANUP,)))
    assert told.deletions == {} and acknowledged == []
    told.on_task_start = lambda: None
    await worker._apply(AssignmentUpdate(2, (), cleanups=(CLEANUP,)))  # handed back after
    assert told.deletions == {CLEANUP.instance: 1} and acknowledged == [CLEANUP.instance]


async def test_a_stale_deletion_read_after_a_freeze_is_left_to_the_coordinator(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by the nemesis: a worker frozen past its session read, once thawed, a revocation
    with the deletion marker sent before it froze, and told its plugin, while the coordinator
    had handed the deletion to another worker, which told it too."""
    told = Told()
    worker, acknowledged = await a_worker("w1", tmp_path, told, monkeypatch)
    unit = WorkUnit("gone", 0)
    task = AssignedUnit(unit, dict(CLEANUP.connector_config), {})
    await worker._apply(AssignmentUpdate(1, (task,)))
    assert unit in worker.running
    membership = worker.membership
    membership.last_contact -= membership.session_timeout  # frozen that long since
    await worker._apply(AssignmentUpdate(2, (), revoked=(Revocation(unit, deleted=True),)))
    assert unit not in worker.running  # stopped all the same
    assert told.deletions == {} and told.stopped == [(unit, False)] and acknowledged == []


async def test_a_unit_whose_process_died_hears_of_its_deletion_in_a_process_of_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by the nemesis: a task's plugin process was killed, another process of the same
    plugin was started for other units, and the task's deletion was sent to that one, which
    had never run it, and counted as delivered: the plugin never heard of it."""
    told = Told()
    worker, acknowledged = await a_worker("w1", tmp_path, told, monkeypatch)
    config = dict(CLEANUP.connector_config)
    gone, other = WorkUnit("gone", 0), WorkUnit("other", 0)
    await worker._apply(AssignmentUpdate(1, (AssignedUnit(gone, config, {}),)))
    [first] = worker.processes.of_each()
    await worker._exited(first, -9, "")  # killed: its units FAILED
    both = (AssignedUnit(gone, config, {}), AssignedUnit(other, config, {}))
    await worker._apply(AssignmentUpdate(2, both))  # another process, for the other unit
    assert worker.processes.of_each() and first not in worker.processes.of_each()
    revoked = (Revocation(gone, deleted=True),)
    await worker._apply(AssignmentUpdate(3, (both[1],), revoked=revoked))
    assert (gone, True) not in told.stopped  # not to a process that never ran it
    instance = (gone, both[0].incarnation)
    assert told.deletions == {instance: 1} and acknowledged == [instance]


async def test_a_clean_up_is_told_by_the_version_that_ran_the_unit_not_one_installed_since(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A unit ran on rec 1.0.0 with a config that asks for the latest; 2.0.0 was installed
    since, and the unit's process died. Its deletion is told by 1.0.0, whose plugin ran it:
    2.0.0 never heard of the unit (and it was resolved at the clean-up's time before)."""
    told = Told()
    worker, acknowledged = await a_worker("w1", tmp_path, told, monkeypatch)
    gone = WorkUnit("gone", 0)
    await worker._apply(
        AssignmentUpdate(1, (AssignedUnit(gone, dict(CLEANUP.connector_config), {}),))
    )
    [first] = worker.processes.of_each()
    await worker._exited(first, -9, "")  # killed: the unit FAILED, no process runs it
    newer = dataclasses.replace(REC, version="2.0.0", folder=Path("/rec2"))
    worker._catalog_changed(PluginCatalog((REC, newer)))
    await worker._apply(AssignmentUpdate(2, (), revoked=(Revocation(gone, deleted=True),)))
    assert told.cleaned_by == [first.key] and first.key.endswith("-1.0.0")
    assert len(acknowledged) == 1


async def test_a_worker_cut_off_claims_none_of_its_units_when_it_rejoins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by the nemesis: a worker cut off while busy rejoined claiming the units it had
    given up; one of them had been deleted meanwhile, and delivered its deletion elsewhere, so
    the coordinator had this worker deliver it a second time."""
    told = Told()
    worker, _ = await a_worker("w1", tmp_path, told, monkeypatch)
    task = AssignedUnit(WorkUnit("live", 0), dict(CLEANUP.connector_config), {})
    await worker._apply(AssignmentUpdate(1, (task,)))
    assert worker.membership._running() == {task.unit: task.incarnation}
    worker._on_fence()
    assert worker.membership._running() == {}  # what its next Join says it runs


async def test_an_assignment_read_from_an_ended_stream_is_not_acted_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by the nemesis (seed 101): a worker frozen with an old leader's assignments unread
    in its stream joined the new leader once thawed, then acted on them, and started a task the
    new leader had given another worker meanwhile: one task on two workers for 42 s."""
    told = Told()
    worker, _ = await a_worker("w1", tmp_path, told, monkeypatch)
    task = AssignedUnit(WorkUnit("live", 0), dict(CLEANUP.connector_config), {})
    stale = worker_module.Assigned(AssignmentUpdate(7, (task,)), worker.membership.session)
    worker.membership.session += 1  # welcomed by another coordinator since
    await worker._handle(stale)
    assert worker.running == {} and told.started == []
    await worker._handle(
        worker_module.Assigned(AssignmentUpdate(8, (task,)), worker.membership.session)
    )
    assert told.started == [task.unit]


async def test_a_worker_thawed_after_its_session_fences_before_it_rejoins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by the nemesis (seed 303): a worker frozen for minutes rejoined the moment it was
    thawed, before its watchdog had fenced it, claiming its units; one had been deleted and its
    deletion told elsewhere, and the coordinator had this worker tell it again."""
    told = Told()
    worker, _ = await a_worker("w1", tmp_path, told, monkeypatch)
    task = AssignedUnit(WorkUnit("live", 0), dict(CLEANUP.connector_config), {})
    await worker._apply(AssignmentUpdate(1, (task,)))
    membership = worker.membership
    assert list(membership.join_message().running) != []
    membership.last_contact -= 10 * membership.session_timeout  # frozen since
    assert list(membership.join_message().running) == []  # fenced first
    assert worker.running == {}


async def test_an_assignment_being_applied_when_the_worker_rejoins_starts_nothing_more(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by the nemesis (seed 303): a worker frozen for minutes in the middle of applying an
    assignment rejoined once thawed, then went on applying it, and started units deleted and
    told so elsewhere meanwhile."""
    told = Told()
    worker, _ = await a_worker("w1", tmp_path, told, monkeypatch)

    def rejoined() -> None:
        worker.membership.session += 1

    told.on_task_start = rejoined  # thawed, and welcomed by a coordinator, while it starts one
    config = dict(CLEANUP.connector_config)
    tasks = tuple(AssignedUnit(WorkUnit("live", n), config, {}) for n in range(3))
    await worker._apply(AssignmentUpdate(1, tasks))
    assert len(told.started) == 1  # the one under way; none after it
    told.on_task_start = lambda: None
    await worker._apply(AssignmentUpdate(2, tasks))  # what the coordinator sends it now
    assert set(told.started) == set(worker.running) == {t.unit for t in tasks}


async def test_a_connector_whose_task_configs_are_refused_is_stopped_in_its_plugin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by the nemesis (seed 20261128, on 362a078): a connector started while the config
    service refused its task configs failed on the worker and was never stopped in the plugin,
    which ran it on, unseen: one unit in two processes."""
    told = Told()
    worker, _ = await a_worker("w1", tmp_path, told, monkeypatch)

    async def refused(*_: object) -> None:
        raise TaskConfigsFailed("the config service refused the task configs (UNAVAILABLE)")

    monkeypatch.setattr(worker._task_configs, "put", refused)
    connector = AssignedUnit(WorkUnit.of("live"), dict(CLEANUP.connector_config), {})
    await worker._apply(AssignmentUpdate(1, (connector,)))
    assert told.started == [connector.unit]
    assert told.stopped == [(connector.unit, False)]


async def test_a_connector_deleted_as_it_starts_is_stopped_once_and_as_deleted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by the nemesis (seed 20261128, on 1e87552): a worker slow to start its plugin
    processes started a connector deleted since its assignment was made; the config service
    refused its task configs (NOT_FOUND), and the worker stopped it without the deletion
    marker, though the revocation with the marker was already on its way: the plugin heard
    that it was stopped, and then, started again, that it was deleted."""
    told = Told()
    worker, acknowledged = await a_worker("w1", tmp_path, told, monkeypatch)

    async def gone(*_: object) -> None:
        raise TaskConfigsGone("connector 'gone' not found")

    monkeypatch.setattr(worker._task_configs, "put", gone)
    connector = AssignedUnit(WorkUnit.of("gone"), dict(CLEANUP.connector_config), {})
    await worker._apply(AssignmentUpdate(1, (connector,)))
    assert told.started == [connector.unit] and told.stopped == []
    deletion = (Revocation(connector.unit, deleted=True, incarnation=connector.incarnation),)
    await worker._apply(AssignmentUpdate(2, (), revoked=deletion))
    assert told.stopped == [(connector.unit, True)] and told.deletions == {}
    assert acknowledged == [(connector.unit, connector.incarnation)]


async def test_an_event_that_fails_is_logged_and_the_worker_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by the nemesis (seed 313, on 65d42b0): the worker's log of a failed event raised
    TypeError itself (a keyword named ``event``, which structlog takes as the event's name), so
    the first event that failed ended the worker, 37 s after it had delivered a deletion it had
    not acknowledged yet; the coordinator then had another worker tell it a second time."""
    told = Told()
    worker, _ = await a_worker("w1", tmp_path, told, monkeypatch)
    handled: list[object] = []

    async def nothing(*_: object, **__: object) -> None:
        return None

    async def handle(event: object) -> None:
        handled.append(event)
        if len(handled) == 1:
            raise RuntimeError("the first event fails")

    monkeypatch.setattr(worker._status, "start", nothing)
    for name in ("membership", "_task_configs"):  # each starts a task of its own, at once
        monkeypatch.setattr(getattr(worker, name), "start", lambda: None)
    monkeypatch.setattr(worker, "_handle", handle)
    monkeypatch.setattr(worker, "_stop_everything", nothing)
    for event in ("first", "second", None):
        worker._queue.put_nowait(event)  # type: ignore[arg-type]
    await worker.run()
    assert handled == ["first", "second"]
