"""A Kafka Connect worker config, as headrace takes one: the keys it honours, and why it refuses
the others. Pure: the file is read by ``headrace.core.settings``.

A worker properties file (``HEADRACE_WORKER_CONFIG``) holds what Connect's does for the clients
and converters under every connector:

| key | meaning |
| --- | --- |
| ``producer.*``, ``consumer.*``, ``admin.*`` | every connector's clients (``clientconfig``) |
| ``key.converter``, ``value.converter``, ``header.converter`` (and their ``.*`` keys) | the |
| | converters of every connector that names none of its own |
| ``connector.client.config.override.policy`` | which overrides a connector config may set |
| ``connector.client.config.override.allowlist`` | the keys the ``Allowlist`` policy lets through |
| ``topic.tracking.enable`` | whether connectors' topics are recorded (KIP-558; default true) |
| ``topic.tracking.allow.reset`` | whether they may be reset through the API (default true) |
| ``exactly.once.source.support`` | ``enabled`` (headrace's default): sources write in |
| | transactions; ``disabled`` or ``preparing``: without, at least once (``source.deliveries``) |

The rest of a Connect worker's keys are headrace's settings, in the environment, where every
service reads them: such a key is refused naming its variable, and any other key as one headrace
does not honour, so that none is accepted and ignored.
"""

from __future__ import annotations

from collections.abc import Mapping

from headrace.core.model import clientconfig
from headrace.core.model.clientconfig import Client
from headrace.sdk.errors import ConfigException

CONVERTER_KEYS = ("key.converter", "value.converter", "header.converter")
TOPIC_TRACKING = "topic.tracking.enable"
TOPIC_TRACKING_RESET = "topic.tracking.allow.reset"
EXACTLY_ONCE_SOURCE = "exactly.once.source.support"
EXACTLY_ONCE_MODES = ("enabled", "preparing", "disabled")

ELSEWHERE = {
    "bootstrap.servers": "KAFKA_BOOTSTRAP_SERVERS",
    "group.id": "HEADRACE_CLUSTER",
    "config.storage.topic": "HEADRACE_CLUSTER (the topics are <cluster>-configs...)",
    "offset.storage.topic": "HEADRACE_CLUSTER (the topics are <cluster>-offsets...)",
    "status.storage.topic": "HEADRACE_CLUSTER (the topics are <cluster>-status...)",
    "plugin.path": "HEADRACE_PLUGIN_PATH",
    "listeners": "HEADRACE_REST_ADDR",
    "rest.port": "HEADRACE_REST_ADDR",
    "rest.host.name": "HEADRACE_REST_ADDR",
    "security.protocol": "KAFKA_SECURITY_PROTOCOL",
    "sasl.mechanism": "KAFKA_SASL_MECHANISM",
    "sasl.jaas.config": "KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD",
    "config.providers": "HEADRACE_CONFIG_PROVIDERS",
}
"""Connect worker keys whose counterpart is one of headrace's settings."""

_WORKER_REFUSED = {
    "consumer.group.id": "each sink connector consumes in its own group; a connector may "
    "name its own with consumer.override.group.id",
}


def check(config: Mapping[str, str]) -> None:
    """Refuses a worker config headrace cannot honour in full: ConfigException naming the first
    key at fault and why."""
    for key in sorted(config):
        if key in _WORKER_REFUSED:
            raise ConfigException(f"{key}: not honoured in a worker config: {_WORKER_REFUSED[key]}")
        if key.startswith(tuple(c.prefix for c in Client)):
            client = Client(key.split(".", 1)[0])
            inner = key[len(client.prefix) :]
            if inner in (clientconfig.JAAS_CONFIG, clientconfig.SASL_MECHANISM):
                raise ConfigException(
                    f"{key}: not honoured in a worker config: the plugins' login is "
                    "KAFKA_PLUGIN_SASL_USERNAME and KAFKA_PLUGIN_SASL_PASSWORD"
                )
            clientconfig.client_config(client, {inner: config[key]}, client.prefix)
            continue
        if key == clientconfig.POLICY:
            try:
                clientconfig.override_policy(config[key])
            except ValueError as exc:
                raise ConfigException(str(exc)) from None
            continue
        if key == EXACTLY_ONCE_SOURCE:
            if config[key].strip().lower() not in EXACTLY_ONCE_MODES:
                raise ConfigException(
                    f"{key}: {config[key]!r} is not one of {', '.join(EXACTLY_ONCE_MODES)}"
                )
            continue
        if key in (TOPIC_TRACKING, TOPIC_TRACKING_RESET):
            true_or_false(key, config[key])
            continue
        if key == clientconfig.ALLOWLIST or key.startswith(CONVERTER_KEYS):
            continue
        if key in ELSEWHERE:
            raise ConfigException(
                f"{key}: not read from a worker config: headrace's services take it from "
                f"{ELSEWHERE[key]}"
            )
        raise ConfigException(f"{key}: not a worker config key headrace honours")


def exactly_once_source(config: Mapping[str, str]) -> bool:
    """Whether source tasks write their records and offsets in transactions: unless the worker
    config's ``exactly.once.source.support`` says ``disabled``, or ``preparing`` (on a Connect
    worker, the step of a rolling upgrade in which tasks do not use transactions yet)."""
    return config.get(EXACTLY_ONCE_SOURCE, "enabled").strip().lower() == "enabled"


def with_worker_converters(
    config: Mapping[str, str], worker: Mapping[str, str]
) -> Mapping[str, str]:
    """A connector config with the worker config's converter for each role (key, value, header)
    it names none for, as Connect falls back to the worker's: the worker's ``key.converter`` and
    its ``key.converter.*`` keys, under any of those the connector config sets itself."""
    added: dict[str, str] = {}
    for role in CONVERTER_KEYS:
        if role in config or role not in worker:
            continue
        for key, value in worker.items():
            if (key == role or key.startswith(role + ".")) and key not in config:
                added[key] = value
    return {**config, **added} if added else config


def true_or_false(name: str, raw: str) -> bool:
    """A boolean setting as Connect reads one: true or false, in any case; ConfigException
    naming ``name`` for anything else."""
    text = raw.strip().lower()
    if text not in ("true", "false"):
        raise ConfigException(f"{name}: {raw!r} is not true or false")
    return text == "true"
