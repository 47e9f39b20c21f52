"""The framework's own keys of a connector config, read the same way by every service.

The config service checks them before anything is written; the worker and the plugin host read
them again when they run the connector. Each reader raises ``ConfigException`` naming the key,
so a value is refused with one message wherever it is found wrong.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

from headrace.core.model import clientconfig
from headrace.core.settings import Settings
from headrace.sdk.config import topic_name
from headrace.sdk.connector import ConnectorTransactionBoundaries, ExactlyOnceSupport
from headrace.sdk.errors import ConfigException

TASKS_MAX = "tasks.max"
PLUGIN_VERSION = "connector.plugin.version"
PLUGIN_VERSION_ALIAS = "connector.version"  # KIP-891's first name for the key


TASKS_MAX_ENFORCE = "tasks.max.enforce"
CONFIG_ACTION_RELOAD = "config.action.reload"


def enforce_tasks_max(config: Mapping[str, str]) -> bool:
    """``tasks.max.enforce`` (KIP-1004, default true): whether a connector that gives more task
    configs than ``tasks.max`` fails, or runs them all (Connect's deprecated leniency)."""
    return _true_or_false(config, TASKS_MAX_ENFORCE, True)


def config_action_reload(config: Mapping[str, str]) -> str:
    """``config.action.reload``: ``restart`` (the default) or ``none``, what to do when a
    config provider's value in the config changes. headrace resolves references each time a
    unit starts, and its providers announce no changes (no TTLs), so no change ever asks for
    either; the value is checked all the same."""
    raw = config.get(CONFIG_ACTION_RELOAD, "restart").strip().lower() or "restart"
    if raw not in ("restart", "none"):
        raise ConfigException(f"{CONFIG_ACTION_RELOAD}: {raw!r} is not restart or none")
    return raw


def _true_or_false(config: Mapping[str, str], key: str, default: bool) -> bool:
    raw = config.get(key, "").strip().lower()
    if not raw:
        return default
    if raw not in ("true", "false"):
        raise ConfigException(f"{key}: {raw!r} is not true or false")
    return raw == "true"


MAX_TASKS = 1000
"""The most tasks one connector may ask for. Each is a unit the coordinator places, a status
record, a transactional id or a consumer; Connect sets no bound, and a config with a million
would stall the group for every other connector. MirrorMaker's largest run well below this."""


def tasks_max(config: Mapping[str, str]) -> int:
    """``tasks.max`` (default 1) as a whole number from 1 to :data:`MAX_TASKS`."""
    return whole_number(config, TASKS_MAX, 1, minimum=1, maximum=MAX_TASKS)


def whole_number(
    config: Mapping[str, str],
    key: str,
    default: int,
    *,
    minimum: int = 0,
    maximum: int | None = None,
) -> int:
    """The key's value as a whole number from ``minimum`` to ``maximum`` (``default`` when unset
    or empty); ConfigException naming the key otherwise."""
    raw = config.get(key, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigException(f"{key}: {raw!r} is not a whole number") from None
    if value < minimum:
        raise ConfigException(f"{key}: must be at least {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ConfigException(f"{key}: must be at most {maximum}, got {value}")
    return value


def requested_version(config: Mapping[str, str]) -> str | None:
    """The plugin version a config asks for; None means the latest installed."""
    return config.get(PLUGIN_VERSION) or config.get(PLUGIN_VERSION_ALIAS) or None


EXACTLY_ONCE_SUPPORT = "exactly.once.support"
TRANSACTION_BOUNDARY = "transaction.boundary"
TRANSACTION_BOUNDARY_INTERVAL = "transaction.boundary.interval.ms"
OFFSETS_STORAGE_TOPIC = "offsets.storage.topic"
DEFAULT_BOUNDARY_INTERVAL_MS = 60_000
"""Kafka Connect's default when ``transaction.boundary=interval`` names no interval (its
worker's ``offset.flush.interval.ms``)."""


class Boundary(Enum):
    """Where a source task's transactions end (KIP-618's ``transaction.boundary``)."""

    POLL = "poll"  # after every batch poll returns
    INTERVAL = "interval"  # after the first batch once the interval has passed
    CONNECTOR = "connector"  # where the task asks, through its transaction context


@dataclass(frozen=True)
class Transactions:
    """A source connector's exactly-once settings."""

    boundary: Boundary = Boundary.POLL
    interval_s: float = DEFAULT_BOUNDARY_INTERVAL_MS / 1000
    required: bool = False  # exactly.once.support=required
    # False where the worker config's exactly.once.source.support is disabled or preparing:
    # records, then their offsets, at least once (runtime.source.deliveries).
    transactional: bool = True


def offsets_topic(config: Mapping[str, str], cluster: str) -> str | None:
    """A source connector's own offsets topic (KIP-618's ``offsets.storage.topic``), or None
    for the cluster's. ConfigException naming the key for a name Kafka refuses; the config
    service also refuses the cluster's other topics and Kafka's own."""
    raw = config.get(OFFSETS_STORAGE_TOPIC)
    if raw is None or raw.strip() in ("", f"{cluster}-offsets"):
        return None
    topic_name(OFFSETS_STORAGE_TOPIC, raw.strip())
    return raw.strip()


def _choice(config: Mapping[str, str], key: str, allowed: tuple[str, ...]) -> str:
    value = config.get(key, allowed[0]).strip().lower()
    if value not in allowed:
        raise ConfigException(f"{key}: {config[key]!r} is not one of {', '.join(allowed)}")
    return value


def transactions(config: Mapping[str, str], exactly_once: bool = True) -> Transactions:
    """A source connector's ``exactly.once.support`` (requested or required),
    ``transaction.boundary`` (poll, interval or connector) and, with interval only,
    ``transaction.boundary.interval.ms``. Without ``exactly_once`` (the worker config's
    ``exactly.once.source.support`` is not enabled) its offsets are stored after every poll,
    and a key asking for more is refused."""
    required = _choice(config, EXACTLY_ONCE_SUPPORT, ("requested", "required")) == "required"
    boundary = Boundary(_choice(config, TRANSACTION_BOUNDARY, tuple(b.value for b in Boundary)))
    if not exactly_once:
        return _without_transactions(config, required, boundary)
    raw = config.get(TRANSACTION_BOUNDARY_INTERVAL)
    if raw is None:
        return Transactions(boundary, required=required)
    if boundary is not Boundary.INTERVAL:
        raise ConfigException(
            f"{TRANSACTION_BOUNDARY_INTERVAL}: applies only with {TRANSACTION_BOUNDARY}=interval "
            f"(it is {boundary.value})"
        )
    try:
        interval_ms = int(raw)
    except ValueError:
        raise ConfigException(
            f"{TRANSACTION_BOUNDARY_INTERVAL}: {raw!r} is not a whole number of milliseconds"
        ) from None
    if interval_ms < 0:
        raise ConfigException(f"{TRANSACTION_BOUNDARY_INTERVAL}: must be at least 0, got {raw}")
    return Transactions(boundary, interval_ms / 1000, required)


def _without_transactions(
    config: Mapping[str, str], required: bool, boundary: Boundary
) -> Transactions:
    without = "sources run without transactions here (exactly.once.source.support)"
    if required:
        raise ConfigException(f"{EXACTLY_ONCE_SUPPORT}: required, but {without}")
    if boundary is not Boundary.POLL:
        raise ConfigException(f"{TRANSACTION_BOUNDARY}: {boundary.value}, but {without}")
    if TRANSACTION_BOUNDARY_INTERVAL in config:
        raise ConfigException(f"{TRANSACTION_BOUNDARY_INTERVAL}: set, but {without}")
    return Transactions(transactional=False)


def check_support(
    settings: Transactions,
    exactly_once: ExactlyOnceSupport | None,
    boundaries: ConnectorTransactionBoundaries,
) -> None:
    """Refuses settings the connector says, for this config, it cannot honour."""
    if settings.required and exactly_once is not ExactlyOnceSupport.SUPPORTED:
        said = "does not say" if exactly_once is None else "says it does not"
        raise ConfigException(
            f"{EXACTLY_ONCE_SUPPORT}: required, but the connector {said} support exactly-once "
            "delivery with this config"
        )
    if (
        settings.boundary is Boundary.CONNECTOR
        and boundaries is not ConnectorTransactionBoundaries.SUPPORTED
    ):
        raise ConfigException(
            f"{TRANSACTION_BOUNDARY}: connector, but the connector cannot define transaction "
            "boundaries with this config"
        )


CONFIG_PROVIDERS = "config.providers"
JAAS_CONFIG = "sasl.jaas.config"
# JAAS login modules that query a directory (JNDI, LDAP): given an address, they fetch and
# deserialise what it serves. Kafka's own fix for CVE-2023-25194 disallows both by default.
_DIRECTORY_LOGIN_MODULES = ("jndiloginmodule", "ldaploginmodule")


def sets_config_providers(key: str) -> bool:
    """Whether ``key`` sets config providers for whatever reads it: ``config.providers`` (and
    its ``.<name>.class``, ``.<name>.param.*``) under any prefix, since every component and
    embedded client configured from a prefix of the connector's keys (a converter, a
    MirrorMaker cluster's clients, Debezium's schema history) makes its own providers from it."""
    return f".{key}.".find(f".{CONFIG_PROVIDERS}.") >= 0


def refuse_unsafe(config: Mapping[str, str]) -> None:
    """Refuses the inputs behind Kafka Connect's CVEs, with the reason, whatever else is
    allowed: config providers set in a connector config, at any prefix (CVE-2024-31141: one
    could read any file or variable of the worker's), and a JAAS config naming a JNDI or LDAP
    login module, as a client override or a plugin's own key (CVE-2023-25194: it can make the
    worker load and run remote code)."""
    for key in sorted(config):
        if sets_config_providers(key):
            raise ConfigException(
                f"{key}: config providers are the worker's to set, never a connector's: one "
                "set here could read any file or environment variable of the worker "
                "(CVE-2024-31141)"
            )
        if key.endswith(JAAS_CONFIG):
            module = next((m for m in _DIRECTORY_LOGIN_MODULES if m in config[key].lower()), None)
            if module is not None:
                raise ConfigException(
                    f"{key}: names a directory login module ({module}), which can make the "
                    "worker look up and run code from a remote address (CVE-2023-25194)"
                )


@dataclass(frozen=True)
class ClientRules:
    """The operator's rules for a connector's Kafka client overrides: Connect's
    ``connector.client.config.override.policy`` (None by default, as headrace's workers set
    it), the keys its allowlist lets through, and how plugin processes reach Kafka (a login
    override means nothing without SASL)."""

    policy: str = "None"
    allowed: frozenset[str] = frozenset()
    plugins_protocol: str = "PLAINTEXT"
    plugins_use_sasl: bool = False

    @classmethod
    def of(cls, settings: Settings) -> ClientRules:
        plugins = settings.for_plugins().kafka_security
        return cls(
            clientconfig.override_policy(settings.client_override_policy),
            clientconfig.allowlist(settings.client_override_allowlist),
            plugins.protocol,
            plugins.uses_sasl,
        )


def refuse_unhonoured(config: Mapping[str, str], rules: ClientRules) -> None:
    """Refuses the unsafe (``refuse_unsafe``), then the client overrides the operator's
    ``rules`` do not allow or headrace does not honour, each with the reason, so that none is
    accepted and then ignored."""
    refuse_unsafe(config)
    clientconfig.refuse_overrides(config, rules.policy, rules.allowed)
    for client in clientconfig.Client:
        key = client.override + clientconfig.JAAS_CONFIG
        if key in config and not rules.plugins_use_sasl:
            raise ConfigException(
                f"{key}: plugin processes connect to Kafka over {rules.plugins_protocol}, which "
                "has no login to change"
            )
