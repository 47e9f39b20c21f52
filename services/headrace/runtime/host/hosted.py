"""The units of one plugin version living in this process, and the rules for starting and
stopping them. The gRPC service (``service.py``) is a thin edge over this.

Rules the worker can rely on:

- Starting a unit that already runs with the same config answers as if it had just started
  (a retried call is harmless); with a different config it is a ``UnitConflict``.
  Starting a FAILED unit replaces it (the old one is stopped with ``deleted=False`` first).
- Stopping an unknown unit does nothing (idempotent).
- Calls for one unit are serialised; calls for different units run concurrently.
- A task's start failure is not an error of ``start_task``: it is reported as FAILED on the bus.
- Config provider references are resolved here, as a unit starts (``providers``); a connector's
  task configs go back with the resolved values put back as references (``references.reverse``),
  so none reaches the worker or a topic. The resolved values and the PASSWORD values of the
  plugin's keys and of its components' (``secretkeys``) are registered with
  ``headrace.core.security.secrets``: hidden in logs and traces.
- A clean-up starts a deleted unit that runs nowhere only to stop it with ``deleted=True``: the
  plugin's ``start`` and ``stop(deleted=True)`` are called, and no record moves (a task's loop
  never runs, so it neither polls nor consumes).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
from collections import defaultdict
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from headrace.clients.executor import SqlCheck
from headrace.components import secretkeys, versions
from headrace.core.model.configinfo import (
    ComponentKeys,
    ConfigInfo,
    ConfigInfos,
    KeyInfo,
    ValueInfo,
    key_info,
    value_info,
)
from headrace.core.model.connectorconfig import (
    enforce_tasks_max,
    offsets_topic,
    refuse_unsafe,
    tasks_max,
)
from headrace.core.model.plugins import PluginDescriptor
from headrace.core.model.structs import TopicUsed, WorkUnit
from headrace.core.model.workerconfig import with_worker_converters
from headrace.core.observability import log
from headrace.core.security import secrets
from headrace.core.security.references import BadReference, reverse
from headrace.core.settings import Settings
from headrace.core.storage.stores import OffsetStore
from headrace.runtime import watchdog
from headrace.runtime.converted import Converted
from headrace.runtime.host import javaguard
from headrace.runtime.host.events import EventBus
from headrace.runtime.host.providers import Providers, Resolved
from headrace.runtime.host.units import ConnectorUnit, TaskUnit, task_configs_of
from headrace.runtime.placement import Placement
from headrace.runtime.sink.loop import SinkRunner
from headrace.runtime.source.loop import SourceRunner
from headrace.sdk.config import Type as ConfigType
from headrace.sdk.connector import Connector, ConnectorContext, SinkConnector, SourceConnector
from headrace.sdk.errors import ConnectError
from headrace.sdk.paths import Paths
from headrace.sdk.task import NoOffsets, OffsetReader, SinkTask, SourceTask

FRAMEWORK_SINK_KEYS = ("topics", "topics.regex")


class UnitConflict(ConnectError):
    """A unit with that name already runs with another config."""


class HostClosing(ConnectError):
    """The process is shutting down and starts nothing new."""


StoredOffsets = Callable[[str, Mapping[str, str]], Awaitable[OffsetReader]]
"""Reads a source connector's stored offsets, by its name and config."""


async def no_stored_offsets(name: str, config: Mapping[str, str]) -> OffsetReader:
    """None stored: for a host whose connectors keep no offsets in Kafka (tests)."""
    return NoOffsets()


class HostedPlugin:
    """Connectors and tasks of one plugin version."""

    def __init__(
        self,
        descriptor: PluginDescriptor,
        connector_class: type[Connector],
        settings: Settings,
        stop_timeout: float = 10.0,
        stored_offsets: StoredOffsets | None = None,
        bus: EventBus | None = None,
    ) -> None:
        """``stored_offsets`` reads a source connector's stored offsets as it starts: from the
        cluster's offsets topic (or the connector's own) unless given; ``bus``, where its units
        report, shared with the other plugins of the process, else its own (closed with it)."""
        self.descriptor = descriptor
        self._read_offsets = stored_offsets or self._stored_offsets
        self.connector_class = connector_class
        self.settings = settings
        self.paths = Paths(settings.file_roots)  # what every connector's context allows
        self.providers = Providers.of(settings)
        self._password_keys: frozenset[str] | None = None
        self.stop_timeout = stop_timeout
        self._owns_bus = bus is None
        self.bus = bus or EventBus()
        self._connectors: dict[str, ConnectorUnit] = {}
        self._tasks: dict[WorkUnit, TaskUnit] = {}
        self._locks: defaultdict[WorkUnit, asyncio.Lock] = defaultdict(asyncio.Lock)
        self._closing = False
        self._log = log.get()

    async def start_connector(self, name: str, config: Mapping[str, str]) -> list[dict[str, str]]:
        """Starts the connector with its references resolved; its task configs, with resolved
        values put back as references. ConfigException (a config that sets config providers,
        a reference that cannot be resolved among them), UnitConflict, or the plugin's own
        exception (already reported as FAILED) on failure."""
        async with self._locks[WorkUnit.of(name)]:
            self._refuse_when_closing()
            refuse_unsafe(config)
            resolved = self._guarded(self._resolve(config))
            existing = self._connectors.get(name)
            if existing is not None and not existing.failed:
                if existing.config != resolved.config:
                    raise UnitConflict(f"connector {name} already runs with another config")
                with watchdog.bounded(existing.unit, "task_configs"):
                    configs = task_configs_of(
                        existing.connector, tasks_max(config), enforce_tasks_max(config)
                    )
                return self._stored(existing, configs, config, resolved)
            if existing is not None:
                await existing.stop(deleted=False)
                del self._connectors[name]
            connector = self.connector_class()
            unit = ConnectorUnit(
                name,
                connector,
                resolved.config,
                self.bus,
                self.stop_timeout,
                paths=self.paths,
                exactly_once=self.settings.exactly_once_source,
                stored_offsets=(
                    functools.partial(self._read_offsets, name, resolved.config)
                    if isinstance(connector, SourceConnector)
                    else None
                ),
            )
            self._connectors[name] = unit  # kept when FAILED: a later stop(deleted) reaches it
            try:
                configs = await unit.start()
            except asyncio.CancelledError:
                unit.failed = True  # as for a task (start_task): the next start makes it anew
                raise
            return self._stored(unit, configs, config, resolved)

    async def _stored_offsets(self, name: str, config: Mapping[str, str]) -> OffsetReader:
        """A source connector's stored offsets, read whole now (its context's reader)."""
        store = OffsetStore(self.settings, name, topic=offsets_topic(config, self.settings.cluster))
        await store.load()
        await store.close()
        return store

    def _guarded(self, resolved: Resolved) -> Resolved:
        """A Java connector's config with the keys Connect's connectors read as files or
        places to connect to held to the operator's bounds (``javaguard``): its ``file``
        resolved in the file roots. ConfigException for one past them. Python plugins check
        their own, through their context."""
        if not self.descriptor.is_java:
            return resolved
        return dataclasses.replace(resolved, config=javaguard.checked(resolved.config, self.paths))

    def _resolve(self, config: Mapping[str, str]) -> Resolved:
        """The config resolved by the providers; its secrets registered, to be hidden."""
        resolved = self.providers.resolve(config)
        secret = self._secret_keys() | secretkeys.secret_keys(
            config, secretkeys.local_password_keys
        )
        secrets.register(v for k, v in resolved.config.items() if k in secret)
        return resolved

    def _secret_keys(self) -> frozenset[str]:
        """The plugin's PASSWORD keys (its ``config()`` is the same for every instance)."""
        if self._password_keys is None:
            try:
                keys = self.connector_class().config().keys.values()
            except Exception:  # noqa: BLE001 - its validate and start say what is wrong
                keys = {}.values()
            self._password_keys = frozenset(k.name for k in keys if k.type is ConfigType.PASSWORD)
        return self._password_keys

    def _stored(
        self,
        unit: ConnectorUnit,
        configs: list[dict[str, str]],
        raw: Mapping[str, str],
        resolved: Resolved,
    ) -> list[dict[str, str]]:
        """Task configs as the config service stores them: resolved values put back as their
        references, the framework's keys added. A task config that would carry a resolved
        value fails the connector: it is never stored."""
        try:
            configs = reverse(configs, raw, resolved.config)
        except BadReference as exc:
            unit.fail(exc)
            raise
        return self._with_framework_keys(configs, raw)

    def alter_offsets(
        self, name: str, config: Mapping[str, str], entries: list[dict[str, Any]], reset: bool
    ) -> tuple[bool, str]:
        """KIP-875: asks a new instance of the connector class (not started) to alter, or
        reset, its offsets to ``entries`` (Connect's shape) before the framework writes them:
        whether it altered what it keeps itself, and why it refused ("" when it did not),
        worded as Connect words it."""
        refuse_unsafe(config)
        resolved = self._guarded(self._resolve(config))
        with watchdog.bounded(name, "alter_offsets"):
            return asked_to_alter(self.connector_class(), name, resolved.config, entries, self._log)

    def validate(self, config: Mapping[str, str], definition_only: bool = False) -> ConfigInfos:
        """The plugin's own keys: its ``config()`` definition, and unless ``definition_only``
        each key's value, errors, recommended values and visibility from its ``validate()``.
        A PASSWORD key's value is never echoed back. With components from the plugin path
        loaded here, also what configuring the config's components finds, by key."""
        refuse_unsafe(config)  # checked by the config service too: never configured here
        with watchdog.bounded(config.get("name", "?"), "validate"):
            connector = self.connector_class()
            java_infos = getattr(connector, "java_infos", None)
            if java_infos is not None:  # a Java connector's ConfigDef and validate(), as is
                infos: ConfigInfos = java_infos(config, definition_only)
                if definition_only:
                    return infos
                return _with_errors(infos, javaguard.problems(config, self.paths))
            # As a running one's: so validate() can check what start() would (its paths), and
            # ask the executor whether a query parses (a running one's context does not: its
            # config was validated, and a start must not wait on the executor).
            connector.initialize(
                ConnectorContext(
                    config.get("name", ""),
                    logger=self._log,
                    paths=self.paths,
                    sql=SqlCheck(self.settings),
                )
            )
            definition = connector.config()
            keys = {k.name: key_info(k) for k in definition.keys.values()}
            if definition_only:
                values = [ValueInfo(name) for name in keys]
            else:
                secret = {k.name for k in definition.keys.values() if k.type is ConfigType.PASSWORD}
                component_secret = secretkeys.secret_keys(config, secretkeys.local_password_keys)
                secrets.register(v for k, v in config.items() if k in secret | component_secret)
                values = [value_info(v, v.name in secret) for v in connector.validate(config)]
                if self.descriptor.components:
                    values += [
                        ValueInfo(key, config.get(key), errors=(message,))
                        for key, message in versions.problems(
                            with_worker_converters(config, self.settings.worker_config)
                        )
                    ]
        return ConfigInfos(
            self.descriptor.class_name,
            tuple(ConfigInfo(keys.get(v.name) or KeyInfo(v.name), v) for v in values),
        )

    def component_keys(self) -> list[ComponentKeys]:
        """Each component version loaded here from the plugin path, with the keys of its
        definition, so the config service knows which of them are secret."""
        found = []
        for component in self.descriptor.components:
            definition = secretkeys.definition(component.type, component.class_name)
            keys = None if definition is None else tuple(map(key_info, definition.keys.values()))
            found.append(
                ComponentKeys(component.class_name, component.version, component.type, keys)
            )
        return found

    async def stop_connector(self, name: str, deleted: bool) -> bool:
        """Stops the connector with the deleted flag; whether it was there to stop (nothing
        happens for an unknown name)."""
        async with self._locks[WorkUnit.of(name)]:
            unit = self._connectors.pop(name, None)
            if unit is not None:
                await unit.stop(deleted)
            return unit is not None

    async def start_task(
        self,
        unit: WorkUnit,
        connector_config: Mapping[str, str],
        task_config: Mapping[str, str],
    ) -> None:
        """Starts one task and its loop, both configs resolved; its failures are reported on
        the bus, but for a reference that cannot be resolved or a config that sets config
        providers (ConfigException)."""
        async with self._locks[unit]:
            self._refuse_when_closing()
            refuse_unsafe(connector_config)
            refuse_unsafe(task_config)
            connector_config = self._guarded(self._resolve(connector_config)).config
            task_config = self._guarded(self._resolve(task_config)).config
            existing = self._tasks.get(unit)
            if existing is not None and not existing.failed:
                if existing.task_config != dict(task_config):
                    raise UnitConflict(f"task {unit} already runs another config")
                return
            if existing is not None:
                await existing.stop(deleted=False)
                del self._tasks[unit]
            task = self._task_unit(unit, connector_config, task_config)
            self._tasks[unit] = task
            try:
                await task.start()
            except asyncio.CancelledError:
                # Its caller gave up (the worker's deadline passed while the start waited, on
                # another task's transaction, say): nothing runs, and the next start must not
                # take this one for a running task and answer at once.
                task.failed = True
                raise

    async def stop_task(self, unit: WorkUnit, deleted: bool) -> bool:
        """Stops one task with the deleted flag; whether it was there to stop (nothing happens
        for an unknown task: one the process stopped already, as it shut down, say)."""
        async with self._locks[unit]:
            task = self._tasks.pop(unit, None)
            if task is not None:
                await task.stop(deleted)
            return task is not None

    async def clean_up(
        self, unit: WorkUnit, connector_config: Mapping[str, str], task_config: Mapping[str, str]
    ) -> None:
        """Starts the unit and stops it with ``deleted=True`` at once; see the module docstring.
        A start that fails still gets the stop, as a FAILED unit would (one whose references
        cannot be resolved any more starts with them as written)."""
        async with self._locks[unit]:
            self._refuse_when_closing()
            with contextlib.suppress(BadReference):
                connector_config = self._resolve(connector_config).config
            with contextlib.suppress(BadReference):
                task_config = self._resolve(task_config).config
            if unit.is_connector:
                connector = ConnectorUnit(
                    unit.connector,
                    self.connector_class(),
                    connector_config,
                    self.bus,
                    self.stop_timeout,
                    paths=self.paths,
                    exactly_once=self.settings.exactly_once_source,
                )
                with contextlib.suppress(Exception):  # reported as FAILED; the stop follows
                    await connector.start()
                await connector.stop(deleted=True)
                return
            task = self._task_unit(unit, connector_config, task_config)
            if task.runner is not None:
                try:
                    await task.runner.start(loop=False)
                except Exception as exc:  # noqa: BLE001 - reported as FAILED; the stop follows
                    task.fail(exc)
            await task.stop(deleted=True)

    async def shutdown(self) -> None:
        """Stops every task, then every connector, all with ``deleted=False``."""
        self._closing = True
        await asyncio.gather(*(self.stop_task(unit, False) for unit in list(self._tasks)))
        await asyncio.gather(*(self.stop_connector(n, False) for n in list(self._connectors)))
        if self._owns_bus:
            self.bus.close()

    def _refuse_when_closing(self) -> None:
        if self._closing:
            raise HostClosing("the plugin process is shutting down")

    def forget_topics(self, connector: str) -> None:
        """The connector's topics were reset (KIP-558): its tasks here tell each topic again
        as they next use it."""
        for unit, task in self._tasks.items():
            if unit.connector == connector and task.runner is not None:
                task.runner.forget_topics()

    def _task_unit(
        self,
        unit: WorkUnit,
        connector_config: Mapping[str, str],
        task_config: Mapping[str, str],
    ) -> TaskUnit:
        task = TaskUnit(unit, None, self.bus, self.stop_timeout, task_config)
        try:
            runner = self._runner(unit, connector_config, task_config)
        except Exception as exc:  # noqa: BLE001 - a task that cannot be created is FAILED
            task.fail(exc)
            return task
        runner.on_topic = lambda topic: self.bus.publish(TopicUsed(unit, topic))
        task.runner = runner
        return task

    def _runner(
        self,
        unit: WorkUnit,
        connector_config: Mapping[str, str],
        task_config: Mapping[str, str],
    ) -> SourceRunner | SinkRunner:
        task = self.connector_class().task_class()()
        connector_config = with_worker_converters(connector_config, self.settings.worker_config)
        if isinstance(task, Converted):
            task.connector_config = connector_config
        placement = Placement(
            unit.connector, unit.task, connector_config, task_config, settings=self.settings
        )
        if isinstance(task, SourceTask):
            return SourceRunner(placement, task)
        if isinstance(task, SinkTask):
            return SinkRunner(placement, task)
        raise TypeError(f"{type(task).__qualname__} is neither a SourceTask nor a SinkTask")

    def _with_framework_keys(
        self, configs: list[dict[str, str]], config: Mapping[str, str]
    ) -> list[dict[str, str]]:
        """Sink tasks get the connector's subscription, as Connect hands it to them."""
        if self.descriptor.type != "sink":
            return configs
        extra = {k: config[k] for k in FRAMEWORK_SINK_KEYS if k in config}
        return [{**extra, **c} for c in configs]


def _with_errors(infos: ConfigInfos, errors: Mapping[str, str]) -> ConfigInfos:
    """``infos`` with each of ``errors`` added to its key's (a key it lacks added with it)."""
    if not errors:
        return infos
    configs = [
        dataclasses.replace(
            info,
            value=dataclasses.replace(
                info.value, errors=(*info.value.errors, errors[info.value.name])
            ),
        )
        if info.value.name in errors
        else info
        for info in infos.configs
    ]
    named = {info.value.name for info in infos.configs}
    configs += [
        ConfigInfo(KeyInfo(key), ValueInfo(key, None, errors=(message,)))
        for key, message in errors.items()
        if key not in named
    ]
    return dataclasses.replace(infos, configs=tuple(configs))


def sink_offsets(entries: list[dict[str, Any]]) -> dict[tuple[str, int], int | None]:
    """A sink's entries (Connect's shape) as its ``alter_offsets`` takes them."""
    return {
        (str(e["partition"]["kafka_topic"]), int(e["partition"]["kafka_partition"])): (
            None if e["offset"] is None else int(e["offset"]["kafka_offset"])
        )
        for e in entries
    }


def asked_to_alter(
    connector: Connector,
    name: str,
    config: Mapping[str, str],
    entries: list[dict[str, Any]],
    log: Any,
) -> tuple[bool, str]:
    """The connector's answer to an alteration of its offsets (KIP-875's ``alterOffsets``):
    whether it altered what it keeps itself, and why it refused ("" when it did not), as
    Connect words each refusal: one that does not support it, one that raised ConnectError
    (its message), one that failed otherwise (logged)."""
    kind = "sink" if isinstance(connector, SinkConnector) else "source"
    try:
        if isinstance(connector, SinkConnector):
            handled = connector.alter_offsets(config, sink_offsets(entries))
        else:
            assert isinstance(connector, SourceConnector)
            handled = connector.alter_offsets(
                config, [(e["partition"], e["offset"]) for e in entries]
            )
    except NotImplementedError:
        return False, (
            f"Failed to modify offsets for connector {name} because it doesn't support "
            "external modification of offsets"
        )
    except ConnectError as exc:
        return False, str(exc) or f"Failed to modify offsets for {kind} connector {name}"
    except Exception:
        log.exception("alter_offsets_failed", connector=name)
        return False, f"Failed to modify offsets for {kind} connector {name}"
    return bool(handled), ""
