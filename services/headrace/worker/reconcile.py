"""What a worker must do with an assignment: a pure function of what it runs and what it is told.

A message with revocations only stops (the revoked units, with the deletion marker as sent) and
is then acknowledged; the coordinator's next message says what to run. Any other message is the
whole truth: units not in it stop with ``deleted=False``; units whose configs, incarnation or
target state changed, or whose restart was asked for since they started, stop and start again;
units new to the worker start. Tasks always stop before their connector, as in Kafka Connect.

A unit whose target is PAUSED or STOPPED is *held*: the worker keeps it, and reports its state,
without running it in a plugin process. Pausing or resuming is therefore a stop and a start like
any other change, and every such stop passes ``deleted=False``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

from headrace.core.model.structs import AssignedUnit, Revocation, WorkUnit, tasks_first


@dataclass(frozen=True)
class Steps:
    stops: tuple[Revocation, ...]  # each unit to stop, with its deletion marker, in order
    starts: tuple[WorkUnit, ...]
    acknowledge: bool  # tell the coordinator the revocations are done
    restarts: frozenset[WorkUnit] = frozenset()  # of the stops, those an operator restarted


def _same(a: AssignedUnit, b: AssignedUnit) -> bool:
    return (dict(a.connector_config), dict(a.task_config), a.incarnation, a.target) == (
        dict(b.connector_config),
        dict(b.task_config),
        b.incarnation,
        b.target,
    )


def reconcile(
    running: Mapping[WorkUnit, AssignedUnit],
    revoked: Collection[Revocation],
    assigned: Mapping[WorkUnit, AssignedUnit],
) -> Steps:
    """The stops and starts that take the worker from ``running`` to what the message says."""
    if revoked:
        deleted = {r.unit: r.deleted for r in revoked}
        order = tasks_first(u for u in deleted if u in running)
        return Steps(tuple(Revocation(u, deleted[u]) for u in order), (), acknowledge=True)
    kept = running.keys() & assigned.keys()
    # A restart asked for after the unit started; a smaller number is an older request that
    # compaction left behind, already carried out.
    restarts = {u for u in kept if assigned[u].restart > running[u].restart}
    changed = {u for u in kept if not _same(running[u], assigned[u])} | restarts
    stops = tasks_first((running.keys() - assigned.keys()) | changed)
    starts = sorted((assigned.keys() - running.keys()) | changed)
    return Steps(
        tuple(Revocation(u) for u in stops),
        tuple(starts),
        acknowledge=False,
        restarts=frozenset(restarts),
    )
