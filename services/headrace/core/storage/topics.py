"""The cluster's own topics, and how any topic headrace needs comes to exist.

| role | partitions | policy | written by |
| --- | --- | --- | --- |
| configs | 1 | compact | the config service (one partition: the order of events) |
| offsets | 25 | compact | source tasks; the config service when offsets are altered |
| status | 5 | compact | workers |
| assignments | 1 | compact | the active coordinator, in transactions; workers, deletions told |
| leader | 1 | delete, an hour | the active coordinator's lease, in transactions |
| requests | 4 | delete | automation: lifecycle commands, keyed by request id |
| responses | 4 | delete | the config service: each command's answer, keyed by request id |

Partition counts are those of a new cluster; a topic that exists keeps its own (readers ask the
broker), except the configs topic, which must have exactly one partition: every service refuses
to start on one with more. The replication factor is min(3, brokers): the embedded single-node
broker gets 1, a real cluster Connect's default of 3.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from aiokafka.errors import KafkaError, TopicAlreadyExistsError, for_code

from headrace.core.model.errors import TopicLayoutError
from headrace.core.security import kafkalogin
from headrace.core.security.kafkasecurity import KafkaSecurity
from headrace.core.settings import Settings

TOPIC_READY_TIMEOUT_S = 30.0
COMPACT: Mapping[str, str] = {"cleanup.policy": "compact"}
MAX_GENERATION_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class TopicSpec:
    role: str
    partitions: int
    config: Mapping[str, str] = field(default_factory=lambda: COMPACT)


TOPICS = {
    spec.role: spec
    for spec in (
        TopicSpec("configs", 1),
        TopicSpec("offsets", 25),  # Connect's default for offset.storage.partitions
        TopicSpec("status", 5),
        # A generation names every unit of the cluster: room for a large one.
        TopicSpec("assignments", 1, {**COMPACT, "max.message.bytes": str(MAX_GENERATION_BYTES)}),
        TopicSpec("leader", 1, {"cleanup.policy": "delete", "retention.ms": str(3_600_000)}),
        TopicSpec("requests", 4, {"cleanup.policy": "delete"}),
        TopicSpec("responses", 4, {"cleanup.policy": "delete"}),
    )
}


def task_client_id(settings: Settings, connector: str, task: int) -> str:
    """A task's Kafka client id; for a source task also its transactional id, which is Kafka
    Connect's form (``<group>-<connector>-<task>``), so one task has one id across workers."""
    return f"{settings.cluster}-{connector}-{task}"


AUTOMATION_APP = "automation"
"""The automation agent's faust app is ``<cluster>-automation``; its tables' topics start so."""


def internal_topic(topic: str, cluster: str) -> str | None:
    """What ``topic`` is, when it is one no connector may read or write: one of the cluster's
    own (``<cluster>-configs`` and the rest, the automation agent's tables), or Kafka's own
    (``__consumer_offsets``, ``__transaction_state``...); None for any other."""
    if topic.startswith("__"):
        return "one of Kafka's internal topics"
    if topic in {f"{cluster}-{role}" for role in TOPICS}:
        return f"the {topic.removeprefix(cluster + '-')} topic of headrace cluster {cluster}"
    if topic.startswith(f"{cluster}-{AUTOMATION_APP}-"):
        return f"a topic of headrace cluster {cluster}'s automation agent"
    return None


async def ensure_topics(settings: Settings, roles: tuple[str, ...] | None = None) -> None:
    """Creates the cluster's topics that are missing and checks the configs topic's layout."""
    for role in roles or tuple(TOPICS):
        await ensure_cluster_topic(settings, role)


async def ensure_cluster_topic(settings: Settings, role: str) -> int:
    """Makes one of the cluster's own topics exist; its partition count."""
    spec = TOPICS[role]
    name = settings.topic(role)
    count = await ensure_topic(
        settings.bootstrap_servers,
        name,
        spec.partitions,
        spec.config,
        security=settings.kafka_security,
    )
    if role == "configs" and count != 1:
        raise TopicLayoutError(
            f"{name} has {count} partitions; the config topic must have exactly 1"
        )
    return count


async def ensure_topic(
    bootstrap: str,
    name: str,
    partitions: int,
    config: Mapping[str, str] | None = None,
    replication: int | None = None,
    *,
    security: KafkaSecurity | None = None,
    tuning: Mapping[str, Any] | None = None,
) -> int:
    """Creates ``name`` unless it exists (another process creating it first is fine), waits
    until every partition has a leader, and returns the partition count. ``replication`` None
    is as many replicas as there are brokers, up to 3; -1 (as ``partitions`` -1) leaves the
    number to the broker's default. The broker's refusal raises its KafkaError, naming the
    topic. The admin client connects with ``security``, by default the environment's, and is
    made with ``tuning`` (aiokafka's arguments) besides; a login or TLS handshake the broker
    refuses raises KafkaLoginError, saying why."""
    security = security or KafkaSecurity.from_env()
    admin = AIOKafkaAdminClient(**security.client_kwargs(bootstrap), **(tuning or {}))
    await kafkalogin.start(admin, bootstrap, security)
    try:
        if name not in await admin.list_topics():
            if replication is None:
                brokers = len((await admin.describe_cluster())["brokers"])
                replication = max(1, min(3, brokers))
            if -1 in (partitions, replication):
                # The client cannot send -1 for the broker to fill in: ask the broker for it.
                defaults = await _broker_defaults(admin)
                partitions = defaults["num.partitions"] if partitions == -1 else partitions
                if replication == -1:
                    replication = defaults["default.replication.factor"]
            topic = NewTopic(name, partitions, replication, topic_configs=dict(config or {}))
            response = await admin.create_topics([topic])
            for entry in response.topic_errors:
                code = entry[1]
                if code not in (0, TopicAlreadyExistsError.errno):
                    raise for_code(code)(f"creating topic {name}: {entry[2:] or ''}")
        return await _ready_partitions(admin, name)
    finally:
        await admin.close()


async def _broker_defaults(admin: AIOKafkaAdminClient) -> dict[str, int]:
    """The broker's ``num.partitions`` and ``default.replication.factor``."""
    broker = (await admin.describe_cluster())["brokers"][0]["node_id"]
    resource = ConfigResource(ConfigResourceType.BROKER, str(broker))
    [response] = await admin.describe_configs([resource])
    wanted = ("num.partitions", "default.replication.factor")
    return {e[0]: int(e[1]) for r in response.resources for e in r[4] if e[0] in wanted}


async def _ready_partitions(admin: AIOKafkaAdminClient, name: str) -> int:
    deadline = time.monotonic() + TOPIC_READY_TIMEOUT_S
    while True:
        described = await admin.describe_topics([name])
        found = described[0] if described else {}
        partitions = found.get("partitions") or []
        if (
            found.get("error_code") == 0
            and partitions
            and all(p["leader"] >= 0 for p in partitions)
        ):
            return len(partitions)
        if time.monotonic() > deadline:
            raise KafkaError(f"topic {name} has no leaders after {TOPIC_READY_TIMEOUT_S} s")
        await asyncio.sleep(0.1)
