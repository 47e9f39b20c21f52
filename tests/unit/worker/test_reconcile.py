"""The worker's reconciliation: which units to stop (and how) and which to start."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from headrace.core.model.structs import AssignedUnit, Revocation, Target, WorkUnit
from headrace.worker.reconcile import reconcile

A, A0, A1, B = WorkUnit.of("a"), WorkUnit("a", 0), WorkUnit("a", 1), WorkUnit.of("b")


def unit(
    u: WorkUnit,
    task_config: Mapping[str, str] | None = None,
    target: Target = Target.RUNNING,
    restart: int = 0,
) -> AssignedUnit:
    if task_config is None:
        task_config = {} if u.is_connector else {"t": str(u.task)}
    return AssignedUnit(u, {"connector.class": "X"}, task_config, "i1", target, restart)


def test_revocations_stop_tasks_before_connectors_and_are_acknowledged() -> None:
    b0 = WorkUnit("b", 0)
    running = {u: unit(u) for u in (A, A0, A1, b0)}
    revoked = [Revocation(u, deleted=True) for u in (A, A0, A1)]
    steps = reconcile(running, revoked, {})
    assert steps.stops == (Revocation(A1, True), Revocation(A0, True), Revocation(A, True))
    assert steps.starts == () and steps.acknowledge


def test_a_revocation_of_something_not_running_is_still_acknowledged() -> None:
    steps = reconcile({}, [Revocation(A0, deleted=True)], {})
    assert steps.stops == () and steps.acknowledge


def test_an_assignment_starts_what_is_new_and_stops_what_is_gone_without_the_marker() -> None:
    running = {A: unit(A), A0: unit(A0)}
    steps = reconcile(running, [], {A: unit(A), B: unit(B)})
    assert steps.stops == (Revocation(A0, False),)
    assert steps.starts == (B,)
    assert not steps.acknowledge


def test_a_changed_config_restarts_the_unit_and_an_unchanged_one_is_left_alone() -> None:
    running = {A: unit(A), A0: unit(A0)}
    steps = reconcile(running, [], {A: unit(A), A0: unit(A0, task_config={"t": "new"})})
    assert steps.stops == (Revocation(A0, False),)
    assert steps.starts == (A0,)
    assert steps.restarts == frozenset()


def test_pausing_and_resuming_stop_and_start_without_the_marker() -> None:
    running = {A: unit(A), A0: unit(A0)}
    paused = {u: replace(a, target=Target.PAUSED) for u, a in running.items()}
    steps = reconcile(running, [], paused)
    assert steps.stops == (Revocation(A0, False), Revocation(A, False))
    assert steps.starts == (A, A0)
    resumed = reconcile(paused, [], running)
    assert resumed.stops == (Revocation(A0, False), Revocation(A, False))
    assert resumed.starts == (A, A0)


def test_a_restart_asked_for_after_the_start_restarts_only_that_unit() -> None:
    running = {A: unit(A, restart=5), A0: unit(A0), A1: unit(A1)}
    steps = reconcile(running, [], {**running, A0: unit(A0, restart=9)})
    assert steps.stops == (Revocation(A0, False),)
    assert steps.starts == (A0,)
    assert steps.restarts == frozenset({A0})


def test_an_older_restart_than_the_one_started_with_is_not_carried_out_again() -> None:
    # Compaction may leave a later generation knowing of no restart, or an older one.
    running = {A: unit(A, restart=9)}
    for older in (0, 5, 9):
        steps = reconcile(running, [], {A: unit(A, restart=older)})
        assert steps.stops == () and steps.starts == ()
