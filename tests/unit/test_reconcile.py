"""The worker's reconciliation: which units to stop (and how) and which to start."""

from __future__ import annotations

from headrace.core.structs import Revocation, WorkUnit
from headrace.worker.reconcile import Configs, reconcile

CONN: Configs = ({"connector.class": "X"}, {}, "i1")
TASK: Configs = ({"connector.class": "X"}, {"t": "0"}, "i1")
A, A0, A1, B = WorkUnit.of("a"), WorkUnit("a", 0), WorkUnit("a", 1), WorkUnit.of("b")


def test_revocations_stop_tasks_before_connectors_and_are_acknowledged() -> None:
    running = {A: CONN, A0: TASK, A1: TASK, WorkUnit("b", 0): TASK}
    revoked = [Revocation(unit, deleted=True) for unit in (A, A0, A1)]
    steps = reconcile(running, revoked, {})
    assert steps.stops == (Revocation(A1, True), Revocation(A0, True), Revocation(A, True))
    assert steps.starts == () and steps.acknowledge


def test_a_revocation_of_something_not_running_is_still_acknowledged() -> None:
    steps = reconcile({}, [Revocation(A0, deleted=True)], {})
    assert steps.stops == () and steps.acknowledge


def test_an_assignment_starts_what_is_new_and_stops_what_is_gone_without_the_marker() -> None:
    running = {A: CONN, A0: TASK}
    steps = reconcile(running, [], {A: CONN, B: CONN})
    assert steps.stops == (Revocation(A0, False),)
    assert steps.starts == (B,)
    assert not steps.acknowledge


def test_a_changed_config_restarts_the_unit_and_an_unchanged_one_is_left_alone() -> None:
    running = {A: CONN, A0: TASK}
    new_task = ({"connector.class": "X"}, {"t": "new"}, "i1")
    steps = reconcile(running, [], {A: CONN, A0: new_task})
    assert steps.stops == (Revocation(A0, False),)
    assert steps.starts == (A0,)
