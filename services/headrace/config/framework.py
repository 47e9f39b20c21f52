"""The framework's keys of a connector config, each with its verdict, for validate and create.

Connect answers a validate call with the framework's keys (name, class, tasks, converters,
transforms, error handling, topics...) beside the plugin's own, and refuses a create with the
errors of both. This module is the framework's half, pure: each check runs on its own, so every
problem is found, not only the first, and each error is filed under the key it names (a message
``"<key>: ..."``), else under the key its check is about. The checks are the ones the worker and
the plugin host apply again when they run the connector (``headrace.core.model.connectorconfig``,
the runtime's converters, transforms and error policy), so a config refused here would have failed
there, and one accepted here starts.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from headrace.components import retry, versions
from headrace.components.errorpolicy import ErrorPolicy
from headrace.components.retry import RetryPolicy
from headrace.components.topiccreation import topic_creation
from headrace.config.validation import (
    Accepted,
    ConfigRejected,
    Problem,
    check_free,
    check_name,
    check_topics_regex,
)
from headrace.core.model import autorestart
from headrace.core.model.configinfo import (
    ConfigInfo,
    ConfigInfos,
    ValueInfo,
    key_info,
    key_of,
    merge,
)
from headrace.core.model.configstate import ConfigState
from headrace.core.model.connectorconfig import (
    CONFIG_ACTION_RELOAD,
    EXACTLY_ONCE_SUPPORT,
    OFFSETS_STORAGE_TOPIC,
    PLUGIN_VERSION,
    PLUGIN_VERSION_ALIAS,
    TASKS_MAX,
    TASKS_MAX_ENFORCE,
    ClientRules,
    config_action_reload,
    enforce_tasks_max,
    offsets_topic,
    refuse_unhonoured,
    refuse_unsafe,
    requested_version,
    tasks_max,
    transactions,
)
from headrace.core.model.errors import PluginError
from headrace.core.model.plugins import PluginCatalog, PluginDescriptor
from headrace.core.model.workerconfig import exactly_once_source, with_worker_converters
from headrace.core.security import references
from headrace.core.settings import Settings
from headrace.core.storage.topics import internal_topic
from headrace.sdk.config import NO_DEFAULT, ConfigDef, Importance, Type, missing_required
from headrace.sdk.errors import ConfigException

COMMON, TRANSFORMS, ERRORS, SINK, SOURCE, AUTO_RESTART = (
    "Common",
    "Transforms",
    "Error Handling",
    "Sink",
    "Exactly Once Support",
    "Auto Restart",
)


def _common() -> ConfigDef:
    keys = [
        ("name", Type.STRING, None, "Globally unique name of the connector.", COMMON),
        ("connector.class", Type.STRING, None, "The connector plugin, by class or alias.", COMMON),
        (PLUGIN_VERSION, Type.STRING, "", "The plugin version; the latest when empty.", COMMON),
        (TASKS_MAX, Type.INT, 1, "At most this many tasks.", COMMON),
        (TASKS_MAX_ENFORCE, Type.BOOLEAN, True, "Fail a connector making more.", COMMON),
        (CONFIG_ACTION_RELOAD, Type.STRING, "restart", "restart or none.", COMMON),
        ("key.converter", Type.CLASS, "", "Converter of record keys.", COMMON),
        ("key.converter.plugin.version", Type.STRING, "", "Its version.", COMMON),
        ("value.converter", Type.CLASS, "", "Converter of record values.", COMMON),
        ("value.converter.plugin.version", Type.STRING, "", "Its version.", COMMON),
        ("header.converter", Type.CLASS, "", "Converter of header values.", COMMON),
        ("header.converter.plugin.version", Type.STRING, "", "Its version.", COMMON),
        ("transforms", Type.LIST, "", "Aliases of the transformations, in order.", TRANSFORMS),
        ("predicates", Type.LIST, "", "Aliases of the predicates.", TRANSFORMS),
        ("errors.tolerance", Type.STRING, "none", "none or all: failing records.", ERRORS),
        (retry.TIMEOUT, Type.LONG, 0, "ms to retry a RetriableError; -1 forever.", ERRORS),
        (retry.DELAY_MAX, Type.LONG, 60_000, "The longest wait between retries.", ERRORS),
        ("errors.log.enable", Type.BOOLEAN, False, "Log each tolerated error.", ERRORS),
        ("errors.log.include.messages", Type.BOOLEAN, False, "With the record.", ERRORS),
        (
            autorestart.ENABLE,
            Type.BOOLEAN,
            False,
            "Restart FAILED units, with backoff.",
            AUTO_RESTART,
        ),
        (autorestart.MAX_ATTEMPTS, Type.INT, 10, "Attempts in a row, then give up.", AUTO_RESTART),
        (autorestart.BACKOFF, Type.LONG, 30_000, "Wait before the first; doubling.", AUTO_RESTART),
    ]
    return _defined(keys)


def _sink() -> ConfigDef:
    keys = [
        ("topics", Type.LIST, "", "The topics to consume.", SINK),
        ("topics.regex", Type.STRING, "", "A pattern of the topics to consume.", SINK),
        ("errors.deadletterqueue.topic.name", Type.STRING, "", "The DLQ topic.", ERRORS),
        ("errors.deadletterqueue.context.headers.enable", Type.BOOLEAN, False, "", ERRORS),
    ]
    return _defined(keys)


def _source() -> ConfigDef:
    keys = [
        (EXACTLY_ONCE_SUPPORT, Type.STRING, "requested", "requested or required.", SOURCE),
        ("transaction.boundary", Type.STRING, "poll", "poll, interval or connector.", SOURCE),
        (
            OFFSETS_STORAGE_TOPIC,
            Type.STRING,
            "",
            "The connector's own offsets topic; the cluster's when empty.",
            SOURCE,
        ),
    ]
    return _defined(keys)


def _defined(keys: Sequence[tuple[str, Type, Any, str, str]]) -> ConfigDef:
    """A definition of keys given as (name, type, default or None: required, doc, group)."""
    definition = ConfigDef()
    for order, (name, type_, default, doc, group) in enumerate(keys, 1):
        definition = definition.define(
            name,
            type_,
            NO_DEFAULT if default is None else default,
            Importance.HIGH if default is None else Importance.MEDIUM,
            doc,
            group=group,
            order_in_group=order,
        )
    return definition


@dataclass(frozen=True)
class Verdict:
    """The framework's keys with their errors, and the plugin the config resolves to."""

    configs: tuple[ConfigInfo, ...]
    plugin: PluginDescriptor | None


Check = Callable[[], object]


@dataclass(frozen=True)
class Operator:
    """What the operator set that the framework's checks read: the cluster's name (its topics,
    which no connector may use), the worker config (the converters a connector that names none
    gets, exactly-once sources), whether the workers are one standalone process (which keeps
    every source's offsets in its file), what config provider references may read, and the
    rules for connectors' client overrides. The service builds it once from its settings
    (:meth:`of`); the checks themselves read nothing from the environment."""

    cluster: str = "headrace"
    worker_config: Mapping[str, str] = dataclasses.field(default_factory=dict)
    standalone: bool = False
    providers: references.ProviderPolicy = dataclasses.field(
        default_factory=references.ProviderPolicy
    )
    clients: ClientRules = dataclasses.field(default_factory=ClientRules)

    @classmethod
    def of(cls, settings: Settings) -> Operator:
        return cls(
            settings.cluster,
            settings.worker_config,
            bool(settings.offsets_addr),
            settings.provider_policy(),
            ClientRules.of(settings),
        )

    @property
    def exactly_once_source(self) -> bool:
        return exactly_once_source(self.worker_config)


def _checks(
    name: str,
    config: Mapping[str, str],
    plugin: PluginDescriptor | None,
    resolution: versions.Resolution,
    operator: Operator,
) -> list[tuple[str, Check]]:
    checks: list[tuple[str, Check]] = [
        ("name", lambda: check_name(name) if name or "name" in config else _missing("name")),
        (TASKS_MAX, lambda: tasks_max(config)),
        (TASKS_MAX_ENFORCE, lambda: enforce_tasks_max(config)),
        (CONFIG_ACTION_RELOAD, lambda: config_action_reload(config)),
    ]
    if not (resolution.components or resolution.problems or (plugin and plugin.is_java)):
        # With components from the plugin path, it is the plugin process that configures
        # them all (their code runs nowhere else): ``HostedPlugin.validate``. With a version
        # that cannot be had, that problem is the one to tell.
        # A role the config names no converter for gets the worker config's, as units do.
        checks += versions.checks(with_worker_converters(config, operator.worker_config))
    checks += [
        ("errors.tolerance", lambda: ErrorPolicy.from_config(config)),
        ("connector.class", lambda: refuse_unhonoured(config, operator.clients)),
        (autorestart.ENABLE, lambda: autorestart.policy_of(config)),
        (retry.TIMEOUT, lambda: RetryPolicy.from_config(config)),
    ]
    cluster = operator.cluster
    checks.append((DLQ_TOPIC, lambda: _not_internal(config, DLQ_TOPIC, cluster)))
    if plugin is not None and plugin.type == "sink":
        checks.append(("topics", lambda: _one_subscription(config)))
        checks.append(("topics", lambda: _not_internal(config, "topics", cluster)))
    if plugin is not None and plugin.type == "sink":
        checks.append(("topic.creation.groups", lambda: _no_topic_creation(config)))
    if plugin is not None and plugin.type == "source":
        exactly_once = operator.exactly_once_source
        checks.append((EXACTLY_ONCE_SUPPORT, lambda: transactions(config, exactly_once)))
        checks.append((OFFSETS_STORAGE_TOPIC, lambda: _own_offsets_topic(config, operator)))
        checks.append(("topic.creation.groups", lambda: topic_creation(config)))
    return checks


DLQ_TOPIC = "errors.deadletterqueue.topic.name"


def _not_internal(config: Mapping[str, str], key: str, cluster: str) -> None:
    """Refuses a key naming a topic no connector may read or write: the cluster's own
    (configs, commands...) or Kafka's. A sink reading the configs topic would read the session
    key; a dead letter queue on the requests topic would make a poison record a command."""
    for topic in (t.strip() for t in config.get(key, "").split(",")):
        what = internal_topic(topic, cluster) if topic else None
        if what is not None:
            raise ConfigException(f"{key}: {topic} is {what}; no connector may use it")


def _own_offsets_topic(config: Mapping[str, str], operator: Operator) -> None:
    """A source's own offsets topic: a name Kafka takes, none of the cluster's other topics
    (its own offsets topic is the default) and none of Kafka's."""
    cluster = operator.cluster
    topic = offsets_topic(config, cluster)
    if topic is not None and operator.standalone:
        raise ConfigException(
            f"{OFFSETS_STORAGE_TOPIC}: {topic!r}: a standalone worker keeps every connector's "
            "source offsets in its offsets file"
        )
    if topic is not None:
        _not_internal(config, OFFSETS_STORAGE_TOPIC, cluster)


def _no_topic_creation(config: Mapping[str, str]) -> None:
    for key in sorted(config):
        if key.startswith("topic.creation."):
            raise ConfigException(f"{key}: only source connectors create the topics they write")


def _one_subscription(config: Mapping[str, str]) -> None:
    has_topics = bool(config.get("topics", "").strip())
    has_regex = bool(config.get("topics.regex", "").strip())
    if has_topics == has_regex:
        raise ConfigException(
            "topics: a sink connector needs exactly one of topics or topics.regex"
        )
    if has_regex:
        check_topics_regex(config["topics.regex"])


def unsafe(config: Mapping[str, str]) -> bool:
    """Whether the config holds what ``refuse_unsafe`` refuses: then no plugin process is
    asked about it."""
    try:
        refuse_unsafe(config)
    except ConfigException:
        return True
    return False


def _missing(key: str) -> None:
    """A required key with no default that a config to validate leaves out, said as Connect
    says it (a connector's name comes with the request everywhere else)."""
    raise ConfigException(missing_required(key))


def _owner(message: str, fallback: str, keys: set[str]) -> str:
    """The key a message names at its start (``"<key>: ..."``): one of ``keys``, or a topic
    creation key (their names are the user's: ``topic.creation.<group>.<key>``); else
    ``fallback``."""
    named = message.split(":", 1)[0].strip()
    created = named.startswith("topic.creation.") and " " not in named
    return named if created else key_of(message, fallback, keys)


def check(
    name: str, config: Mapping[str, str], catalog: PluginCatalog, operator: Operator
) -> Verdict:
    """Every framework key of ``config``, each with the errors found in it, as ``operator``'s
    settings have them; the plugin comes with the component versions from the plugin path its
    config names."""
    errors: dict[str, list[str]] = {}
    plugin: PluginDescriptor | None = None
    if not config.get("connector.class", "").strip():
        errors["connector.class"] = ["connector.class: missing; name the plugin to run"]
    else:
        plugin = _resolve(config, catalog, errors)
    # A Java connector's converters, transformations and predicates are Java classes, made and
    # checked in its JVM with Connect's own rules (``HostedPlugin.validate``), not here.
    java = plugin is not None and plugin.is_java
    resolution = versions.Resolution((), ()) if java else versions.resolve(config, catalog)
    for key, message in resolution.problems:
        errors.setdefault(key, []).append(message)
    if plugin is not None and not resolution.problems:
        # Checked in the plugin process, with these loaded (``HostedPlugin.validate``); not
        # when one cannot be had: the problem is that, and the rest waits for its fix.
        plugin = dataclasses.replace(plugin, components=resolution.components)
    definition = _definition(plugin)
    keys = set(definition.keys) | set(config)
    if "name" in config and config["name"] != name:
        errors.setdefault("name", []).append(
            f"name: the config says {config['name']!r} but the connector is {name!r}"
        )
    for key, run in _checks(name, config, plugin, resolution, operator):
        try:
            run()
        except (ConfigException, ConfigRejected) as exc:
            message = exc.message if isinstance(exc, ConfigRejected) else str(exc)
            errors.setdefault(_owner(message, key, keys), []).append(message)
    values = {k.name: config.get(k.name) for k in definition.keys.values()}
    values["name"] = name or None
    infos = [
        ConfigInfo(
            key_info(k), ValueInfo(k.name, values[k.name], (), tuple(errors.pop(k.name, ())))
        )
        for k in definition.keys.values()
    ]
    # Errors of keys outside the definition (a transform's own keys, an override...).
    infos += [
        ConfigInfo(
            key_info(ConfigDef().define(k, Type.STRING, "").keys[k]),
            ValueInfo(k, config.get(k), (), tuple(e)),
        )
        for k, e in errors.items()
    ]
    return Verdict(tuple(infos), plugin)


def _resolve(
    config: Mapping[str, str], catalog: PluginCatalog, errors: dict[str, list[str]]
) -> PluginDescriptor | None:
    """The plugin the config names, or None with the error filed under the key at fault."""
    version = requested_version(config)
    try:
        return catalog.resolve(config["connector.class"].strip(), version)
    except PluginError as exc:
        key = PLUGIN_VERSION if version and _known(catalog, config) else "connector.class"
        errors.setdefault(key, []).append(str(exc))
        return None


def _known(catalog: PluginCatalog, config: Mapping[str, str]) -> bool:
    return bool(catalog.versions_of(config.get("connector.class", "").strip()))


def _definition(plugin: PluginDescriptor | None) -> ConfigDef:
    definition = _common()
    extra = _sink() if plugin is not None and plugin.type == "sink" else None
    if plugin is not None and plugin.type == "source":
        extra = _source()
    for key in extra.keys.values() if extra is not None else ():
        definition = ConfigDef({**definition.keys, key.name: key})
    return definition


def framework_keys(plugin: PluginDescriptor | None) -> tuple[str, ...]:
    """The keys the framework reads for a connector of ``plugin`` (its type's)."""
    return (*_definition(plugin).keys, PLUGIN_VERSION_ALIAS)


def opaque(
    infos: ConfigInfos,
    config: Mapping[str, str],
    plugin: PluginDescriptor | None,
    policy: references.ProviderPolicy,
) -> ConfigInfos:
    """The validation of a config whose values may hold config provider references: a key
    holding one is checked for its references alone (syntax, provider, path or name; the
    operator's policy, ``HEADRACE_CONFIG_PROVIDER*`` of this service, which should be the
    workers'), since what it resolves to is known only where the unit starts, which checks it
    again. A framework key never takes one. Keys the answer did not list are added."""
    found = references.problems(config, policy, framework_keys(plugin))
    if not found:
        return infos
    configs = [
        dataclasses.replace(
            c, value=dataclasses.replace(c.value, errors=tuple(found.pop(c.value.name)))
        )
        if c.value.name in found
        else c
        for c in infos.configs
    ]
    configs += [
        ConfigInfo(
            key_info(ConfigDef().define(k, Type.STRING, "").keys[k]),
            ValueInfo(k, config.get(k), (), tuple(e)),
        )
        for k, e in found.items()
        if e
    ]
    return dataclasses.replace(infos, configs=tuple(configs))


SHOWN_NAME_CHARS = 80
"""How much of a refused connector's name a message quotes: a name refused for its length is
no use quoted whole (and would not fit in a gRPC status)."""


def refuse(name: str, config: Mapping[str, str], infos: ConfigInfos, resolved: bool) -> None:
    """ConfigRejected with every error of a validation, each naming its key: NO_PLUGIN when the
    plugin named is not installed, else INVALID. Nothing for a config without errors."""
    if not infos.error_count:
        return
    named = bool(config.get("connector.class", "").strip())
    problem = Problem.NO_PLUGIN if named and not resolved else Problem.INVALID
    listed = "\n".join(f"- {e}" for e in infos.errors())
    shown = name if len(name) <= SHOWN_NAME_CHARS else name[:SHOWN_NAME_CHARS] + "..."
    raise ConfigRejected(
        problem,
        f"the config of {shown!r} has {infos.error_count} error(s); the validate call shows "
        f"them by key:\n{listed}",
    )


def accepted(name: str, config: Mapping[str, str], plugin: PluginDescriptor) -> Accepted:
    """A checked config as it is stored: with its name."""
    return Accepted(name, {**config, "name": name}, plugin)


def check_config(
    name: str, config: Mapping[str, str], catalog: PluginCatalog, operator: Operator
) -> Accepted:
    """The framework's keys of a config checked on their own (no plugin code, no look at other
    connectors); ConfigRejected with every error."""
    verdict = check(name, config, catalog, operator)
    refuse(name, config, merge("", verdict.configs), verdict.plugin is not None)
    assert verdict.plugin is not None  # an unresolved plugin is an error of connector.class
    return accepted(name, config, verdict.plugin)


def check_create(
    name: str,
    config: Mapping[str, str],
    catalog: PluginCatalog,
    state: ConfigState,
    operator: Operator,
) -> Accepted:
    """``check_config``, and that the name is free."""
    found = check_config(name, config, catalog, operator)
    check_free(name, state)
    return found
