"""Deletions: which units were deleted, and where each one's ``stop(deleted=True)`` goes.

A unit is deleted when the incarnation it runs is no longer its connector's: the connector's
config was tombstoned, or it was deleted and created again under its name. Each deleted unit
becomes a :class:`PendingDeletion`, recorded in every generation until its plugin has returned
from ``stop(deleted=True)``. Where it goes depends on its owner, the worker that ran it:

- the owner is live and still runs it: a revocation with the deletion marker;
- the owner is live but no longer runs it (it restarted): a :class:`Cleanup`, so that the owner
  starts the plugin only to stop it as deleted;
- the owner is in its grace period: it waits for the owner to come back;
- the owner is gone for good: a cleanup on the live member with the least to do, which becomes
  the owner (recorded before it is sent, so the cleanup goes to one worker at a time).

A new incarnation of a connector is not placed while any unit of the old one is pending: the
old one's clean-up might otherwise undo what the new one just provisioned under the same name.

Everything here is pure: the group calls it with its state and records what it returns.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from headrace.core.model.configstate import Config, ConfigState
from headrace.core.model.structs import Cleanup, Instance, Revocation, WorkUnit

Retired = Mapping[tuple[str, str], tuple[Config, tuple[Config, ...]]]
"""The last configs of deleted incarnations, by (connector, incarnation): the connector's
config and its task configs."""


@dataclass(frozen=True)
class PendingDeletion:
    """A deleted unit whose plugin has not yet returned from ``stop(deleted=True)``; ``owner``
    is the worker to deliver it (empty: any live worker)."""

    unit: WorkUnit
    incarnation: str
    connector_config: Config
    task_config: Config
    owner: str = ""

    @property
    def instance(self) -> Instance:
        return self.unit, self.incarnation

    def cleanup(self) -> Cleanup:
        return Cleanup(self.unit, self.incarnation, self.connector_config, self.task_config)


def is_deleted(unit: WorkUnit, incarnation: str, configs: ConfigState) -> bool:
    """Whether the incarnation ``unit`` runs is no longer its connector's."""
    return (
        unit.connector not in configs.connectors
        or configs.incarnations.get(unit.connector, "") != incarnation
    )


def found(
    placed: Iterable[tuple[str, Mapping[WorkUnit, str]]],
    configs: ConfigState,
    retired: Retired,
) -> list[PendingDeletion]:
    """A pending deletion for each unit that a member runs, or has kept for it, whose incarnation
    was deleted; the member is its owner (empty for units no member has). The configs are the
    incarnation's last, when known."""
    out = []
    for member, units in placed:
        for unit, incarnation in sorted(units.items()):
            if not is_deleted(unit, incarnation, configs):
                continue
            connector, tasks = retired.get((unit.connector, incarnation), ({}, ()))
            task = tasks[unit.task] if 0 <= unit.task < len(tasks) else {}
            out.append(PendingDeletion(unit, incarnation, connector, task, member))
    return out


@dataclass(frozen=True)
class Deliveries:
    """Where the pending deletions go in one generation."""

    revocations: Mapping[str, frozenset[Revocation]]
    cleanups: Mapping[str, tuple[Cleanup, ...]]
    pending: tuple[PendingDeletion, ...]  # with the owners they now have


def deliver(
    pending: Iterable[PendingDeletion],
    running: Mapping[str, Mapping[WorkUnit, str]],
    departed: Iterable[str],
    load: Mapping[str, int],
) -> Deliveries:
    """Decides each pending deletion's delivery; see the module docstring.

    ``running`` is what each live member runs, ``departed`` the members in their grace period,
    and ``load`` how many units each live member is assigned (the least loaded takes an
    ownerless cleanup).
    """
    away = set(departed)
    revocations: dict[str, set[Revocation]] = {}
    cleanups: dict[str, list[Cleanup]] = {}
    taken = dict(load)
    out = []
    for deletion in sorted(pending, key=lambda p: p.instance):
        owner = deletion.owner
        if owner not in running and owner not in away:
            owner = min(running, key=lambda m: (taken[m], m)) if running else ""
            deletion = replace(deletion, owner=owner)
        out.append(deletion)
        if owner not in running:
            continue  # no live worker yet, or its owner may still come back
        if running[owner].get(deletion.unit) == deletion.incarnation:
            revocations.setdefault(owner, set()).add(
                Revocation(deletion.unit, deleted=True, incarnation=deletion.incarnation)
            )
        else:
            cleanups.setdefault(owner, []).append(deletion.cleanup())
            taken[owner] += 1
    return Deliveries(
        {m: frozenset(r) for m, r in revocations.items()},
        {m: tuple(c) for m, c in cleanups.items()},
        tuple(out),
    )


def blocked(pending: Iterable[PendingDeletion]) -> frozenset[str]:
    """The connectors with a deletion still pending: their new incarnation waits for it."""
    return frozenset(p.unit.connector for p in pending)
