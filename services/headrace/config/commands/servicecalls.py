"""What only the cluster's own services ask of the config service: a worker's task configs for
a connector it runs (signed with the session key, KIP-507), the session keys themselves, and
the bookkeeping of the command topic's applied commands.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass

from headrace.config.store import ConfigStore
from headrace.config.validation import ConfigRejected, Problem, check_exists
from headrace.core.model import configlog
from headrace.core.model.configstate import AppliedRequest, ConfigState, TaskSetOrigin
from headrace.core.model.structs import Target
from headrace.core.observability import log
from headrace.core.security import sessionkey


@dataclass(frozen=True)
class Signed:
    """An internal call as its signature is checked: the request's deterministic bytes, the
    call's metadata, and the time it arrived (ms)."""

    body: bytes
    metadata: Mapping[str, str]
    at: int


async def _fence_nothing(name: str, tasks: Sequence[int]) -> None:
    """No fencing: for a store without Kafka (tests of the commands alone)."""


def stale_task_set(
    state: ConfigState, name: str, incarnation: str, made_from: TaskSetOrigin
) -> str | None:
    """Why a task set made from ``made_from`` by ``incarnation`` of the connector must not
    replace what is stored, or None: another incarnation, an older config, or not newer than
    the set stored (a replay, or a retry that lost to a later set)."""
    if incarnation != state.incarnations.get(name):
        return f"the task configs are for another incarnation of {name!r} than the current one"
    current = state.config_versions.get(name, 0)
    if made_from.config_version < current:
        return (
            f"the task configs were made from version {made_from.config_version} of {name!r}'s "
            f"config; the current one is version {current}"
        )
    stored = state.task_origins.get(name)
    if stored is not None and made_from <= stored:
        return (
            f"the task configs (config version {made_from.config_version}, signed at "
            f"{made_from.signed_at_ms}) are not newer than those stored (config version "
            f"{stored.config_version}, signed at {stored.signed_at_ms})"
        )
    return None


APPLIED_KEPT_MS = 60 * 60 * 1000
"""How long the record that a command of the command topic was applied is kept: far longer than
the agent takes to keep its answer, after which the answer alone says it."""


class ServiceCalls:
    def __init__(self, store: ConfigStore, type_of: Callable[[Mapping[str, str]], str]) -> None:
        """``type_of``: a config's connector type (``Commands.type_of``)."""
        self._store = store
        self._type_of = type_of
        # Fences the transactional ids of a source connector's dropped tasks (KIP-618).
        self.fence: Callable[[str, Sequence[int]], Awaitable[None]] = _fence_nothing

    async def applied(self, request_id: str) -> AppliedRequest | None:
        """The command of the command topic with this request id, if it was applied and its
        record not yet swept."""
        return (await self._store.current()).requests.get(request_id)

    async def sweep_applied(self, now_ms: int, keep_ms: int = APPLIED_KEPT_MS) -> None:
        """Forgets the records of commands applied more than ``keep_ms`` ago: their answers
        are long kept by the automation agent, which answers a command seen again from them."""

        async def plan(state: ConfigState) -> list[configlog.Record]:
            old = [i for i, a in state.requests.items() if a.applied_at_ms < now_ms - keep_ms]
            return [configlog.request_forgotten(i) for i in sorted(old)]

        await self._store.transact(plan)

    async def ensure_session_key(self, now_ms: int, ttl_ms: int = sessionkey.TTL_MS) -> None:
        """Makes a new session key when there is none or the latest has outlived ``ttl_ms``;
        replicas racing to do so write one between them."""

        async def plan(state: ConfigState) -> list[configlog.Record]:
            if not sessionkey.due(state.session_keys, now_ms, ttl_ms):
                return []
            return [configlog.session_key(sessionkey.new_key(now_ms))]

        await self._store.transact(plan)

    async def put_task_configs(
        self,
        name: str,
        tasks: Sequence[Mapping[str, str]],
        signed: Signed,
        incarnation: str,
        config_version: int,
    ) -> bool:
        """Makes ``tasks`` the connector's live task set; False when it already is, or when the
        connector is paused or stopped (a late answer from a connector shut down meanwhile).
        Only a worker may ask: ``signed`` must carry a signature with the session key.

        The set must be made from what the connector is now, and be newer than the set stored
        (``stale_task_set``): a late retry from a worker that lost the connector, or a signed
        call replayed within the signature's minutes, is refused (PRECONDITION) and changes
        nothing."""
        state = await self._store.current()
        refused = sessionkey.refusal(state.session_keys, signed.body, signed.metadata, signed.at)
        if refused is not None:
            raise ConfigRejected(Problem.UNAUTHENTICATED, f"PutTaskConfigs: {refused}")
        made_from = TaskSetOrigin(config_version, sessionkey.signed_at(signed.metadata))
        written = False
        dropped = range(len(tasks), len(state.tasks_of(name)))
        if dropped and self._type_of(state.connectors.get(name, {})) == "source":
            # Before the smaller set is written, as Connect's leader does: a dropped task
            # still running somewhere can commit nothing after it.
            await self.fence(name, dropped)

        async def plan(state: ConfigState) -> list[configlog.Record]:
            nonlocal written
            check_exists(name, state)
            stale = stale_task_set(state, name, incarnation, made_from)
            if stale is not None:
                raise ConfigRejected(Problem.PRECONDITION, f"PutTaskConfigs: {stale}")
            target = state.target_of(name)
            if target is not Target.RUNNING:
                log.get().info("task_configs_ignored", connector=name, target=target)
                written = False
            else:
                written = [dict(t) for t in state.tasks_of(name)] != [dict(t) for t in tasks]
            return configlog.task_set(name, list(tasks), made_from) if written else []

        await self._store.transact(plan)
        return written
