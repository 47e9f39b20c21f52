"""The Kafka clients under a connector, as Kafka Connect lets operators and connectors tune them.

A worker config sets every connector's clients (``producer.*``, ``consumer.*``, ``admin.*``);
a connector config overrides them for its own (``producer.override.*``, ``consumer.override.*``,
``admin.override.*``) where the operator's ``connector.client.config.override.policy`` allows.
The producer is a source task's (and a sink's dead letter queue's), the consumer a sink task's,
the admin client the one that creates a source's topics (KIP-158) and a dead letter queue's.

The keys are the Java clients' own. Each is either honoured, given to the aiokafka client as the
argument of the same meaning (:data:`KEYS`), or refused with the reason (:data:`OWNED`, and a
key aiokafka has no counterpart for): none is accepted and then ignored. Owned keys are those the
task runner must set itself for its promises to hold, as Connect refuses them too (a source
task's transactional id, which fences its zombies; the isolation level that keeps aborted
records from sinks; the deserialisers, which are the converters' job).

A login override (``sasl.jaas.config`` with ``sasl.mechanism``) is honoured: the clients log in
as the connector says, on the listener and with the TLS files the operator gave plugins. The
listener itself (``bootstrap.servers``, ``security.protocol``) and the TLS files are the
operator's alone, and are refused. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

from headrace.sdk.errors import ConfigException


class Client(Enum):
    """A kind of Kafka client a task runs with, by the prefix of its keys."""

    PRODUCER = "producer"
    CONSUMER = "consumer"
    ADMIN = "admin"

    @property
    def prefix(self) -> str:
        """The worker config's prefix: ``producer.``."""
        return f"{self.value}."

    @property
    def override(self) -> str:
        """The connector config's prefix: ``producer.override.``."""
        return f"{self.value}.override."


OVERRIDE_PREFIXES = tuple(c.override for c in Client)

POLICY = "connector.client.config.override.policy"
ALLOWLIST = "connector.client.config.override.allowlist"
POLICIES = ("None", "Principal", "All", "Allowlist")
PRINCIPAL_KEYS = ("security.protocol", "sasl.jaas.config", "sasl.mechanism")
"""What Connect's Principal policy lets a connector override: who its clients are."""

JAAS_CONFIG = "sasl.jaas.config"
SASL_MECHANISM = "sasl.mechanism"


def _whole(least: int) -> Callable[[str], int]:
    def parse(raw: str) -> int:
        text = raw.strip()
        if not re.fullmatch(r"-?\d+", text) or int(text) < least:
            raise ValueError(f"{raw!r} is not a whole number of at least {least}")
        return int(text)

    return parse


def _one_of(*choices: str, to: Mapping[str, Any] | None = None) -> Callable[[str], Any]:
    def parse(raw: str) -> Any:
        text = raw.strip().lower()
        if text not in choices:
            raise ValueError(f"{raw!r} is not one of {', '.join(choices)}")
        return (to or {}).get(text, text)

    return parse


def _text(raw: str) -> str:
    if not raw.strip():
        raise ValueError("empty")
    return raw.strip()


_BOOLEAN = _one_of("true", "false", to={"true": True, "false": False})
_MS, _BYTES, _COUNT = _whole(0), _whole(1), _whole(1)

_ALL = frozenset(Client)
_PRODUCER, _CONSUMER = frozenset({Client.PRODUCER}), frozenset({Client.CONSUMER})


@dataclass(frozen=True)
class Key:
    """A Java client key headrace honours: the aiokafka argument it becomes, how its value
    is read, and which clients take it."""

    argument: str
    parse: Callable[[str], Any]
    clients: frozenset[Client] = _ALL


KEYS: dict[str, Key] = {
    "client.id": Key("client_id", _text),
    "request.timeout.ms": Key("request_timeout_ms", _BYTES),
    "retry.backoff.ms": Key("retry_backoff_ms", _MS),
    "metadata.max.age.ms": Key("metadata_max_age_ms", _MS),
    "connections.max.idle.ms": Key("connections_max_idle_ms", _MS),
    # The producer's.
    "acks": Key("acks", _one_of("all", "-1", to={"-1": "all"}), _PRODUCER),
    "compression.type": Key(
        "compression_type",
        _one_of("none", "gzip", "snappy", "lz4", "zstd", to={"none": None}),
        _PRODUCER,
    ),
    "linger.ms": Key("linger_ms", _MS, _PRODUCER),
    "batch.size": Key("max_batch_size", _BYTES, _PRODUCER),
    "max.request.size": Key("max_request_size", _BYTES, _PRODUCER),
    "transaction.timeout.ms": Key("transaction_timeout_ms", _BYTES, _PRODUCER),
    "enable.idempotence": Key("enable_idempotence", _one_of("true", to={"true": True}), _PRODUCER),
    # The consumer's.
    "max.poll.records": Key("max_poll_records", _COUNT, _CONSUMER),
    "fetch.min.bytes": Key("fetch_min_bytes", _BYTES, _CONSUMER),
    "fetch.max.bytes": Key("fetch_max_bytes", _BYTES, _CONSUMER),
    "fetch.max.wait.ms": Key("fetch_max_wait_ms", _MS, _CONSUMER),
    "max.partition.fetch.bytes": Key("max_partition_fetch_bytes", _BYTES, _CONSUMER),
    "session.timeout.ms": Key("session_timeout_ms", _BYTES, _CONSUMER),
    "heartbeat.interval.ms": Key("heartbeat_interval_ms", _BYTES, _CONSUMER),
    "max.poll.interval.ms": Key("max_poll_interval_ms", _BYTES, _CONSUMER),
    "auto.offset.reset": Key("auto_offset_reset", _one_of("earliest", "latest", "none"), _CONSUMER),
    "check.crcs": Key("check_crcs", _BOOLEAN, _CONSUMER),
    "client.rack": Key("client_rack", _text, _CONSUMER),
    "isolation.level": Key("isolation_level", _one_of("read_committed"), _CONSUMER),
    "group.id": Key("group_id", _text, _CONSUMER),
}
"""Every client key headrace honours, by its Java name."""

# Some honoured keys take fewer values than Java's clients do; the reason, for the message.
_NARROWED = {
    "acks": "headrace's producers are idempotent, which needs acks=all",
    "enable.idempotence": "headrace's producers are idempotent: a retried send never "
    "duplicates a record",
    "isolation.level": "a sink reads only committed records: a failed batch or a fenced "
    "zombie's writes are aborted transactions, which a sink must never deliver",
}

_OPERATORS = "the operator's, for every plugin process (KAFKA_PLUGIN_*)"
OWNED: dict[str, str] = {
    "bootstrap.servers": "the cluster is the operator's: a connector's offsets and status "
    "are kept on it, in the same transactions as its records",
    "security.protocol": f"the listener's protocol goes with bootstrap.servers, {_OPERATORS}",
    "transactional.id": "headrace gives each source task its own, which fences the task's zombies",
    "key.serializer": "records reach the producer as bytes, made by the connector's converters",
    "value.serializer": "records reach the producer as bytes, made by the connector's converters",
    "key.deserializer": "records reach the task through the connector's converters",
    "value.deserializer": "records reach the task through the connector's converters",
    "enable.auto.commit": "a sink's offsets are committed once its task has the records "
    "(flush or pre_commit), never on a timer",
    "auto.commit.interval.ms": "a sink's offsets are committed once its task has the records "
    "(flush or pre_commit), never on a timer",
    "partitioner.class": "a record without a partition goes where Connect's default "
    "partitioner puts it, by its key",
}
"""Keys the task runner owns, with the reason each is refused."""

_TLS = re.compile(r"ssl\..*")

LOGIN_MODULES = {
    "org.apache.kafka.common.security.plain.PlainLoginModule": ("PLAIN",),
    "org.apache.kafka.common.security.scram.ScramLoginModule": ("SCRAM-SHA-256", "SCRAM-SHA-512"),
}
_JAAS = re.compile(r"\s*(?P<module>[\w.$]+)\s+(?P<flag>\w+)(?P<options>.*?);?\s*$", re.DOTALL)
_OPTION = re.compile(r'\s*([\w.-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|(\S+))')


@dataclass(frozen=True)
class Login:
    """Who a connector's clients log in as, instead of the plugins' login."""

    mechanism: str
    username: str
    password: str

    def __repr__(self) -> str:  # never the password
        return f"Login(mechanism={self.mechanism!r}, username={self.username!r})"


@dataclass(frozen=True)
class ClientConfig:
    """What one client is made with beyond the cluster's security: aiokafka arguments, and the
    login that replaces the plugins' one, if any."""

    arguments: Mapping[str, Any]
    login: Login | None = None


def refusal(client: Client, key: str) -> str | None:
    """Why ``key`` cannot be set on this kind of client; None if it can (its value aside)."""
    if key in OWNED:
        return OWNED[key]
    if _TLS.fullmatch(key):
        return f"the TLS files and checks are {_OPERATORS}"
    if key in (JAAS_CONFIG, SASL_MECHANISM):
        return None
    known = KEYS.get(key)
    if known is None:
        return "headrace's Kafka clients have no such setting"
    if client not in known.clients:
        takers = " and ".join(sorted(c.value for c in known.clients))
        return f"a setting of the {takers}, not the {client.value}"
    return None


def parse_login(name: str, jaas: str, mechanism: str | None) -> Login:
    """The login of a ``sasl.jaas.config`` (``name`` is its full key, for messages): a PLAIN or
    SCRAM login module, ``required``, with a username and a password."""
    match = _JAAS.fullmatch(jaas)
    if match is None:
        raise ConfigException(f"{name}: not a JAAS login: <module> required <options>;")
    module = match["module"]
    mechanisms = LOGIN_MODULES.get(module)
    if mechanisms is None:
        raise ConfigException(
            f"{name}: {module} is not a login module headrace's clients speak: "
            f"{' or '.join(LOGIN_MODULES)}, a username and a password"
        )
    if match["flag"] != "required":
        raise ConfigException(f"{name}: the login module's flag must be required")
    options = {  # a quoted value's backslash escapes taken, as Kafka's JAAS parser does
        m[1]: (re.sub(r"\\(.)", r"\1", m[2]) if m[2] is not None else m[3])
        for m in _OPTION.finditer(match["options"])
    }
    for needed in ("username", "password"):
        if not options.get(needed):
            raise ConfigException(f"{name}: the login has no {needed}")
    chosen = (mechanism or mechanisms[0]).strip().upper()
    if chosen not in mechanisms:
        raise ConfigException(
            f"{name}: {module} logs in with {' or '.join(mechanisms)}, not {chosen} "
            f"({SASL_MECHANISM})"
        )
    return Login(chosen, options["username"], options["password"])


def client_config(client: Client, settings: Mapping[str, str], prefix: str) -> ClientConfig:
    """Reads the keys of one client (``settings`` holds them without ``prefix``, which names
    them in messages); ConfigException for the first refused key or value."""
    arguments: dict[str, Any] = {}
    for key in sorted(settings):
        why = refusal(client, key)
        if why is not None:
            raise ConfigException(f"{prefix}{key}: not honoured: {why}")
        known = KEYS.get(key)
        if known is None:
            continue  # the login's keys, read below
        try:
            arguments[known.argument] = known.parse(settings[key])
        except ValueError as exc:
            reason = f"; {_NARROWED[key]}" if key in _NARROWED else ""
            raise ConfigException(f"{prefix}{key}: {exc}{reason}") from None
    login = None
    if JAAS_CONFIG in settings:
        login = parse_login(
            prefix + JAAS_CONFIG, settings[JAAS_CONFIG], settings.get(SASL_MECHANISM)
        )
    elif SASL_MECHANISM in settings:
        raise ConfigException(
            f"{prefix}{SASL_MECHANISM}: a mechanism alone changes no login: give "
            f"{prefix}{JAAS_CONFIG} with it"
        )
    return ClientConfig(arguments, login)


def of(config: Mapping[str, str], prefix: str) -> dict[str, str]:
    """The keys of ``config`` under ``prefix``, without it."""
    return {k[len(prefix) :]: v for k, v in config.items() if k.startswith(prefix)}


def merged(client: Client, worker: Mapping[str, str], connector: Mapping[str, str]) -> ClientConfig:
    """One client's settings for one connector: the worker config's ``producer.*`` (say), then
    the connector's ``producer.override.*`` over them. Both were checked when they were given;
    this raises ConfigException only for one that was not."""
    base = client_config(client, of(worker, client.prefix), client.prefix)
    mine = client_config(client, of(connector, client.override), client.override)
    return ClientConfig({**base.arguments, **mine.arguments}, mine.login or base.login)


def override_policy(raw: str) -> str:
    """The operator's ``connector.client.config.override.policy`` as Connect spells it;
    ValueError for anything else."""
    for policy in POLICIES:
        if raw.strip().lower() == policy.lower():
            return policy
    raise ValueError(f"{POLICY}: {raw!r} is not one of {', '.join(POLICIES)}")


def allowlist(raw: str) -> frozenset[str]:
    """``connector.client.config.override.allowlist`` (KIP-1188): client keys by ``,``."""
    return frozenset(k.strip() for k in raw.split(",") if k.strip())


def refuse_overrides(
    config: Mapping[str, str], policy: str, allowed: frozenset[str] = frozenset()
) -> None:
    """Refuses the client overrides of a connector config that the operator's ``policy`` (with
    its ``allowed`` keys under Allowlist) does not let through, naming the policy, as Connect's
    policies do; then any override headrace does not honour, or with a value it cannot take."""
    for key in sorted(config):
        if not key.startswith(OVERRIDE_PREFIXES):
            continue
        client_key = key.split(".override.", 1)[1]
        permitted = (
            policy == "All"
            or (policy == "Principal" and client_key in PRINCIPAL_KEYS)
            or (policy == "Allowlist" and client_key in allowed)
        )
        if not permitted:
            lets = {
                "None": "none",
                "Principal": f"only {', '.join(PRINCIPAL_KEYS)}",
                "Allowlist": f"only those in {ALLOWLIST} ({', '.join(sorted(allowed)) or 'none'})",
            }[policy]
            raise ConfigException(
                f"{key}: the worker's {POLICY} is {policy}, which lets a connector override {lets}"
            )
    for client in Client:
        client_config(client, of(config, client.override), client.override)
