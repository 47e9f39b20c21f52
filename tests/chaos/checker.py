"""What the nemesis run's outputs must show, as pure functions over what was read back.

Each check takes what the runner read from the outputs themselves (a topic through a consumer
reading committed data, Delta through delta-rs, PostgreSQL through SQL, files directly) and from
the recording plugin's own logs, never headrace's view of them, and returns its violations:

- :func:`delivery`: every record a pipeline's input holds reached its output (none missing,
  none invented); on an exactly-once path none arrived twice, elsewhere the twice are counted.
- :func:`source_order`: a generator's records in each partition in the order it made them, and
  each generator task's ids without a gap.
- :func:`sink_order`: a sink saw each partition's records first in the partition's order.
- :func:`overlaps`: no unit (connector or task) ran in two processes at once, and no process put
  records for a task it was not running.
- :func:`deletion_stops`: each unit of a deleted connector got exactly one ``stop(deleted=True)``
  and never started again after it; nothing not deleted got one.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Collection, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Violation:
    pipeline: str
    kind: str
    detail: str

    def __str__(self) -> str:
        return f"{self.pipeline}: {self.kind}: {self.detail}"


@dataclass(frozen=True)
class Delivery:
    """How a pipeline's output compares with its input."""

    pipeline: str
    expected: int
    delivered: int
    missing: int
    invented: int
    twice: int
    exactly_once: bool

    def summary(self) -> dict[str, Any]:
        return {
            "pipeline": self.pipeline,
            "records": self.expected,
            "missing": self.missing,
            "duplicated": self.twice,
            "invented": self.invented,
            "exactly_once": self.exactly_once,
        }


def _sample(values: Iterable[Hashable], most: int = 5) -> str:
    listed = sorted(values, key=repr)
    more = f" and {len(listed) - most} more" if len(listed) > most else ""
    return ", ".join(repr(v) for v in listed[:most]) + more


def delivery(
    pipeline: str, expected: Iterable[Hashable], delivered: Sequence[Hashable], exactly_once: bool
) -> tuple[Delivery, list[Violation]]:
    """Compares what reached a pipeline's output with what its input holds."""
    wanted = Counter(expected)
    got = Counter(delivered)
    missing = set(wanted) - set(got)
    invented = set(got) - set(wanted)
    twice = sum(n - 1 for n in got.values() if n > 1)
    found = Delivery(
        pipeline, len(wanted), len(delivered), len(missing), len(invented), twice, exactly_once
    )
    violations = []
    if missing:
        violations.append(Violation(pipeline, "missing", f"{len(missing)}: {_sample(missing)}"))
    if invented:
        violations.append(
            Violation(pipeline, "invented", f"{len(invented)} never written: {_sample(invented)}")
        )
    if exactly_once and twice:
        doubled = [k for k, n in got.items() if n > 1]
        violations.append(Violation(pipeline, "duplicated", f"{twice}: {_sample(doubled)}"))
    return found, violations


def source_order(
    pipeline: str, records: Sequence[tuple[int, int, int]], tasks: int, exactly_once: bool
) -> list[Violation]:
    """``records`` as (partition, offset, id) of a generator's committed output, where task k of
    ``tasks`` makes the ids k, k+tasks, k+2*tasks... in that order. In each partition each task's
    ids increase (their first copies, where a source may write twice); each task's ids run
    from k with no gap."""
    violations = []
    by_partition: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for partition, offset, ident in records:
        by_partition[partition].append((offset, ident))
    for partition, rows in sorted(by_partition.items()):
        last: dict[int, int] = {}
        for offset, ident in sorted(rows):
            task = ident % tasks
            before = last.get(task)
            if before is not None and ident <= before:
                if ident < before or exactly_once:
                    violations.append(
                        Violation(
                            pipeline,
                            "out of order",
                            f"partition {partition} offset {offset}: id {ident} after {before}",
                        )
                    )
                    break
                continue
            last[task] = ident
    made = {ident for _, _, ident in records}
    for task in range(tasks):
        ids = sorted(i for i in made if i % tasks == task)
        if not ids:
            continue
        gaps = sorted(set(range(task, ids[-1] + 1, tasks)) - set(ids))
        if gaps:
            violations.append(
                Violation(pipeline, "gap in a source", f"task {task}: {len(gaps)}: {_sample(gaps)}")
            )
    return violations


def sink_order(pipeline: str, seen: Sequence[tuple[int, int]]) -> list[Violation]:
    """``seen``: (partition, offset) as a sink got them, in order. Each offset's first delivery
    comes after every lower offset's first delivery in its partition: a sink may be given a
    range again, never a later record before an earlier one."""
    firsts: dict[int, int] = {}
    delivered: set[tuple[int, int]] = set()
    for partition, offset in seen:
        if (partition, offset) in delivered:
            continue
        delivered.add((partition, offset))
        before = firsts.get(partition)
        if before is not None and offset < before:
            return [
                Violation(
                    pipeline,
                    "out of order",
                    f"partition {partition}: offset {offset} first seen after {before}",
                )
            ]
        firsts[partition] = offset
    return []


@dataclass(frozen=True)
class Run:
    """One process running one unit, from its start to its stop or the process's end."""

    unit: tuple[str, str]  # (connector, "connector" or "task-<n>")
    pid: int
    start_ms: int
    end_ms: int
    ended_by: str  # "stop", "death" or "end" (still running when the run ended)


def unit_of(entry: Mapping[str, Any], connector: str) -> tuple[str, str]:
    return (connector, "connector" if entry["unit"] == "connector" else f"task-{entry['task']}")


def runs(
    lifecycles: Mapping[str, Sequence[Mapping[str, Any]]],
    deaths: Mapping[int, int],
    end_ms: int,
) -> list[Run]:
    """Each unit's runs, from each connector's lifecycle lines (by connector name) and the
    time each process was seen gone."""
    found = []
    for connector, lines in lifecycles.items():
        open_runs: dict[tuple[tuple[str, str], int], int] = {}
        for entry in sorted(lines, key=lambda e: e["at_ms"]):
            key = (unit_of(entry, connector), entry["pid"])
            if entry["event"] == "start":
                open_runs[key] = entry["at_ms"]
            elif entry["event"] == "stop" and key in open_runs:
                found.append(Run(key[0], key[1], open_runs.pop(key), entry["at_ms"], "stop"))
        for (unit, pid), start in open_runs.items():
            death = deaths.get(pid)
            if death is not None:
                # When it was seen gone (the runner looks every 100 ms): no later than that.
                found.append(Run(unit, pid, start, death, "death"))
            else:
                found.append(Run(unit, pid, start, end_ms, "end"))
    return found


def overlaps(
    all_runs: Sequence[Run],
    puts: Mapping[str, Sequence[Mapping[str, Any]]],
) -> list[Violation]:
    """Two processes running one unit at once, and records put by a process for a task it was
    not running then (``puts``: each connector's record lines, with task, pid and at_ms)."""
    violations = []
    by_unit: dict[tuple[str, str], list[Run]] = defaultdict(list)
    for run in all_runs:
        by_unit[run.unit].append(run)
    for unit, unit_runs in sorted(by_unit.items()):
        ordered = sorted(unit_runs, key=lambda r: r.start_ms)
        for i, later in enumerate(ordered[1:], 1):
            earlier = max(ordered[:i], key=lambda r: r.end_ms)  # the one that ran longest
            if later.pid != earlier.pid and later.start_ms < earlier.end_ms:
                violations.append(
                    Violation(
                        unit[0],
                        "one unit on two processes",
                        f"{unit[1]} started in pid {later.pid} at {later.start_ms} while pid "
                        f"{earlier.pid} ran it from {earlier.start_ms} to {earlier.end_ms} "
                        f"({earlier.ended_by})",
                    )
                )
    for connector, lines in puts.items():
        for line in lines:
            unit = (connector, f"task-{line['task']}")
            inside = any(
                r.pid == line["pid"] and r.start_ms <= line["at_ms"] <= r.end_ms
                for r in by_unit.get(unit, [])
            )
            if not inside:
                violations.append(
                    Violation(
                        connector,
                        "records put outside a run",
                        f"{unit[1]} in pid {line['pid']} at {line['at_ms']}",
                    )
                )
                break
    return violations


def task_count(answers: Sequence[Mapping[str, Any]], before_ms: float) -> int:
    """How many tasks a connector had: its last ``task_configs`` answer before ``before_ms``
    (a deleted connector's connector may be started once more only to hear of its deletion,
    and answer again then; what was stored before is what the deletion applies to)."""
    earlier = [a for a in answers if a["at_ms"] < before_ms]
    return max(earlier, key=lambda a: a["at_ms"])["tasks"] if earlier else 0


def deletion_asks(
    history: Iterable[Mapping[str, Any]], writes_config: Collection[str]
) -> dict[str, list[int]]:
    """When each connector's deletion may have been asked for (ms): every delete not refused,
    but an unanswered one that a later delete answered 204 shows never took effect (a delete of
    a connector that is gone answers 404), unless a config was written between the two (which
    may have created it again). Seen in a run (seed 20261128, on 006ad17): a delete timed out
    unapplied, the connector ran a new config with one task fewer, and was deleted 63 s later;
    the checker took the units of the first ask, and wanted the task it no longer had told."""
    ops = [e for e in history if e["type"] == "op"]
    asked: dict[str, list[int]] = {}
    for i, entry in enumerate(ops):
        if entry["op"] != "delete" or entry["outcome"] == "refused":
            continue
        connector = entry["connector"]
        if entry["outcome"] == "unknown":
            later = [e for e in ops[i + 1 :] if e["connector"] == connector]
            until = next(
                (e for e in later if e["op"] in writes_config or e["op"] == "delete"), None
            )
            if until is not None and until["op"] == "delete" and until.get("status") == 204:
                continue  # never took effect
        asked.setdefault(connector, []).append(entry["began_ms"])
    return asked


def stored_task_counts(history: Iterable[Mapping[str, Any]]) -> dict[str, dict[int, int]]:
    """How many tasks each connector had stored just before each delete (ms, as the delete
    began), read from the REST API: what a deletion applies to when the connector's last answer
    was not stored (a paused connector's task configs are ignored; seen in seed 419)."""
    stored: dict[str, dict[int, int]] = {}
    for e in history:
        if e["type"] == "op" and e["op"] == "delete" and e.get("stored_tasks") is not None:
            stored.setdefault(e["connector"], {})[e["began_ms"]] = e["stored_tasks"]
    return stored


def deletion_stops(
    lifecycles: Mapping[str, Sequence[Mapping[str, Any]]],
    task_configs: Mapping[str, Sequence[Mapping[str, Any]]],
    deleted: Iterable[str],
    recreatable: Iterable[str] = (),
    asked: Mapping[str, Sequence[int]] | None = None,
    stored: Mapping[str, Mapping[int, int]] | None = None,
) -> list[Violation]:
    """Deletion stops as promised: ``task_configs`` is each connector's ``task_configs``
    answers (tasks, at_ms), ``deleted`` the connectors deleted. Every unit of a deleted connector
    that ever started gets exactly one ``stop(deleted=True)`` (a unit that never started, at most
    one) and no start after it; a connector not deleted gets none.

    A connector in ``recreatable`` had a config written with no answer (it may have taken
    effect at any time after, a deletion's included): a start of its connector after the
    connector's deletion stop begins a new incarnation, checked as a connector of its own.

    ``asked`` says when each connector's deletions were asked for (ms): the units a deletion
    applies to are those of the last ``task_configs`` answer before it was asked, as well as
    before the first deletion stop (a connector started only to hear of its deletion answers
    for its last config, which never ran). ``stored`` says how many tasks were stored just
    before each ask (``stored_task_counts``): where it and the answers differ (an answer that
    was not stored, or a change between the read and the delete), the units both count must
    hear of it, and those either counts may."""
    violations = []
    gone, again = set(deleted), set(recreatable)
    for connector, lines in sorted(lifecycles.items()):
        ordered = sorted(lines, key=lambda e: e["at_ms"])
        parts = incarnations(ordered, connector) if connector in again else [ordered]
        for n, part in enumerate(parts):
            last = n == len(parts) - 1
            answers = task_configs.get(connector, ())
            was_deleted = connector in gone or not last
            begun = part[0]["at_ms"] if part else 0
            when = [t for t in (asked or {}).get(connector, ()) if t >= begun]
            cutoff = min(when, default=float("inf"))
            read = (stored or {}).get(connector, {}).get(int(cutoff)) if when else None
            violations += _incarnation_stops(connector, part, answers, was_deleted, cutoff, read)
    return violations


def incarnations(
    ordered: Sequence[Mapping[str, Any]], connector: str
) -> list[list[Mapping[str, Any]]]:
    """A connector's lifecycle lines, split where its connector starts again after its
    deletion stop."""
    parts: list[list[Mapping[str, Any]]] = [[]]
    told = False
    for entry in ordered:
        is_connector = unit_of(entry, connector)[1] == "connector"
        if is_connector and entry["event"] == "start" and told:
            parts.append([])
            told = False
        if is_connector and entry["event"] == "stop" and entry.get("deleted"):
            told = True
        parts[-1].append(entry)
    return parts


def _incarnation_stops(
    connector: str,
    ordered: Sequence[Mapping[str, Any]],
    answers: Sequence[Mapping[str, Any]],
    deleted: bool,
    asked_at: float = float("inf"),
    stored_tasks: int | None = None,
) -> list[Violation]:
    violations = []
    started = {unit_of(e, connector) for e in ordered if e["event"] == "start"}
    first_deletion = min(
        (e["at_ms"] for e in ordered if e["event"] == "stop" and e.get("deleted")),
        default=float("inf"),
    )
    answered = task_count(answers, min(first_deletion, asked_at))
    counts = [answered] if stored_tasks is None else [answered, stored_tasks]

    def units(tasks: int) -> set[tuple[str, str]]:
        return {(connector, "connector")} | {(connector, f"task-{n}") for n in range(tasks)}

    final, possible = units(min(counts)), units(max(counts))
    stops: dict[tuple[str, str], list[int]] = defaultdict(list)
    for entry in ordered:
        unit = unit_of(entry, connector)
        if entry["event"] == "stop" and entry.get("deleted"):
            stops[unit].append(entry["at_ms"])
        elif entry["event"] == "start" and stops.get(unit):
            violations.append(Violation(connector, "started after its deletion stop", unit[1]))
    if not deleted:
        if stops:
            violations.append(
                Violation(connector, "deletion stop but never deleted", _sample(stops))
            )
        return violations
    for unit in sorted(possible | set(stops)):
        count = len(stops.get(unit, []))
        if count > 1:
            violations.append(
                Violation(connector, "deletion stop more than once", f"{unit[1]}: {count}")
            )
        elif count == 0 and unit in started and unit in final:
            violations.append(Violation(connector, "no deletion stop", unit[1]))
        elif count and unit not in possible:
            violations.append(
                Violation(connector, "deletion stop of a unit it no longer had", unit[1])
            )
    return violations
