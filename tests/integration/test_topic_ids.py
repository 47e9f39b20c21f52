"""Topic ids from the real broker: a topic created again under its old name is another topic."""

from __future__ import annotations

import uuid

import pytest
from aiokafka import AIOKafkaClient
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from headrace.runtime.topicids import TopicChanged, TopicIdentity, topic_ids
from tests.support import eventually

pytestmark = pytest.mark.kafka


async def test_a_recreated_topic_has_a_new_id_and_stops_the_writes_of_the_old(kafka: str) -> None:
    name = f"ids-{uuid.uuid4().hex[:8]}"
    admin = AIOKafkaAdminClient(bootstrap_servers=kafka)
    client = AIOKafkaClient(bootstrap_servers=kafka)
    await admin.start()
    await client.bootstrap()
    try:
        assert await topic_ids(client, [name]) == {}

        async def found() -> dict[str, str]:
            return await topic_ids(client, [name])

        await admin.create_topics([NewTopic(name, 2, 1)])
        first = await eventually(f"{name}'s id", found)
        assert set(first) == {name} and len(first[name]) == 22  # 16 bytes, base64 unpadded
        identity = TopicIdentity(lambda topics: topic_ids(client, topics))
        await identity.pin([name])
        assert await identity.of(name) == first[name]

        await admin.delete_topics([name])

        async def gone() -> bool:
            return name not in await topic_ids(client, [name])

        await eventually(f"{name} to be deleted", gone)
        with pytest.raises(TopicChanged, match="no longer exists"):
            await identity.of(name)
        await admin.create_topics([NewTopic(name, 2, 1)])
        second = await eventually(f"{name} to exist again", found)
        assert second[name] != first[name]
        with pytest.raises(TopicChanged, match="deleted and created again"):
            await identity.of(name)
        await identity.pin([name])  # what the next assignment does
        assert await identity.of(name) == second[name]
    finally:
        await client.close()
        await admin.close()
