"""The connector lifecycle as commands, shared by every entry point (gRPC, REST, the command
topic's automation, standalone mode). Each command validates against the current state,
appends its events, and returns the state that includes them; bad input raises
:class:`ConfigRejected`.

``Commands`` holds a connector's create, config, state, reads and deletion; the rest are its
parts, each over the same store: ``offsets`` (KIP-875), ``restarts`` (an operator's and the
automatic ones), ``topics`` (KIP-558), ``plugins`` (the installed plugins and a config
validated as one of them) and ``servicecalls`` (what only the cluster's own services ask).
``views`` is a connector as answered, with its secrets hidden.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Collection, Mapping, Sequence

from headrace.config import framework
from headrace.config.commands.offsets import OffsetCommands
from headrace.config.commands.plugins import PluginCommands
from headrace.config.commands.restarts import RestartCommands
from headrace.config.commands.servicecalls import ServiceCalls
from headrace.config.commands.topics import TopicCommands
from headrace.config.commands.views import ConnectorView, masked_view, traces_masked
from headrace.config.hiddenkeys import HiddenKeys
from headrace.config.offsets import ConnectorOffset, OffsetsAdmin
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
from headrace.core.model.configinfo import ConfigInfos, merge
from headrace.core.model.configstate import ConfigState
from headrace.core.model.connectorconfig import requested_version
from headrace.core.model.errors import PluginError
from headrace.core.model.plugins import PluginCatalog, PluginDescriptor
from headrace.core.model.status import StatusState, of_connector
from headrace.core.model.structs import Target
from headrace.core.observability import log
from headrace.core.security import secrets


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
        self.hidden = HiddenKeys(catalog, checks)
        # What only the cluster's own services ask: task configs, session keys, applied commands.
        self.service_calls = ServiceCalls(store, self.type_of)
        # Restarts, an operator's and the automatic ones (headrace.config.restarter).
        self.restarts = RestartCommands(store, self._with_hidden)
        # KIP-875's offsets: read, altered and reset through connector_offsets.
        self.connector_offsets = OffsetCommands(
            store, offsets, checks, lambda: self.catalog, self.get
        )
        # Topic tracking (KIP-558): the worker config's topic.tracking.enable and .allow.reset.
        self.topics = TopicCommands(store, self.get, tracks_topics, topic_reset_allowed)
        # The installed plugins, their keys, and a config validated as one of them.
        self.plugin_calls = PluginCommands(lambda: self.catalog, checks, self.validate)

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
        await self.connector_offsets.initial(name, self.type_of(config), config, entries)

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

    async def get(self, name: str) -> ConnectorView:
        """The connector as answered: its secret values hidden."""
        configs = await self.store.current()
        stored = self._view(name, configs)
        return masked_view(
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
        return masked_view(view, await self._hidden_keys(view.config))

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
        await self.topics.forget(name)

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
        return masked_view(stored, keys), traces_masked(of_connector(statuses, name), hidden)

    async def _with_hidden(self, name: str) -> tuple[ConnectorView, Sequence[str]]:
        """The view as answered, and the secret values of its stored config."""
        stored = self._view(name, await self.store.current())
        return await self._shown(stored), await self.secret_values(stored.config)

    async def current(self) -> None:
        """Returns once everything written to the configs topic so far has been read."""
        await self.store.current()

    async def task_status(self, name: str, task: int) -> tuple[ConnectorView, StatusState]:
        check_task(name, task, await self.store.current())
        return await self.status(name)


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


__all__ = ["Commands", "ConfigRejected", "ConnectorView", "Problem"]
