"""The application transactions a Delta table recorded: what ``txnAppId`` last wrote which
``txnVersion``, read from the table's log as the Delta protocol describes it.

A Delta writer that passes ``txnAppId`` and ``txnVersion`` has Delta skip a write whose version
is not above the last one that app committed, in the same commit that adds its files. The
executor uses the app's last version to drop the rows of a retried batch that were written
already (a retry rarely covers exactly the same offsets as the first try). Delta's Python API
does not expose it, and Spark Connect gives no way into the JVM, so it is read here from the
files every Delta reader reads: the newest complete checkpoint, then each commit after it.

Only the ``txn`` actions are read; a table with no log yet has recorded none.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable

import pyarrow.parquet as pq

LOG_FOLDER = "_delta_log"
_COMMIT = re.compile(r"^(\d{20})\.json$")
# Classic (one file), multi-part (part of parts) and V2 (named by a uuid) checkpoints.
_CHECKPOINT = re.compile(
    r"^(\d{20})\.checkpoint(?:\.(\d{10})\.(\d{10})|\.[0-9a-fA-F-]{36})?\.(parquet|json)$"
)


def app_versions(table_path: str) -> dict[str, int]:
    """Each app's last committed ``txnVersion`` in the Delta table at ``table_path``."""
    folder = os.path.join(table_path, LOG_FOLDER)
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return {}
    checkpoint, files = newest_checkpoint(names)
    versions: dict[str, int] = {}
    for name in files:
        path = os.path.join(folder, name)
        actions = _parquet_txns(path) if name.endswith(".parquet") else _json_txns(path)
        versions.update(actions)
    for _, name in commits_after(names, checkpoint):
        versions.update(_json_txns(os.path.join(folder, name)))
    return versions


def has_commits(table_path: str) -> bool:
    """Whether the Delta table at ``table_path`` has a first commit (its log folder appears
    before that commit is written)."""
    try:
        names = os.listdir(os.path.join(table_path, LOG_FOLDER))
    except FileNotFoundError:
        return False
    return any(_COMMIT.match(n) or _CHECKPOINT.match(n) for n in names)


def newest_checkpoint(names: Iterable[str]) -> tuple[int, list[str]]:
    """The version of the newest complete checkpoint among the log's file names and its files;
    (-1, []) when there is none."""
    found: dict[tuple[int, int], list[str]] = {}  # (version, parts; 0 for one file): files
    for name in names:
        match = _CHECKPOINT.match(name)
        if match is not None:
            key = (int(match.group(1)), int(match.group(3) or 0))
            found.setdefault(key, []).append(name)
    for (version, parts), files in sorted(found.items(), reverse=True):
        if not parts:
            return version, sorted(files)[:1]  # each single-file checkpoint is whole
        if len(files) == parts:
            return version, sorted(files)
        # A multi-part checkpoint with parts missing is still being written: an older one.
    return -1, []


def commits_after(names: Iterable[str], version: int) -> list[tuple[int, str]]:
    """The log's commit files after ``version``, in order."""
    commits = []
    for name in names:
        match = _COMMIT.match(name)
        if match is not None and int(match.group(1)) > version:
            commits.append((int(match.group(1)), name))
    return sorted(commits)


def txns_of_lines(lines: Iterable[str]) -> dict[str, int]:
    """The ``txn`` actions among JSON action lines: app id to version, later lines winning."""
    versions: dict[str, int] = {}
    for line in lines:
        if '"txn"' not in line:
            continue  # most actions are adds; parsing only what can be a txn keeps this cheap
        action = json.loads(line).get("txn")
        if action is not None:
            versions[action["appId"]] = int(action["version"])
    return versions


def _json_txns(path: str) -> dict[str, int]:
    with open(path, encoding="utf-8") as lines:
        return txns_of_lines(lines)


def _parquet_txns(path: str) -> dict[str, int]:
    schema = pq.read_schema(path)
    if "txn" not in schema.names:
        return {}
    column = pq.read_table(path, columns=["txn"]).column("txn")
    return {t["appId"]: int(t["version"]) for t in column.to_pylist() if t is not None}
