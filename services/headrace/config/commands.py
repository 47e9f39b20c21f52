"""The connector lifecycle as commands, shared by every entry point (gRPC now; REST and the
topic-driven automation later). Each command validates against the current state, appends its
events, and returns the state that includes them; bad input raises :class:`ConfigRejected`.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

from aiokafka.errors import KafkaError

from headrace.config import framework
from headrace.config.builtins import PluginInfo, builtin_plugins
from headrace.config.groupadmin import GroupInUse, NoSuchPartition
from headrace.config.hiddenkeys import HiddenKeys
from headrace.config.offsets import ConnectorOffset, OffsetsAdmin, as_json
from headrace.config.pluginchecks import PluginChecks
from headrace.config.store import APPLYING, ConfigStore
from headrace.config.validation import (
    Accepted,
    ConfigRejected,
    Problem,
    check_config_size,
    check_exists,
    check_free,
    check_own_group,
    check_size,
    check_task,
)
from headrace.core.model import configlog
from headrace.core.model.autorestart import Attempt, Shown
from headrace.core.model.configinfo import ConfigInfos, KeyInfo, definitions, merge
from headrace.core.model.configstate import AppliedRequest, Config, ConfigState, TaskSetOrigin
from headrace.core.model.connectorconfig import requested_version
from headrace.core.model.errors import PluginError
from headrace.core.model.plugins import PluginCatalog, PluginDescriptor
from headrace.core.model.status import StatusState, UnitStatus, of_connector
from headrace.core.model.structs import CONNECTOR_TASK, State, Target, WorkUnit
from headrace.core.observability import log
from headrace.core.security import secrets, sessionkey
from headrace.isolation.supervisor import plugin_key


@dataclass(frozen=True)
class ConnectorView:
    name: str
    config: Config
    tasks: tuple[Config, ...]
    type: str
    target: Target = Target.RUNNING


@dataclass(frozen=True)
class Signed:
    """An internal call as its signature is checked: the request's deterministic bytes, the
    call's metadata, and the time it arrived (ms)."""

    body: bytes
    metadata: Mapping[str, str]
    at: int


@dataclass(frozen=True)
class RestartPlan:
    """The units a restart asked for, as Kafka Connect plans them (``onlyFailed``,
    ``includeTasks``); they are reported RESTARTING until their worker has restarted them."""

    connector: bool
    tasks: tuple[int, ...]

    @property
    def units(self) -> list[int]:
        return ([CONNECTOR_TASK] if self.connector else []) + list(self.tasks)


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


def plan_restart(
    task_count: int, statuses: StatusState, name: str, *, include_tasks: bool, only_failed: bool
) -> RestartPlan:
    """Which of a connector's units a restart covers: the connector, and with ``include_tasks``
    its tasks; with ``only_failed`` only those that are FAILED."""

    def wanted(unit: WorkUnit) -> bool:
        status = statuses.get(unit)
        return not only_failed or (status is not None and status.state is State.FAILED)

    tasks = range(task_count) if include_tasks else range(0)
    return RestartPlan(
        wanted(WorkUnit.of(name)), tuple(t for t in tasks if wanted(WorkUnit(name, t)))
    )


APPLIED_KEPT_MS = 60 * 60 * 1000
"""How long the record that a command of the command topic was applied is kept: far longer than
the agent takes to keep its answer, after which the answer alone says it."""


ShownRestarts = Callable[[ConfigState, StatusState, str], Mapping[int, Shown]]
"""Per task (-1: the connector), what a status says of its automatic restarts: set by whoever
runs them (``headrace.config.restarter``); none by default."""


class Commands:
    """Lifecycle commands over one store and the installed plugins."""

    def __init__(
        self,
        store: ConfigStore,
        catalog: PluginCatalog,
        offsets: OffsetsAdmin,
        checks: PluginChecks,
        *,
        tracks_topics: bool = True,
        topic_reset_allowed: bool = True,
        operator: framework.Operator,
    ) -> None:
        """``operator``: what the operator set that the checks read (the cluster's name, which
        its sinks' consumer groups carry, among it)."""
        self.store = store
        self.operator = operator
        self.cluster = self.operator.cluster
        self.catalog = catalog
        self.offsets = offsets
        self.checks = checks
        self.restarts_shown: ShownRestarts = lambda configs, statuses, name: {}
        # Fences the transactional ids of a source connector's dropped tasks (KIP-618).
        self.fence: Callable[[str, Sequence[int]], Awaitable[None]] = _fence_nothing
        self.hidden = HiddenKeys(catalog, checks)
        # Topic tracking (KIP-558): the worker config's topic.tracking.enable and .allow.reset.
        self.tracks_topics = tracks_topics
        self.topic_reset_allowed = tracks_topics and topic_reset_allowed

    def plugin_of(self, config: Mapping[str, str]) -> PluginDescriptor | None:
        """The installed connector version ``config`` runs: its class (or alias) and the
        version it asks for; None when no installed version is one it can run."""
        try:
            return self.catalog.resolve(
                config.get("connector.class", ""), requested_version(config)
            )
        except PluginError:
            return None

    def type_of(self, config: Mapping[str, str]) -> str:
        """``source``, ``sink``, or ``unknown`` for a class no installed plugin has."""
        versions = self.catalog.versions_of(config.get("connector.class", ""))
        return versions[-1].type if versions else "unknown"

    def _view(self, name: str, state: ConfigState) -> ConnectorView:
        check_exists(name, state)
        config = state.connectors[name]
        return ConnectorView(
            name, config, state.tasks_of(name), self.type_of(config), state.target_of(name)
        )

    async def create(
        self,
        name: str,
        config: Mapping[str, str],
        initial_state: Target | None = None,
        initial_offsets: Sequence[ConnectorOffset] | None = None,
    ) -> ConnectorView:
        """A new connector; ``initial_state`` PAUSED or STOPPED keeps it from moving data until
        it is resumed (Connect's ``initial_state``). With ``initial_offsets`` (KIP-995), the
        offsets its name still has are forgotten and these written before it is created; the
        config and the entries are checked, and the name found free, before any is."""
        accepted = await self.check(name, config)
        if initial_offsets is not None:
            await self._initial_offsets(name, accepted.config, initial_offsets)
        # A new incarnation: the coordinator tells its units from those of a connector that had
        # the name before, whose deletion may still be on its way to the plugin.
        incarnation = uuid.uuid4().hex
        record = check_size(configlog.connector_configured(name, accepted.config, incarnation))
        # The target state goes first, so that no one sees the connector running meanwhile.
        target = [] if initial_state is None else [configlog.target_state(name, initial_state)]

        async def plan(state: ConfigState) -> list[configlog.Record]:
            check_free(name, state)
            check_own_group(name, accepted.config, state, self.cluster)
            return [*target, record]

        return await self._shown(self._view(name, await self.store.transact(plan)))

    async def _initial_offsets(
        self, name: str, config: Mapping[str, str], entries: Sequence[ConnectorOffset]
    ) -> None:
        check_free(name, await self.store.current())
        kind = self.type_of(config)
        await self._on_group(self.offsets.check(kind, entries))
        if entries:  # as an alteration of a stopped connector's, its connector asked first
            await self._connector_alters(name, kind, config, entries, reset=False)
        await self._on_group(self.offsets.reset(name, kind, config))
        if entries:
            await self._on_group(self.offsets.alter(name, kind, config, entries))

    async def put_config(self, name: str, config: Mapping[str, str]) -> tuple[ConnectorView, bool]:
        """Creates the connector or replaces its whole config; whether it was created."""
        unhidden = await self._unhidden(name, config)
        await self._still_hidden(config, unhidden)
        accepted = await self.check(name, unhidden)
        new_incarnation = uuid.uuid4().hex
        created = False

        async def plan(state: ConfigState) -> list[configlog.Record]:
            nonlocal created
            created = name not in state.connectors
            check_own_group(name, accepted.config, state, self.cluster)
            applying = APPLYING.get()
            if applying is not None:
                applying.created = created  # what its answer says, if it is answered again
            incarnation = new_incarnation if created else state.incarnations.get(name, "")
            return [check_size(configlog.connector_configured(name, accepted.config, incarnation))]

        state = await self.store.transact(plan)
        return await self._shown(self._view(name, state)), created

    async def patch(
        self, name: str, changes: Mapping[str, str], removed: Sequence[str] = ()
    ) -> ConnectorView:
        """Sets the keys in ``changes`` and drops those in ``removed`` (Connect's PATCH, where
        a null value removes a key); the result is validated as a whole config."""
        sent, changes = changes, await self._unhidden(name, changes)

        async def plan(state: ConfigState) -> list[configlog.Record]:
            check_exists(name, state)
            merged = {k: v for k, v in state.connectors[name].items() if k not in removed}
            merged.update(changes)
            await self._still_hidden(sent, merged)
            accepted = await self.check(name, merged)
            check_own_group(name, accepted.config, state, self.cluster)
            incarnation = state.incarnations.get(name, "")
            return [check_size(configlog.connector_configured(name, accepted.config, incarnation))]

        return await self._shown(self._view(name, await self.store.transact(plan)))

    async def validate(self, name: str, config: Mapping[str, str]) -> ConfigInfos:
        """Every key of ``config`` with its errors: the framework's, then the plugin's own (its
        ``config()`` and ``validate()``, asked in a plugin process). Nothing is written."""
        return (await self._validated(name, config))[0]

    async def _validated(
        self, name: str, config: Mapping[str, str]
    ) -> tuple[ConfigInfos, PluginDescriptor | None]:
        check_config_size(config)
        verdict = framework.check(name, config, self.catalog, self.operator)
        if verdict.plugin is None or framework.unsafe(config):
            # An unsafe config (one that sets config providers, say) reaches no plugin process:
            # the plugin's own checks would configure its components from it, and their
            # errors could quote what those providers read.
            infos = merge(config.get("connector.class", ""), verdict.configs)
        else:
            # As Connect puts a request's name into the config it validates (a ConfigDef may
            # require it: MirrorMaker's connectors' do).
            named = {**config, "name": name} if name and "name" not in config else config
            own = await self.checks.validate(verdict.plugin, named)
            infos = merge(verdict.plugin.class_name, verdict.configs, own.configs)
        hidden = await self.hidden.component_keys(config)
        masked = _masked(
            framework.opaque(infos, config, verdict.plugin, self.operator.providers),
            config,
            hidden,
        )
        return masked, verdict.plugin

    async def check(self, name: str, config: Mapping[str, str]) -> Accepted:
        """The config as it is stored, once its validation found no error; else ConfigRejected
        with every error, each naming its key."""
        infos, plugin = await self._validated(name, config)
        framework.refuse(name, config, infos, plugin is not None)
        assert plugin is not None  # an unresolved plugin is an error of connector.class
        return framework.accepted(name, config, plugin)

    async def validate_plugin(self, plugin_name: str, config: Mapping[str, str]) -> ConfigInfos:
        """Connect's validate call: ``config`` checked as a config of the plugin named."""
        named = config.get("connector.class", "").strip()
        if named and not self._same_plugin(named, plugin_name):
            raise ConfigRejected(
                Problem.INVALID,
                f"connector.class: {named!r} does not match the plugin validated, {plugin_name!r}",
            )
        full = {**config, "connector.class": named or plugin_name}
        # As in Connect, a config validated without its name has that error: a connector
        # cannot be created from it as it stands.
        return await self.validate(config.get("name", ""), full)

    def _same_plugin(self, a: str, b: str) -> bool:
        found = {p.class_name for p in self.catalog.versions_of(a)}
        return bool(found & {p.class_name for p in self.catalog.versions_of(b)}) or a == b

    async def plugin_config(self, plugin_name: str, version: str | None) -> list[KeyInfo]:
        """A plugin's own configuration keys (Connect's ``GET .../config``)."""
        try:
            plugin = self.catalog.resolve(plugin_name, version)
        except PluginError as exc:
            raise ConfigRejected(Problem.NO_PLUGIN, str(exc)) from None
        infos = await self.checks.validate(plugin, {}, definition_only=True)
        return list(definitions(infos))

    async def pause(self, name: str) -> None:
        """Stops the connector and its tasks moving data; they are kept, and stay paused
        across restarts of every service until resumed."""
        await self._target(name, Target.PAUSED)

    async def resume(self, name: str) -> None:
        await self._target(name, Target.RUNNING)

    async def stop(self, name: str) -> None:
        """KIP-875's STOPPED: the connector shuts down and its tasks are removed; the config
        stays, and a resume starts it again."""
        await self._target(name, Target.STOPPED)

    async def _target(self, name: str, target: Target) -> None:
        async def plan(state: ConfigState) -> list[configlog.Record]:
            check_exists(name, state)
            records: list[configlog.Record] = []
            if state.target_of(name) is not target:
                records.append(configlog.target_state(name, target))
            if target is Target.STOPPED and state.tasks_of(name):
                records.extend(configlog.task_set(name, []))
            return records

        await self.store.transact(plan)
        log.get().info("connector_target_state", connector=name, target=target.value)

    async def restart(
        self, name: str, *, include_tasks: bool = False, only_failed: bool = False
    ) -> tuple[ConnectorView, StatusState, RestartPlan]:
        """Restarts the connector, and with ``include_tasks`` its tasks (with ``only_failed``
        only the FAILED ones); the status answered shows the restarted units RESTARTING."""
        planned = RestartPlan(connector=False, tasks=())
        statuses: StatusState = {}

        async def plan(state: ConfigState) -> list[configlog.Record]:
            nonlocal planned, statuses
            check_exists(name, state)
            statuses = of_connector(await self.store.current_status(), name)
            planned = plan_restart(
                len(state.tasks_of(name)),
                statuses,
                name,
                include_tasks=include_tasks,
                only_failed=only_failed,
            )
            return [configlog.restart(name, planned.units)] if planned.units else []

        await self.store.transact(plan)
        view, hidden = await self._with_hidden(name)
        return view, _traces_masked(statuses, hidden), planned

    async def auto_restart(self, name: str, task: int, attempt: int, at_ms: int) -> None:
        """Restarts the unit (task -1: the connector) as its ``attempt``-th automatic restart in
        a row; nothing when that attempt was made already (by another replica)."""

        async def plan(state: ConfigState) -> list[configlog.Record]:
            check_exists(name, state)
            if state.target_of(name) is not Target.RUNNING:
                return []
            attempts = dict(state.auto_restarts.get(name, {}))
            last = attempts.get(task)
            if (last.count if last is not None else 0) >= attempt:
                return []
            attempts[task] = Attempt(attempt, at_ms)
            return [configlog.restart(name, [task]), configlog.auto_restarts(name, attempts)]

        await self.store.transact(plan)

    async def auto_restart_recovered(self, name: str, task: int) -> None:
        """Forgets the unit's automatic restarts: it has run long enough since the last."""

        async def plan(state: ConfigState) -> list[configlog.Record]:
            check_exists(name, state)
            attempts = dict(state.auto_restarts.get(name, {}))
            if attempts.pop(task, None) is None:
                return []
            return [configlog.auto_restarts(name, attempts)]

        await self.store.transact(plan)

    async def restart_task(self, name: str, task: int) -> None:
        async def plan(state: ConfigState) -> list[configlog.Record]:
            check_task(name, task, state)
            return [configlog.restart(name, [task])]

        await self.store.transact(plan)

    async def get(self, name: str) -> ConnectorView:
        """The connector as answered: its secret values hidden."""
        configs = await self.store.current()
        stored = self._view(name, configs)
        return _masked_view(
            stored, await self.hidden.of_stored(name, stored.config, configs.connectors)
        )

    async def _hidden_keys(self, config: Mapping[str, str]) -> frozenset[str]:
        """The keys of ``config`` whose values are hidden (``HiddenKeys.of``)."""
        return await self.hidden.of(config)

    async def secret_values(self, config: Mapping[str, str]) -> list[str]:
        """The values of ``config`` that every answer hides (to mask them in a trace)."""
        keys = await self._hidden_keys(config)
        return [v for k, v in config.items() if k in keys]

    async def _shown(self, view: ConnectorView) -> ConnectorView:
        """The view as answered: the values of secret keys hidden in its config and its task
        configs (references alone are shown as written), and remembered, so that this
        service's logs hide them too."""
        return _masked_view(view, await self._hidden_keys(view.config))

    async def _unhidden(self, name: str, config: Mapping[str, str]) -> dict[str, str]:
        """A config sent back as it was answered: a secret key still ``[hidden]`` keeps the
        value stored, so a get then a put changes no secret."""
        configs = await self.store.current()
        stored = configs.connectors.get(name)
        if stored is None or secrets.HIDDEN not in config.values():
            return dict(config)
        keys = await self.hidden.of_stored(name, stored, configs.connectors)  # as answered
        return {
            k: stored[k] if v == secrets.HIDDEN and k in keys and k in stored else v
            for k, v in config.items()
        }

    async def _still_hidden(self, sent: Mapping[str, str], full: Mapping[str, str]) -> None:
        """Refuses a config in which ``[hidden]`` stood for a stored secret that the config as
        a whole (``full``: another ``connector.class``, say) no longer keeps secret: its value
        would then be answered in plain text to whoever reads the connector."""
        kept = [k for k, v in sent.items() if v == secrets.HIDDEN]
        if not kept:
            return
        exposed = sorted(set(kept) - await self._hidden_keys(full))
        if exposed:
            raise ConfigRejected(
                Problem.INVALID,
                f"{exposed[0]}: [hidden] stands for the stored secret, which this config "
                f"({full.get('connector.class', '')}) does not keep secret; give its value",
            )

    async def list(self) -> list[str]:
        return sorted((await self.store.current()).connectors)

    async def delete(self, name: str) -> None:
        async def plan(state: ConfigState) -> list[configlog.Record]:
            check_exists(name, state)
            return configlog.deletion(name, len(state.tasks_of(name)))

        await self.store.transact(plan)
        # What its tasks recorded so far; each worker forgets what it records later, once it
        # has stopped the connector's units there.
        await self._forget_topics(name)

    async def set_cluster_log_level(self, logger: str, level: str) -> None:
        """Sets ``logger`` to ``level`` in every process of the cluster (KIP-976): a record of
        the configs topic, which this service applies on reading it back, the coordinator
        hands to every worker, and each worker to its plugin processes."""
        record = configlog.logger_level(logger, log.log4j_name(level), int(time.time() * 1000))

        async def plan(state: ConfigState) -> list[configlog.Record]:
            refused = log.name_refusal(logger)
            if refused is not None:
                raise ConfigRejected(Problem.INVALID, refused)
            refused = log.kept_refusal(logger, state.log_levels.keys())
            if refused is not None:
                raise ConfigRejected(Problem.CONFLICT, refused)
            return [record]

        await self.store.transact(plan)

    async def topics(self, name: str) -> Sequence[str]:
        """The topics the connector's tasks have used since it was created or its topics were
        last reset (KIP-558); FORBIDDEN when topic tracking is off."""
        self._tracking("Topic tracking is disabled.")
        await self.get(name)
        return await self.store.connector_topics(name)

    async def reset_topics(self, name: str) -> None:
        """Forgets the connector's topics: the list starts again from what its tasks use next,
        as Connect's does. The tombstones first, then a record of the configs topic that the
        coordinator hands every worker, which has the connector's running tasks report their
        topics again. FORBIDDEN when topic tracking or its reset is off."""
        self._tracking("Topic tracking is disabled.")
        if not self.topic_reset_allowed:
            raise ConfigRejected(Problem.FORBIDDEN, "Topic tracking reset is disabled.")
        await self.get(name)
        await self.store.forget_topics(name)
        record = configlog.topics_reset(name, int(time.time() * 1000))

        async def plan(state: ConfigState) -> list[configlog.Record]:
            check_exists(name, state)  # deleted meanwhile: nothing to reset
            return [record]

        await self.store.transact(plan)

    def _tracking(self, refusal: str) -> None:
        if not self.tracks_topics:
            raise ConfigRejected(Problem.FORBIDDEN, refusal)

    async def _forget_topics(self, name: str) -> None:
        try:
            await self.store.forget_topics(name)
        except KafkaError as exc:  # the deletion stands; the list is shown for no connector
            log.get().error("topics_not_forgotten", connector=name, error=repr(exc))

    async def applied(self, request_id: str) -> AppliedRequest | None:
        """The command of the command topic with this request id, if it was applied and its
        record not yet swept."""
        return (await self.store.current()).requests.get(request_id)

    async def sweep_applied(self, now_ms: int, keep_ms: int = APPLIED_KEPT_MS) -> None:
        """Forgets the records of commands applied more than ``keep_ms`` ago: their answers
        are long kept by the automation agent, which answers a command seen again from them."""

        async def plan(state: ConfigState) -> list[configlog.Record]:
            old = [i for i, a in state.requests.items() if a.applied_at_ms < now_ms - keep_ms]
            return [configlog.request_forgotten(i) for i in sorted(old)]

        await self.store.transact(plan)

    async def ensure_session_key(self, now_ms: int, ttl_ms: int = sessionkey.TTL_MS) -> None:
        """Makes a new session key when there is none or the latest has outlived ``ttl_ms``;
        replicas racing to do so write one between them."""

        async def plan(state: ConfigState) -> list[configlog.Record]:
            if not sessionkey.due(state.session_keys, now_ms, ttl_ms):
                return []
            return [configlog.session_key(sessionkey.new_key(now_ms))]

        await self.store.transact(plan)

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
        state = await self.store.current()
        refused = sessionkey.refusal(state.session_keys, signed.body, signed.metadata, signed.at)
        if refused is not None:
            raise ConfigRejected(Problem.UNAUTHENTICATED, f"PutTaskConfigs: {refused}")
        made_from = TaskSetOrigin(config_version, sessionkey.signed_at(signed.metadata))
        written = False
        dropped = range(len(tasks), len(state.tasks_of(name)))
        if dropped and self.type_of(state.connectors.get(name, {})) == "source":
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

        await self.store.transact(plan)
        return written

    async def status(self, name: str) -> tuple[ConnectorView, StatusState]:
        """The connector as answered, and its units' status, with its secret values hidden
        from their traces (a plugin's message may quote one)."""
        configs, statuses = await self.store.current(), await self.store.current_status()
        return await self._status_in(configs, statuses, name)

    async def every_status(self) -> dict[str, tuple[ConnectorView, StatusState]]:
        """What ``status`` answers, for every connector, by name: from one read of both topics
        to their ends, not one per connector (each read asks the broker for its end offsets)."""
        configs, statuses = await self.store.current(), await self.store.current_status()
        return {
            name: await self._status_in(configs, statuses, name)
            for name in sorted(configs.connectors)
        }

    async def _status_in(
        self, configs: ConfigState, statuses: StatusState, name: str
    ) -> tuple[ConnectorView, StatusState]:
        stored = self._view(name, configs)
        keys = await self.hidden.of_stored(name, stored.config, configs.connectors)
        hidden = [v for k, v in stored.config.items() if k in keys]
        return _masked_view(stored, keys), _traces_masked(of_connector(statuses, name), hidden)

    async def _with_hidden(self, name: str) -> tuple[ConnectorView, Sequence[str]]:
        """The view as answered, and the secret values of its stored config."""
        stored = self._view(name, await self.store.current())
        return await self._shown(stored), await self.secret_values(stored.config)

    def auto_restarts(self, name: str, statuses: StatusState) -> Mapping[int, Shown]:
        """What the connector's status says of its units' automatic restarts."""
        return self.restarts_shown(self.store.configs, statuses, name)

    async def read_offsets(self, name: str) -> Sequence[ConnectorOffset]:
        """The connector's offsets as they are stored now (KIP-875)."""
        view = await self.get(name)
        return await self.offsets.read(name, view.type, view.config)

    async def alter_offsets(self, name: str, entries: Sequence[ConnectorOffset]) -> bool:
        """Sets or forgets the offsets of the partitions named; only while STOPPED. The
        connector is asked first (KIP-875's ``alterOffsets``), and may refuse: whether it
        altered what it keeps outside Kafka too."""
        view = await self._stopped(name)
        if not entries:
            raise ConfigRejected(Problem.INVALID, "offsets: name at least one partition to alter")
        await self._on_group(self.offsets.check(view.type, entries))
        handled = await self._connector_alters(name, view.type, view.config, entries, reset=False)
        await self._on_group(self.offsets.alter(name, view.type, view.config, entries))
        return handled

    async def reset_offsets(self, name: str) -> bool:
        """Forgets every offset of the connector; only while STOPPED. The connector is asked
        first, with every partition it has an offset for, and may refuse."""
        view = await self._stopped(name)
        stored = await self.offsets.read(name, view.type, view.config)
        forgotten = [ConnectorOffset(e.partition, None) for e in stored]
        handled = await self._connector_alters(name, view.type, view.config, forgotten, reset=True)
        await self._on_group(self.offsets.reset(name, view.type, view.config))
        return handled

    async def _connector_alters(
        self,
        name: str,
        kind: str,
        config: Mapping[str, str],
        entries: Sequence[ConnectorOffset],
        *,
        reset: bool,
    ) -> bool:
        """A new instance of the connector's plugin asked to alter its offsets to ``entries``."""
        try:
            plugin = self.catalog.resolve(
                config.get("connector.class", ""), requested_version(config)
            )
        except PluginError as exc:
            raise ConfigRejected(Problem.NO_PLUGIN, str(exc)) from None
        return await self.checks.alter_offsets(
            plugin, name, config, as_json(kind, entries), reset=reset
        )

    async def _stopped(self, name: str) -> ConnectorView:
        """The connector, if it is STOPPED and none of its tasks still runs."""
        view = await self.get(name)
        if view.target is not Target.STOPPED or view.tasks:
            raise ConfigRejected(
                Problem.PRECONDITION,
                f"connector {name!r} is {view.target.value}: offsets change only while it is "
                "STOPPED; stop it first",
            )
        statuses = of_connector(await self.store.current_status(), name)
        live = [
            str(unit)
            for unit, status in statuses.items()
            if not unit.is_connector and status.state in (State.RUNNING, State.PAUSED)
        ]
        if live:
            raise ConfigRejected(
                Problem.PRECONDITION,
                f"connector {name!r} is stopping: its tasks {sorted(live)} have not stopped yet",
            )
        return view

    @staticmethod
    async def _on_group(change: Awaitable[None]) -> None:
        try:
            await change
        except GroupInUse as exc:
            raise ConfigRejected(Problem.PRECONDITION, str(exc)) from None
        except NoSuchPartition as exc:
            raise ConfigRejected(Problem.INVALID, f"offsets: {exc}") from None

    def plugins(self, *, connectors_only: bool) -> Sequence[PluginInfo]:
        """Every installed connector version, and unless ``connectors_only`` every version of
        the converters, header converters, transformations and predicates, built-in, from the
        plugin path, or in a Java plugin's location (for its Java connectors).
        A plugin that cannot be used is listed with why: a manifest that could not be read (its
        folder for a name), or a plugin whose process failed to load it when a config of it was
        validated."""
        unloadable = self.checks.broken
        listed = [
            PluginInfo(p.class_name, p.type, p.version, unloadable.get(plugin_key(p), ""))
            for p in self.catalog.plugins
            if p.is_connector or not connectors_only
        ]
        listed += [
            PluginInfo(str(b.folder), "unknown", b.folder.name, b.reason)
            for b in self.catalog.broken
        ]
        if connectors_only:
            return listed
        java = {(c.class_name, c.type, c.version) for c in self.catalog.java_components}
        return [*listed, *(PluginInfo(*c) for c in sorted(java)), *builtin_plugins()]

    async def current(self) -> None:
        """Returns once everything written to the configs topic so far has been read."""
        await self.store.current()

    async def task_status(self, name: str, task: int) -> tuple[ConnectorView, StatusState]:
        check_task(name, task, await self.store.current())
        return await self.status(name)


def _masked_view(view: ConnectorView, keys: frozenset[str]) -> ConnectorView:
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


def _traces_masked(statuses: StatusState, values: Sequence[str]) -> StatusState:
    """The statuses with ``values`` hidden in their traces (the same status where its trace
    has none of them: most have no trace at all)."""
    if not values:
        return statuses
    return {unit: _trace_masked(status, values) for unit, status in statuses.items()}


def _trace_masked(status: UnitStatus, values: Sequence[str]) -> UnitStatus:
    masked = secrets.mask_text(status.trace, values) if status.trace else ""
    return status if masked == status.trace else dataclasses.replace(status, trace=masked)


def _masked(infos: ConfigInfos, config: Mapping[str, str], hidden: Collection[str]) -> ConfigInfos:
    """A validation answer with the values of its PASSWORD keys and of the ``hidden`` ones (a
    component's secret keys) hidden, in their values and in every error too."""
    secret = {c.value.name for c in infos.configs if c.definition.type == "PASSWORD"}
    secret |= set(hidden)
    values = [config[k] for k in secret if k in config]
    if not values:
        return infos
    configs = tuple(
        dataclasses.replace(
            c,
            value=dataclasses.replace(
                c.value,
                value=_shown_value(c.value.value, c.value.name in hidden),
                errors=tuple(secrets.mask_text(e, values) for e in c.value.errors),
            ),
        )
        for c in infos.configs
    )
    return dataclasses.replace(infos, configs=configs)


def _shown_value(value: str | None, secret: bool) -> str | None:
    return value if value is None else secrets.shown(value, secret)


__all__ = ["Commands", "ConfigRejected", "ConnectorView", "Problem", "RestartPlan"]
