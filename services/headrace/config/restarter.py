"""The config service's automatic restarts: a loop that looks at every connector that opted in
(``auto.restart.enable``) and restarts its FAILED units when their backoff is over, as an
operator would through the restart call. The policy is ``headrace.core.model.autorestart``; each
attempt, and each recovery, is an event on the configs topic, written through the commands, so
replicas agree on the count and never both restart one attempt.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping

from headrace.config.commands import Commands
from headrace.config.validation import ConfigRejected
from headrace.core.model.autorestart import (
    ENABLE,
    Recovered,
    Restart,
    Shown,
    Step,
    next_step,
    policy_of,
    shown,
)
from headrace.core.model.configstate import Config, ConfigState
from headrace.core.model.status import StatusState, of_connector
from headrace.core.model.structs import State, Target, WorkUnit
from headrace.core.observability import log
from headrace.core.security.sessionkey import now_ms
from headrace.sdk.errors import ConfigException

TICK_S = 0.5


class AutoRestarter:
    """Restarts the FAILED units of connectors that opted in, with backoff."""

    def __init__(self, commands: Commands, clock: Callable[[], int] = now_ms) -> None:
        self._commands = commands
        self._clock = clock
        self._failed_seen: dict[WorkUnit, int] = {}  # since when each unit is seen FAILED
        # The connectors whose config names ``ENABLE``, and the configs they were found in.
        self._opted: dict[str, Config] = {}
        self._opted_from: Mapping[str, Config] | None = None
        self._log = log.get()

    async def run(self) -> None:
        while True:
            try:
                await self.tick()
            except Exception:  # noqa: BLE001 - the next tick tries again; the service goes on
                self._log.exception("auto_restart_tick_failed")
            await asyncio.sleep(TICK_S)

    async def tick(self) -> None:
        store = self._commands.store
        configs, statuses, now = await store.current(), await store.current_status(), self._clock()
        opted = self._opted_in(configs.connectors)
        self._remember_failures(statuses, opted, now)
        for name in opted:
            for unit, step in self._steps(configs, statuses, name, now).items():
                try:
                    if isinstance(step, Restart):
                        self._log.info(
                            "auto_restart_requested",
                            connector=name,
                            task=unit.task,
                            attempt=step.attempt,
                        )
                        await self._commands.restarts.automatic(name, unit.task, step.attempt, now)
                    elif isinstance(step, Recovered):
                        await self._commands.restarts.recovered(name, unit.task)
                except ConfigRejected as exc:  # deleted, paused or stopped meanwhile
                    self._log.info("auto_restart_skipped", connector=name, reason=exc.message)

    def shown(self, configs: ConfigState, statuses: StatusState, name: str) -> dict[int, Shown]:
        """Per task (-1: the connector), what its status says of its automatic restarts; none
        for a connector that did not opt in."""
        if ENABLE not in configs.connectors.get(name, {}):
            return {}  # asked of every connector a list answers: no policy parsed for nothing
        now = self._clock()
        attempts = configs.auto_restarts.get(name, {})
        return {
            unit.task: shown(step, attempts.get(unit.task), now)
            for unit, step in self._steps(configs, statuses, name, now, every=True).items()
        }

    def _opted_in(self, connectors: Mapping[str, Config]) -> Mapping[str, Config]:
        """The connectors whose config names ``ENABLE``, found again only when some config
        changed since the last tick: a tick looks at those alone, so an idle service with
        100,000 connectors, none of them opted in, does not parse 100,000 policies and scan
        300,000 statuses twice a second."""
        if connectors is not self._opted_from:
            self._opted = {name: c for name, c in connectors.items() if ENABLE in c}
            self._opted_from = connectors
        return self._opted

    def _remember_failures(
        self, statuses: StatusState, opted: Mapping[str, Config], now: int
    ) -> None:
        failed = {
            unit
            for name in opted
            for unit, status in of_connector(statuses, name).items()
            if status.state is State.FAILED
        }
        self._failed_seen = {u: self._failed_seen.get(u, now) for u in failed}

    def _steps(
        self,
        configs: ConfigState,
        statuses: StatusState,
        name: str,
        now: int,
        every: bool = False,
    ) -> Mapping[WorkUnit, Step]:
        try:
            policy = policy_of(configs.connectors[name])
        except ConfigException:
            return {}  # refused at create; an older version's config may still hold one
        if not policy.enabled or configs.target_of(name) is not Target.RUNNING:
            return {}
        attempts = configs.auto_restarts.get(name, {})
        steps: dict[WorkUnit, Step] = {}
        for unit, status in of_connector(statuses, name).items():
            last = attempts.get(unit.task)
            failed_since = self._failed_seen.get(unit)
            step = next_step(policy, status.state.value, last, failed_since, now)
            if step is not None or every:
                steps[unit] = step
        return steps
