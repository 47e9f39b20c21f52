"""The cluster's own topics: names, partition counts and policies, and their creation.

Every service calls :func:`ensure_topics` on start. It creates what is missing and refuses to go
on when the configs topic has more than one partition: the config log's order is the order of
events, which only a single partition keeps.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import TopicAlreadyExistsError

from headrace.core.settings import Settings


@dataclass(frozen=True)
class TopicSpec:
    role: str
    partitions: int
    config: dict[str, str]


COMPACT = {"cleanup.policy": "compact"}

TOPICS = (
    TopicSpec("configs", 1, COMPACT),
    TopicSpec("offsets", 10, COMPACT),
    TopicSpec("status", 5, COMPACT),
    TopicSpec("assignments", 1, COMPACT),
)


class TopicLayoutError(RuntimeError):
    """A topic exists with a layout headrace cannot run on."""


async def ensure_topics(settings: Settings, roles: tuple[str, ...] | None = None) -> None:
    """Creates the cluster's topics that are missing and checks the configs topic's layout."""
    specs = [t for t in TOPICS if roles is None or t.role in roles]
    admin = AIOKafkaAdminClient(bootstrap_servers=settings.bootstrap_servers)
    await admin.start()
    try:
        existing = set(await admin.list_topics())
        missing = [t for t in specs if settings.topic(t.role) not in existing]
        for spec in missing:
            # Another service may create it between our listing and now.
            with contextlib.suppress(TopicAlreadyExistsError):
                await admin.create_topics(
                    [
                        NewTopic(
                            settings.topic(spec.role), spec.partitions, 1, topic_configs=spec.config
                        )
                    ]
                )
        if roles is None or "configs" in roles:
            name = settings.topic("configs")
            described = await admin.describe_topics([name])
            count = len(described[0]["partitions"])
            if count != 1:
                raise TopicLayoutError(
                    f"{name} has {count} partitions; the config topic must have exactly 1"
                )
    finally:
        await admin.close()
