"""Topic tracking (KIP-558) over the in-memory status topic: what workers record is listed by
connector, a reset and a deletion forget it, and an operator who turned tracking off gets
Connect's refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from headrace.config.commands import Commands
from headrace.config.validation import ConfigRejected, Problem
from headrace.core.model.plugins import PluginDescriptor
from headrace.core.model.status import NO_TOPICS, TopicStatus, apply_topic, encode_topic
from headrace.core.storage.stores import StatusStore
from headrace.core.storage.topiclog import MemoryTopic, memory_logs
from tests.unit.config.memory import GEN, memory_commands

SINK = PluginDescriptor("gen.Sink", "1.0.0", "sink", "gen", "Sink", Path("/g"))


async def service(
    status: MemoryTopic, tracks_topics: bool = True, topic_reset_allowed: bool = True
) -> Commands:
    return await memory_commands(
        status=status,
        plugins=(GEN, SINK),
        tracks_topics=tracks_topics,
        topic_reset_allowed=topic_reset_allowed,
    )


async def worker_records(status: MemoryTopic, *used: tuple[str, str]) -> None:
    """What a worker writes when its tasks tell it of the topics they use."""
    worker = StatusStore(memory_logs(status))
    await worker.start(reader=False)
    for connector, topic in used:
        await worker.report_topic(TopicStatus(topic, connector, 0, 1_700_000_000_000))


async def test_each_connector_lists_the_topics_its_tasks_used_until_reset_or_deleted() -> None:
    status = MemoryTopic("status")
    commands = await service(status)
    await commands.create("src", {"connector.class": "GenConnector"})
    await commands.create("src-2", {"connector.class": "GenConnector"})
    await worker_records(status, ("src", "orders"), ("src", "audit"), ("src-2", "orders"))
    await worker_records(status, ("src", "orders"))  # another task, or the same one restarted

    assert list(await commands.topics.of("src")) == ["audit", "orders"]
    assert list(await commands.topics.of("src-2")) == ["orders"]

    await commands.topics.reset("src")
    assert list(await commands.topics.of("src")) == []
    assert list(await commands.topics.of("src-2")) == ["orders"]

    await commands.delete("src-2")
    await commands.create("src-2", {"connector.class": "GenConnector"})
    assert list(await commands.topics.of("src-2")) == []  # nothing of the one deleted


async def test_an_unknown_connector_s_topics_are_not_found() -> None:
    commands = await service(MemoryTopic("status"))
    with pytest.raises(ConfigRejected) as info:
        await commands.topics.of("nobody")
    assert info.value.problem is Problem.NOT_FOUND


@pytest.mark.parametrize(
    ("enable", "reset", "call", "says"),
    [
        (False, True, "of", "Topic tracking is disabled."),
        (False, True, "reset", "Topic tracking is disabled."),
        (True, False, "reset", "Topic tracking reset is disabled."),
    ],
)
async def test_tracking_the_operator_turned_off_is_refused_as_connect_refuses_it(
    enable: bool, reset: bool, call: str, says: str
) -> None:
    status = MemoryTopic("status")
    commands = await service(status, tracks_topics=enable, topic_reset_allowed=reset)
    await commands.create("src", {"connector.class": "GenConnector"})
    await worker_records(status, ("src", "orders"))
    with pytest.raises(ConfigRejected) as info:
        await getattr(commands.topics, call)("src")
    assert info.value.problem is Problem.FORBIDDEN and str(info.value) == says
    if enable:
        assert list(await commands.topics.of("src")) == ["orders"]  # the refused reset did nothing


def test_names_that_would_share_connect_s_key_are_kept_apart() -> None:
    """In Connect's key form, topic ``a`` of connector ``b-connector-c`` and topic
    ``a-connector-b`` of ``c`` share ``topic-a-connector-b-connector-c``; here each keeps its own,
    and a tombstone forgets only the one it names."""
    one = TopicStatus("a", "b-connector-c", 0, 1)
    two = TopicStatus("a-connector-b", "c", 0, 1)
    (key_one, value_one), (key_two, value_two) = encode_topic(one), encode_topic(two)
    state = apply_topic(apply_topic(NO_TOPICS, key_one, value_one), key_two, value_two)
    assert sorted(state.values(), key=lambda t: t.connector) == [one, two]
    assert list(apply_topic(state, key_one, None).values()) == [two]
    assert apply_topic(state, "status-connector-x", None) is state
