"""Reading what each app last committed to a Delta table from the table's log files."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from headrace.executor.writers.deltalog import (
    app_versions,
    commits_after,
    has_commits,
    newest_checkpoint,
    txns_of_lines,
)


def commit(version: int) -> str:
    return f"{version:020d}.json"


def txn(app: str, version: int) -> str:
    return json.dumps({"txn": {"appId": app, "version": version, "lastUpdated": 0}})


def test_the_newest_whole_checkpoint_wins() -> None:
    names = [
        commit(9),
        f"{10:020d}.checkpoint.parquet",
        f"{20:020d}.checkpoint.0000000001.0000000002.parquet",
        f"{20:020d}.checkpoint.0000000002.0000000002.parquet",
        f"{30:020d}.checkpoint.0000000001.0000000003.parquet",  # parts 2 and 3 not written yet
        "_last_checkpoint",
    ]
    assert newest_checkpoint(names) == (
        20,
        [
            f"{20:020d}.checkpoint.0000000001.0000000002.parquet",
            f"{20:020d}.checkpoint.0000000002.0000000002.parquet",
        ],
    )
    v2 = f"{40:020d}.checkpoint.3a0d65cd-4056-49b8-937b-95f9e3ee90e5.json"
    assert newest_checkpoint([*names, v2]) == (40, [v2])
    assert newest_checkpoint([commit(0), commit(1)]) == (-1, [])


def test_commits_after_a_checkpoint_come_in_order() -> None:
    names = [commit(12), commit(3), commit(11), f"{11:020d}.crc", "00000000000000000011.json.tmp"]
    assert commits_after(names, 10) == [(11, commit(11)), (12, commit(12))]


def test_the_last_txn_of_each_app_wins() -> None:
    lines = [
        json.dumps({"add": {"path": "part-0.parquet"}}),
        txn("a", 5),
        txn("b", 1),
        json.dumps({"commitInfo": {"operation": "WRITE", "note": '"txn" in a string'}}),
        txn("a", 9),
    ]
    assert txns_of_lines(lines) == {"a": 9, "b": 1}


def test_a_table_s_versions_come_from_its_checkpoint_then_later_commits(tmp_path: Path) -> None:
    log = tmp_path / "_delta_log"
    log.mkdir()
    (log / commit(0)).write_text(txn("old", 1) + "\n")  # folded into the checkpoint below
    txns = pa.array(
        [None, {"appId": "a", "version": 4, "lastUpdated": 0}, {"appId": "old", "version": 2}],
        pa.struct([("appId", pa.string()), ("version", pa.int64()), ("lastUpdated", pa.int64())]),
    )
    pq.write_table(pa.table({"txn": txns}), log / f"{1:020d}.checkpoint.parquet")
    (log / commit(2)).write_text(txn("a", 7) + "\n" + txn("b", 3) + "\n")
    assert app_versions(str(tmp_path)) == {"a": 7, "b": 3, "old": 2}
    assert app_versions(str(tmp_path / "no-table")) == {}


def test_a_table_exists_from_its_first_commit_not_its_log_folder(tmp_path: Path) -> None:
    assert not has_commits(str(tmp_path))
    (tmp_path / "_delta_log").mkdir()
    assert not has_commits(str(tmp_path))  # the first commit is still being written
    (tmp_path / "_delta_log" / commit(0)).write_text(txn("a", 1) + "\n")
    assert has_commits(str(tmp_path))
