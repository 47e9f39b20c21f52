"""The benchmarks' check of what a run wrote: the copy must be the input, line for line."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.workloads.files import check_copy, check_topic, lines

LINE = 20


def written(path: Path, rows: list[bytes]) -> Path:
    path.write_bytes(b"".join(r + b"\n" for r in rows))
    return path


def test_a_copy_of_every_line_in_order_passes(tmp_path: Path) -> None:
    rows = lines(50, LINE)
    check_copy("e2e", written(tmp_path / "out", rows), written(tmp_path / "in", rows), LINE)


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (lambda rows: rows[:-1], "49 lines"),  # one lost
        (lambda rows: rows + rows[-1:], "the same lines, then more"),  # one written twice
        (lambda rows: [rows[1], rows[0], *rows[2:]], "line 1 differs"),  # two swapped
    ],
)
def test_a_lost_repeated_or_reordered_line_fails_the_run(
    tmp_path: Path, change: object, said: str
) -> None:
    rows = lines(50, LINE)
    out = written(tmp_path / "out", change(rows))  # type: ignore[operator]
    with pytest.raises(RuntimeError, match=said):
        check_copy("e2e", out, written(tmp_path / "in", rows), LINE)


def test_a_source_s_topic_is_checked_the_same_way(tmp_path: Path) -> None:
    rows = lines(50, LINE)
    given = written(tmp_path / "in", rows)
    check_topic("source alone", "t", list(rows), given)
    with pytest.raises(RuntimeError, match="topic t has 51 lines against 50 written"):
        check_topic("source alone", "t", [*rows, rows[-1]], given)  # one record sent twice
