"""What a worker must do with an assignment: a pure function of what it runs and what it is told.

A message with revocations only stops (the revoked units, with the deletion marker as sent) and
is then acknowledged; the coordinator's next message says what to run. Any other message is the
whole truth: units not in it stop with ``deleted=False``, units whose configs (or incarnation)
changed restart, units new to the worker start. Tasks always stop before their connector, as in
Kafka Connect.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

from headrace.core.structs import Revocation, WorkUnit, tasks_first

Configs = tuple[Mapping[str, str], Mapping[str, str], str]
"""What a unit runs with: its connector config, its task config, its connector's incarnation."""


@dataclass(frozen=True)
class Steps:
    stops: tuple[Revocation, ...]  # each unit to stop, with its deletion marker, in order
    starts: tuple[WorkUnit, ...]
    acknowledge: bool  # tell the coordinator the revocations are done


def _same(a: Configs, b: Configs) -> bool:
    return (dict(a[0]), dict(a[1]), a[2]) == (dict(b[0]), dict(b[1]), b[2])


def reconcile(
    running: Mapping[WorkUnit, Configs],
    revoked: Collection[Revocation],
    assigned: Mapping[WorkUnit, Configs],
) -> Steps:
    """The stops and starts that take the worker from ``running`` to what the message says."""
    if revoked:
        deleted = {r.unit: r.deleted for r in revoked}
        order = tasks_first(u for u in deleted if u in running)
        return Steps(tuple(Revocation(u, deleted[u]) for u in order), (), acknowledge=True)
    changed = {u for u in running.keys() & assigned.keys() if not _same(running[u], assigned[u])}
    stops = tasks_first((running.keys() - assigned.keys()) | changed)
    starts = sorted((assigned.keys() - running.keys()) | changed)
    return Steps(tuple(Revocation(u) for u in stops), tuple(starts), acknowledge=False)
