"""Which topic a name means: the id Kafka gives every topic (KIP-516), which aiokafka cannot read.

A topic deleted and created again keeps its name but gets a new id, and its offsets start at 0
again. A sink that writes exactly once remembers what it wrote by offset, so it must also know
which topic those offsets were of, or it would take the new topic's first records for ones it
wrote already and drop them. :class:`TopicIdentity` gives each write the id of its topic and
refuses a write whose topic changed under the task since its partitions were assigned.

aiokafka speaks Metadata only up to version 5, from before topics had ids; version 10, the first
with them (Kafka 2.8 and later, 4.x included), is written out here for aiokafka's client to send.
"""

from __future__ import annotations

import base64
from collections.abc import Awaitable, Callable, Collection
from io import BytesIO
from typing import Any

from aiokafka.errors import for_code
from aiokafka.protocol.abstract import AbstractType
from aiokafka.protocol.api import Request, RequestStruct, Response
from aiokafka.protocol.types import (
    Boolean,
    CompactArray,
    CompactString,
    Int16,
    Int32,
    Schema,
    TaggedFields,
)

from headrace.sdk.errors import ConnectError

UNKNOWN_TOPIC_OR_PARTITION = 3
ZERO_ID = bytes(16)  # what a broker sends for a topic it has no id for


class Uuid(AbstractType[bytes]):
    """Kafka's uuid: 16 bytes on the wire."""

    @classmethod
    def encode(cls, value: bytes) -> bytes:
        if len(value) != 16:
            raise ValueError(f"a uuid is 16 bytes, not {len(value)}")
        return value

    @classmethod
    def decode(cls, data: BytesIO) -> bytes:
        value = data.read(16)
        if len(value) != 16:
            raise ValueError("buffer underrun decoding a uuid")
        return value


_INT32S = CompactArray(Int32)


class MetadataResponse_v10(Response):
    API_KEY = 3
    API_VERSION = 10
    SCHEMA = Schema(
        ("throttle_time_ms", Int32),
        (
            "brokers",
            CompactArray(
                ("node_id", Int32),
                ("host", CompactString("utf-8")),
                ("port", Int32),
                ("rack", CompactString("utf-8")),
                ("tags", TaggedFields),
            ),
        ),
        ("cluster_id", CompactString("utf-8")),
        ("controller_id", Int32),
        (
            "topics",
            CompactArray(
                ("error_code", Int16),
                ("name", CompactString("utf-8")),
                ("topic_id", Uuid),
                ("is_internal", Boolean),
                (
                    "partitions",
                    CompactArray(
                        ("error_code", Int16),
                        ("partition_index", Int32),
                        ("leader_id", Int32),
                        ("leader_epoch", Int32),
                        ("replica_nodes", _INT32S),
                        ("isr_nodes", _INT32S),
                        ("offline_replicas", _INT32S),
                        ("tags", TaggedFields),
                    ),
                ),
                ("topic_authorized_operations", Int32),
                ("tags", TaggedFields),
            ),
        ),
        ("cluster_authorized_operations", Int32),
        ("tags", TaggedFields),
    )


class MetadataRequest_v10(RequestStruct):
    API_KEY = 3
    API_VERSION = 10
    FLEXIBLE_VERSION = True
    RESPONSE_TYPE = MetadataResponse_v10
    SCHEMA = Schema(
        (
            "topics",
            CompactArray(
                ("topic_id", Uuid), ("name", CompactString("utf-8")), ("tags", TaggedFields)
            ),
        ),
        ("allow_auto_topic_creation", Boolean),
        ("include_cluster_authorized_operations", Boolean),
        ("include_topic_authorized_operations", Boolean),
        ("tags", TaggedFields),
    )


class TopicIdsRequest(Request[MetadataRequest_v10]):
    """Metadata of some topics by name, never creating one."""

    API_KEY = 3

    def __init__(self, topics: Collection[str]) -> None:
        self._topics = sorted(topics)

    def build(self, request_struct_class: type[MetadataRequest_v10]) -> MetadataRequest_v10:
        topics: list[tuple[bytes, str, dict[int, bytes]]] = [
            (ZERO_ID, name, {}) for name in self._topics
        ]
        return request_struct_class(topics, False, False, False, {})


def id_text(raw: bytes) -> str:
    """A topic id as Kafka's tools show it: URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def ids_of(response: Any) -> dict[str, str]:
    """The id of each topic a metadata response names that exists; raises for other errors."""
    found = {}
    for error_code, name, topic_id, *_ in response.topics:
        if error_code == UNKNOWN_TOPIC_OR_PARTITION:
            continue
        if error_code:
            raise for_code(error_code)(f"metadata of topic {name}")
        if topic_id != ZERO_ID:
            found[name] = id_text(topic_id)
    return found


async def topic_ids(client: Any, topics: Collection[str]) -> dict[str, str]:
    """The current id of each of ``topics`` that exists, asked of any broker through an aiokafka
    client (``AIOKafkaClient``, started)."""
    if not topics:
        return {}
    node = client.get_random_node()
    if node is None:
        raise ConnectionError("no Kafka broker is known to ask for topic ids")
    # aiokafka's own calls send this way; it has no public call for a request of one's own.
    return ids_of(await client.send(node, TopicIdsRequest(topics)))


Lookup = Callable[[Collection[str]], Awaitable[dict[str, str]]]


class TopicChanged(ConnectError):
    """A topic was deleted (and maybe created again) while a task held its partitions."""


class TopicIdentity:
    """The ids of the topics one sink task holds, pinned when its partitions are assigned.

    A write asks for its topic's id again and gets it only if it is still the pinned one: records
    read from a topic that was deleted since must never be written as if they were the new
    topic's (which would hide its first records as already written). A topic not pinned yet is
    pinned on its first write.
    """

    def __init__(self, lookup: Lookup) -> None:
        self._lookup = lookup
        self._pinned: dict[str, str] = {}

    async def pin(self, topics: Collection[str]) -> None:
        """Remembers the current ids of newly assigned topics (a topic gone is left unpinned)."""
        found = await self._lookup(topics)
        for topic in topics:
            self._pinned.pop(topic, None)
        self._pinned.update(found)

    def unpin(self, topics: Collection[str]) -> None:
        """Forgets topics the task no longer holds."""
        for topic in topics:
            self._pinned.pop(topic, None)

    async def of(self, topic: str) -> str:
        """The id to write ``topic``'s records under; TopicChanged if the topic is gone or is
        not the one the records were read from."""
        current = (await self._lookup([topic])).get(topic)
        pinned = self._pinned.setdefault(topic, current) if current else self._pinned.get(topic)
        if current is None:
            raise TopicChanged(
                f"topic {topic} no longer exists: the records read from it are not written"
            )
        if pinned != current:
            raise TopicChanged(
                f"topic {topic} was deleted and created again (id {pinned}, now {current}) while "
                "this task held its partitions: the records read from the old topic are not "
                "written; restart the task to read the new one"
            )
        return current
