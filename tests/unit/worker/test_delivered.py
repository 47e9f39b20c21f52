"""The deletions a worker delivered, kept on disk: what a restarted worker still knows."""

from __future__ import annotations

from pathlib import Path

from headrace.core.model.structs import WorkUnit
from headrace.worker.delivered import Delivered


def test_a_delivery_is_known_to_the_next_worker_of_the_same_file(tmp_path: Path) -> None:
    path = tmp_path / "run" / "deletions-w1.jsonl"
    first = Delivered(path)
    first.add((WorkUnit("a", 0), "inc-1"))
    first.add((WorkUnit.of("a"), "inc-1"))
    again = Delivered(path)
    assert (WorkUnit("a", 0), "inc-1") in again
    assert (WorkUnit.of("a"), "inc-1") in again
    assert (WorkUnit("a", 0), "inc-2") not in again  # a new incarnation is a new deletion
    assert (WorkUnit("a", 1), "inc-1") not in again


def test_a_line_cut_short_by_a_crash_is_left_out(tmp_path: Path) -> None:
    path = tmp_path / "deletions-w1.jsonl"
    Delivered(path).add((WorkUnit("a", 0), "inc-1"))
    with path.open("a") as out:
        out.write('{"connector": "b", "ta')
    after = Delivered(path)
    assert (WorkUnit("a", 0), "inc-1") in after
    after.add((WorkUnit("c", 0), "inc-3"))  # still appends whole lines after the cut one
    assert (WorkUnit("c", 0), "inc-3") in Delivered(path)


def test_it_keeps_the_newest_and_stays_bounded(tmp_path: Path) -> None:
    path = tmp_path / "deletions-w1.jsonl"
    kept = Delivered(path, most=3)
    for n in range(10):
        kept.add((WorkUnit("c", n), "i"))
    assert len(path.read_text().splitlines()) < 6
    reread = Delivered(path, most=3)
    assert [(WorkUnit("c", n), "i") in reread for n in range(10)] == [False] * 7 + [True] * 3
