"""The worker's reconciliation: which units to stop (and how) and which to start."""

from __future__ import annotations

from headrace.worker.reconcile import Configs, reconcile

CONN: Configs = ({"connector.class": "X"}, {})
TASK: Configs = ({"connector.class": "X"}, {"t": "0"})


def test_revocations_stop_tasks_before_connectors_and_are_acknowledged() -> None:
    running = {("a", -1): CONN, ("a", 0): TASK, ("a", 1): TASK, ("b", 0): TASK}
    steps = reconcile(running, {("a", -1): True, ("a", 0): True, ("a", 1): True}, {})
    assert steps.stops == ((("a", 1), True), (("a", 0), True), (("a", -1), True))
    assert steps.starts == () and steps.acknowledge


def test_a_revocation_of_something_not_running_is_still_acknowledged() -> None:
    steps = reconcile({}, {("a", 0): True}, {})
    assert steps.stops == () and steps.acknowledge


def test_an_assignment_starts_what_is_new_and_stops_what_is_gone_without_the_marker() -> None:
    running = {("a", -1): CONN, ("a", 0): TASK}
    steps = reconcile(running, {}, {("a", -1): CONN, ("b", -1): CONN})
    assert steps.stops == ((("a", 0), False),)
    assert steps.starts == (("b", -1),)
    assert not steps.acknowledge


def test_a_changed_config_restarts_the_unit_and_an_unchanged_one_is_left_alone() -> None:
    running = {("a", -1): CONN, ("a", 0): TASK}
    new_task = ({"connector.class": "X"}, {"t": "new"})
    steps = reconcile(running, {}, {("a", -1): CONN, ("a", 0): new_task})
    assert steps.stops == ((("a", 0), False),)
    assert steps.starts == (("a", 0),)
