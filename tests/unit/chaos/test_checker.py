"""The nemesis's checker over made-up outputs: each promise it checks, kept and broken."""

from __future__ import annotations

from typing import Any

from tests.chaos import checker


def kinds(violations: list[checker.Violation]) -> list[str]:
    return [v.kind for v in violations]


def test_delivery_counts_missing_invented_and_twice() -> None:
    found, violations = checker.delivery("p", [1, 2, 3], [1, 1, 3, 4], exactly_once=False)
    assert (found.missing, found.invented, found.twice) == (1, 1, 1)
    assert kinds(violations) == ["missing", "invented"]
    _, violations = checker.delivery("p", [1, 2], [1, 2, 2], exactly_once=True)
    assert kinds(violations) == ["duplicated"]
    _, violations = checker.delivery("p", [1, 2], [2, 1], exactly_once=True)
    assert violations == []


def test_source_order_wants_each_task_s_ids_in_order_and_without_gaps() -> None:
    # Two tasks: task 0 makes 0, 2, 4..., task 1 makes 1, 3, 5...
    ordered = [(0, 0, 0), (0, 1, 1), (0, 2, 2), (1, 0, 3), (0, 3, 4)]
    assert checker.source_order("g", ordered, tasks=2, exactly_once=True) == []
    swapped = [(0, 0, 2), (0, 1, 0), (1, 0, 1)]
    assert kinds(checker.source_order("g", swapped, tasks=2, exactly_once=True)) == ["out of order"]
    gap = [(0, 0, 0), (0, 1, 4), (0, 2, 1)]  # task 0 skipped 2
    assert kinds(checker.source_order("g", gap, tasks=2, exactly_once=True)) == ["gap in a source"]
    again = [(0, 0, 0), (0, 1, 2), (0, 2, 2), (0, 3, 1)]  # written twice: at least once
    assert checker.source_order("g", again, tasks=2, exactly_once=False) == []
    assert kinds(checker.source_order("g", again, tasks=2, exactly_once=True)) == ["out of order"]


def test_sink_order_allows_a_range_again_but_not_a_later_record_first() -> None:
    assert checker.sink_order("s", [(0, 0), (0, 1), (0, 2), (0, 1), (0, 2), (0, 3)]) == []
    assert checker.sink_order("s", [(0, 0), (1, 5), (0, 2), (1, 6)]) == []
    assert kinds(checker.sink_order("s", [(0, 0), (0, 2), (0, 1)])) == ["out of order"]


def line(event: str, at: int, pid: int, task: int | None = 0, **more: Any) -> dict[str, Any]:
    unit = {"unit": "connector"} if task is None else {"unit": "task", "task": task}
    return {**unit, "event": event, "at_ms": at, "pid": pid, **more}


def test_a_unit_in_two_processes_at_once_is_found() -> None:
    moved = [line("start", 0, 1), line("stop", 100, 1), line("start", 150, 2)]
    runs = checker.runs({"c": moved}, {}, end_ms=1000)
    assert checker.overlaps(runs, {}) == []
    both = [line("start", 0, 1), line("start", 150, 2)]
    runs = checker.runs({"c": both}, {}, end_ms=1000)
    assert kinds(checker.overlaps(runs, {})) == ["one unit on two processes"]
    # The first process died at 120 (noticed then): the second's start at 600 is no overlap.
    runs = checker.runs({"c": [line("start", 0, 1), line("start", 600, 2)]}, {1: 120}, 1000)
    assert checker.overlaps(runs, {}) == []


def test_records_put_by_a_process_not_running_the_task_are_found() -> None:
    runs = checker.runs({"c": [line("start", 0, 1), line("stop", 100, 1)]}, {}, end_ms=1000)
    inside = {"c": [{"task": 0, "pid": 1, "at_ms": 50}]}
    assert checker.overlaps(runs, inside) == []
    after = {"c": [{"task": 0, "pid": 1, "at_ms": 150}]}
    assert kinds(checker.overlaps(runs, after)) == ["records put outside a run"]
    # Killed at 200 without a stop: what it put until then was inside its run.
    killed = checker.runs({"c": [line("start", 0, 1)]}, {1: 200}, end_ms=1000)
    assert checker.overlaps(killed, {"c": [{"task": 0, "pid": 1, "at_ms": 199}]}) == []


def stop(at: int, pid: int, task: int | None = 0, deleted: bool = True) -> dict[str, Any]:
    return line("stop", at, pid, task, deleted=deleted)


def answers(*counts: tuple[int, int]) -> list[dict[str, Any]]:
    return [{"tasks": tasks, "at_ms": at} for at, tasks in counts]


def test_each_deleted_unit_hears_of_its_deletion_exactly_once() -> None:
    once = [line("start", 0, 1, None), line("start", 1, 1), stop(50, 1), stop(51, 1, None)]
    assert checker.deletion_stops({"c": once}, {"c": answers((0, 1))}, ["c"]) == []
    twice = [*once, line("start", 60, 2), stop(61, 2)]
    assert kinds(checker.deletion_stops({"c": twice}, {"c": answers((0, 1))}, ["c"])) == [
        "started after its deletion stop",
        "deletion stop more than once",
    ]
    unheard = [line("start", 0, 1, None), line("start", 1, 1), stop(51, 1, None)]
    assert kinds(checker.deletion_stops({"c": unheard}, {"c": answers((0, 1))}, ["c"])) == [
        "no deletion stop"
    ]
    assert kinds(checker.deletion_stops({"c": once}, {"c": answers((0, 1))}, [])) == [
        "deletion stop but never deleted"
    ]


def test_the_deleted_units_are_those_its_last_task_configs_before_the_deletion_made() -> None:
    # Two tasks; reconfigured to one while paused (so never applied); deleted: both tasks hear
    # of it, and the connector, started once more to hear of it, answers one task then.
    life = [
        line("start", 0, 1, None),
        *(line("start", 1, 1, t) for t in (0, 1)),
        *(stop(10 + t, 1, t, deleted=False) for t in (0, 1)),
        stop(12, 1, None, deleted=False),
        *(line("start", 50, 1, t) for t in (0, 1)),
        *(stop(51, 1, t) for t in (0, 1)),
        line("start", 52, 1, None),
        stop(53, 1, None),
    ]
    told = answers((0, 2), (52, 1))
    assert checker.deletion_stops({"c": life}, {"c": told}, ["c"]) == []
    assert kinds(checker.deletion_stops({"c": life}, {"c": answers((0, 1))}, ["c"])) == [
        "deletion stop of a unit it no longer had"
    ]


def test_a_connector_created_again_by_an_unanswered_put_is_a_new_incarnation() -> None:
    """Seen in a run (seed 303): a PUT of a connector's config timed out, the connector was
    deleted, and the PUT took effect after: the connector came back, and was deleted again."""
    first = [line("start", 0, 1, None), line("start", 1, 1), stop(50, 1), stop(51, 1, None)]
    second = [line("start", 60, 2, None), line("start", 61, 2), stop(90, 2), stop(91, 2, None)]
    told = answers((0, 1), (60, 1))
    both = {"c": [*first, *second]}
    assert checker.deletion_stops(both, {"c": told}, ["c"], recreatable=["c"]) == []
    assert "deletion stop more than once" in kinds(checker.deletion_stops(both, {"c": told}, ["c"]))
    # Within one incarnation a second deletion stop is still one too many.
    again = {"c": [*first, stop(52, 1, None)]}
    assert kinds(checker.deletion_stops(again, {"c": told}, ["c"], recreatable=["c"])) == [
        "deletion stop more than once"
    ]


def test_a_deletion_applies_to_the_task_configs_stored_when_it_was_asked_for() -> None:
    """Seen in a run (seed 20261128): three tasks, reconfigured to one, deleted before the
    connector ran its new config. Started only to hear of its deletion, the connector answered
    one task first; the three tasks it had were each told, as they should be."""
    life = [
        line("start", 0, 1, None),
        *(line("start", 1, 1, t) for t in (0, 1, 2)),
        *(stop(10 + t, 1, t, deleted=False) for t in (0, 1, 2)),
        stop(13, 1, None, deleted=False),
        line("start", 50, 2, None),
        stop(51, 2, None),
        *(line("start", 52, 2, t) for t in (0, 1, 2)),
        *(stop(53, 2, t) for t in (0, 1, 2)),
    ]
    told = answers((0, 3), (50, 1))
    assert checker.deletion_stops({"c": life}, {"c": told}, ["c"], asked={"c": [40]}) == []
    assert "deletion stop of a unit it no longer had" in kinds(
        checker.deletion_stops({"c": life}, {"c": told}, ["c"])
    )


def test_an_answer_that_was_not_stored_is_not_what_the_deletion_applies_to() -> None:
    """Seen in a run (seed 419, on 4b7045a): three tasks, reconfigured to one (tasks 1 and 2
    stopped, not deleted); the connector, started as it was paused, answered three again, which
    the config service ignored (paused); deleted with one task stored. Tasks 1 and 2 were no
    longer its units: only task 0 and the connector hear of the deletion."""
    life = [
        line("start", 0, 1, None),
        *(line("start", 1, 1, t) for t in (0, 1, 2)),
        *(stop(10 + t, 1, t, deleted=False) for t in (1, 2)),
        line("start", 40, 1, None),
        stop(41, 1, None, deleted=False),
        line("start", 60, 2),
        stop(61, 2),
        line("start", 62, 2, None),
        stop(63, 2, None),
    ]
    told = answers((0, 3), (5, 1), (40, 3), (62, 3))
    stored = {"c": {50: 1}}
    assert (
        checker.deletion_stops({"c": life}, {"c": told}, ["c"], asked={"c": [50]}, stored=stored)
        == []
    )
    assert kinds(checker.deletion_stops({"c": life}, {"c": told}, ["c"], asked={"c": [50]})) == [
        "no deletion stop",
        "no deletion stop",
    ]
    stopped = [*life, stop(64, 2, 1), stop(65, 2, 2)]  # had they been stored, told too: fine
    assert (
        checker.deletion_stops({"c": stopped}, {"c": told}, ["c"], asked={"c": [50]}, stored=stored)
        == []
    )
    history = [{"type": "op", "op": "delete", "connector": "c", "began_ms": 50, "stored_tasks": 1}]
    assert checker.stored_task_counts(history) == stored


def test_an_unanswered_delete_that_a_later_204_shows_never_applied_is_no_deletion_ask() -> None:
    """Seen in a run (seed 20261128, on 006ad17): a delete timed out unapplied, the connector
    went on with a new config of one task fewer, and a later delete answered 204: its tasks
    are those of the later ask."""

    def op(kind: str, at: int, outcome: str = "ok", status: int | None = None) -> dict[str, Any]:
        return {"type": "op", "op": kind, "connector": "c", "began_ms": at, "outcome": outcome,
                "status": status}  # fmt: skip

    writes = {"create", "reconfigure"}
    unapplied = [op("reconfigure", 1), op("delete", 2, "unknown"), op("delete", 9, status=204)]
    assert checker.deletion_asks(unapplied, writes) == {"c": [9]}
    # Without a later 204 it may have applied; a config written between may have made it again.
    alone = [op("delete", 2, "unknown")]
    assert checker.deletion_asks(alone, writes) == {"c": [2]}
    recreated = [op("delete", 2, "unknown"), op("create", 5, "unknown"), op("delete", 9, "ok", 204)]
    assert checker.deletion_asks(recreated, writes) == {"c": [2, 9]}
    refused = [op("delete", 2, "refused")]
    assert checker.deletion_asks(refused, writes) == {}
