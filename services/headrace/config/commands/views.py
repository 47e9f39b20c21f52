"""A connector as the config service answers it: its config and its task configs (secret
values hidden once answered), its type, and the state an operator wants it in."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from headrace.core.model.configstate import Config
from headrace.core.model.status import StatusState, UnitStatus
from headrace.core.model.structs import Target
from headrace.core.security import secrets


@dataclass(frozen=True)
class ConnectorView:
    name: str
    config: Config
    tasks: tuple[Config, ...]
    type: str
    target: Target = Target.RUNNING


def masked_view(view: ConnectorView, keys: frozenset[str]) -> ConnectorView:
    """``view`` with the values of ``keys`` hidden in its config and its task configs, and
    remembered (``secrets.register``), so that this service's logs hide them too."""
    if keys.isdisjoint(view.config) and all(keys.isdisjoint(t) for t in view.tasks):
        return view  # nothing to hide: its read-only configs as stored, not copies of them
    secrets.register(v for k, v in view.config.items() if k in keys)
    return dataclasses.replace(
        view,
        config=secrets.mask_config(view.config, keys),
        tasks=tuple(secrets.mask_config(t, keys) for t in view.tasks),
    )


def traces_masked(statuses: StatusState, values: Sequence[str]) -> StatusState:
    """The statuses with ``values`` hidden in their traces (the same status where its trace
    has none of them: most have no trace at all)."""
    if not values:
        return statuses
    return {unit: trace_masked(status, values) for unit, status in statuses.items()}


def trace_masked(status: UnitStatus, values: Sequence[str]) -> UnitStatus:
    masked = secrets.mask_text(status.trace, values) if status.trace else ""
    return status if masked == status.trace else dataclasses.replace(status, trace=masked)
