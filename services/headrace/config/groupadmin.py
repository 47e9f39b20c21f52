"""A sink connector's offsets in its consumer group: read, commit, delete (KIP-875).

aiokafka's admin client reads a group's offsets but cannot change them. The group of a stopped
connector has no members, so its offsets are committed the way Kafka's own admin tools do it:
an OffsetCommit outside any generation, which the group coordinator accepts only while the
group is empty. OffsetDelete (KIP-496) and DeleteGroups remove them. Each request goes to the
group's coordinator through aiokafka's client; only OffsetDelete's wire format is written out
here, since aiokafka ships none.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from aiokafka import TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import UnknownTopicOrPartitionError, for_code
from aiokafka.protocol.admin import DeleteGroupsRequest
from aiokafka.protocol.api import Request, RequestStruct, Response
from aiokafka.protocol.commit import OffsetCommitRequest
from aiokafka.protocol.types import Array, Int16, Int32, Schema, String

from headrace.core.security.kafkasecurity import KafkaSecurity

# Errors that say the group still has members: its tasks have not all stopped yet.
GROUP_IN_USE = {25, 22, 68, 86}  # UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, NON_EMPTY_GROUP,
# GROUP_SUBSCRIBED_TO_TOPIC
GROUP_ID_NOT_FOUND = 69


class GroupInUse(Exception):
    """The consumer group has members, so its offsets cannot be changed."""


class OffsetDeleteResponse_v0(Response):
    API_KEY = 47
    API_VERSION = 0
    SCHEMA = Schema(
        ("error_code", Int16),
        ("throttle_time_ms", Int32),
        (
            "topics",
            Array(
                ("name", String("utf-8")),
                ("partitions", Array(("partition_index", Int32), ("error_code", Int16))),
            ),
        ),
    )


class OffsetDeleteRequest_v0(RequestStruct):
    API_KEY = 47
    API_VERSION = 0
    RESPONSE_TYPE = OffsetDeleteResponse_v0
    SCHEMA = Schema(
        ("group_id", String("utf-8")),
        (
            "topics",
            Array(
                ("name", String("utf-8")), ("partitions", Array(Schema(("partition_index", Int32))))
            ),
        ),
    )


class OffsetDeleteRequest(Request[OffsetDeleteRequest_v0]):
    API_KEY = 47

    def __init__(self, group: str, topics: list[tuple[str, list[tuple[int]]]]) -> None:
        self._group = group
        self._topics = topics

    def build(self, request_struct_class: type[OffsetDeleteRequest_v0]) -> OffsetDeleteRequest_v0:
        return request_struct_class(self._group, self._topics)


def _by_topic(partitions: Iterable[TopicPartition]) -> dict[str, list[int]]:
    topics: dict[str, list[int]] = defaultdict(list)
    for tp in sorted(partitions):
        topics[tp.topic].append(tp.partition)
    return topics


class NoSuchPartition(Exception):
    """An offset for a topic partition the cluster does not have: nothing was committed."""


def _raise_for(code: int, group: str, what: str) -> None:
    if code == 0:
        return
    if code in GROUP_IN_USE:
        raise GroupInUse(f"consumer group {group} still has members: {what} refused")
    raise for_code(code)(f"{what} for consumer group {group}")


class GroupAdmin:
    """The offsets of consumer groups on one cluster, asked with ``security`` (by default the
    environment's)."""

    def __init__(self, bootstrap_servers: str, security: KafkaSecurity | None = None) -> None:
        self._bootstrap = bootstrap_servers
        self._security = security or KafkaSecurity.from_env()

    async def _call(self, group: str, request: Request[Any]) -> Any:
        admin = AIOKafkaAdminClient(**self._security.client_kwargs(self._bootstrap))
        await admin.start()
        try:
            coordinator = await admin.find_coordinator(group)
            # aiokafka's own admin calls send this way; it has no public call for these requests.
            return await admin._send_request(request, coordinator)
        finally:
            await admin.close()

    async def check_partitions(self, partitions: Iterable[TopicPartition]) -> None:
        """NoSuchPartition naming the first of these the cluster does not have."""
        wanted = sorted(set(partitions))
        if not wanted:
            return
        admin = AIOKafkaAdminClient(**self._security.client_kwargs(self._bootstrap))
        await admin.start()
        try:
            described = await admin.describe_topics(sorted({tp.topic for tp in wanted}))
        finally:
            await admin.close()
        have = {
            TopicPartition(t["topic"], p["partition"])
            for t in described
            if t["error_code"] == 0
            for p in t["partitions"]
        }
        for tp in wanted:
            if tp not in have:
                raise NoSuchPartition(f"{tp.topic} has no partition {tp.partition}")

    async def offsets(self, group: str) -> dict[TopicPartition, int]:
        """The group's committed offsets (the next record each partition will consume)."""
        admin = AIOKafkaAdminClient(**self._security.client_kwargs(self._bootstrap))
        await admin.start()
        try:
            found = await admin.list_consumer_group_offsets(group)
        finally:
            await admin.close()
        return {tp: meta.offset for tp, meta in found.items() if meta.offset >= 0}

    async def commit(self, group: str, offsets: Mapping[TopicPartition, int]) -> None:
        """Sets the group's offsets for these partitions; GroupInUse while it has members."""
        topics = [
            (topic, [(p, offsets[TopicPartition(topic, p)], "") for p in partitions])
            for topic, partitions in _by_topic(offsets).items()
        ]
        request = OffsetCommitRequest(
            group,
            OffsetCommitRequest.DEFAULT_GENERATION_ID,
            "",
            OffsetCommitRequest.DEFAULT_RETENTION_TIME,
            topics,
        )
        response = await self._call(group, request)
        for topic, partitions in response.topics:
            for partition, code in partitions:
                if code == UnknownTopicOrPartitionError.errno:
                    raise NoSuchPartition(f"{topic} has no partition {partition}")
                _raise_for(code, group, "committing offsets")

    async def delete(self, group: str, partitions: Iterable[TopicPartition]) -> None:
        """Forgets the group's offsets of these partitions; GroupInUse while it has members."""
        topics = [(topic, [(p,) for p in ps]) for topic, ps in _by_topic(partitions).items()]
        if not topics:
            return
        response = await self._call(group, OffsetDeleteRequest(group, topics))
        if response.error_code != GROUP_ID_NOT_FOUND:
            _raise_for(response.error_code, group, "deleting offsets")
        for _, results in response.topics:
            for _, code in results:
                _raise_for(code, group, "deleting offsets")

    async def delete_group(self, group: str) -> None:
        """Deletes the group and every offset it holds; one that does not exist is no error."""
        response = await self._call(group, DeleteGroupsRequest([group]))
        for _, code in response.results:
            if code != GROUP_ID_NOT_FOUND:
                _raise_for(code, group, "deleting the group")
