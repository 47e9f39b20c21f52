"""A command of the command topic is applied once per request id: its change and the record that
it was applied are written together, a command found applied is answered without being applied
again, and a request id travels under its own record key only. On the in-memory configs topic,
with a plugin process's answers stood in for."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from headrace.config.commands import Commands
from headrace.config.grpc_api import ConfigCalls
from headrace.config.store import APPLYING, AlreadyApplied, Applying
from headrace.config.validation import ConfigRejected
from headrace.core.model import configlog
from headrace.core.storage.topiclog import MemoryTopic
from headrace.v1 import config_pb2
from tests.unit.config.memory import memory_commands


@pytest.fixture
def configs() -> MemoryTopic:
    return MemoryTopic("configs")


@pytest.fixture
async def commands(configs: MemoryTopic) -> Commands:
    return await memory_commands(configs)


@pytest.fixture
def calls(commands: Commands) -> ConfigCalls:
    return ConfigCalls(commands)


def create(name: str) -> config_pb2.CreateConnectorRequest:
    return config_pb2.CreateConnectorRequest(name=name, config={"connector.class": "Gen"})


@contextmanager
def applying(request_id: str, method: str, connector: str) -> Iterator[None]:
    token = APPLYING.set(Applying(request_id, method, connector))
    try:
        yield
    finally:
        APPLYING.reset(token)


async def test_a_change_made_for_a_command_is_written_with_the_record_that_it_was_applied(
    calls: ConfigCalls, configs: MemoryTopic
) -> None:
    with applying("r1", "CreateConnector", "c"):
        await calls.CreateConnector(create("c"))
    keys = [r.key for r in configs.records]
    assert keys[-1] == configlog.request_key("r1") and "connector-c" in keys
    applied = await calls.applied("r1")
    assert applied is not None and (applied.method, applied.connector) == ("CreateConnector", "c")
    # Read again after a crash: answered as it was, and nothing is applied twice.
    before = len(configs.records)
    again = await calls.replayed("CreateConnector", applied)
    assert isinstance(again, config_pb2.ConnectorInfo) and again.name == "c"
    assert len(configs.records) == before
    with pytest.raises(ConfigRejected):
        await calls.CreateConnector(create("c"))  # what applying it again would have said


async def test_a_create_or_update_found_applied_says_whether_it_created(
    calls: ConfigCalls,
) -> None:
    put = config_pb2.PutConnectorConfigRequest(name="p", config={"connector.class": "Gen"})
    with applying("r2", "PutConnectorConfig", "p"):
        first = await calls.PutConnectorConfig(put)
    applied = await calls.applied("r2")
    assert first.created and applied is not None and applied.created
    again = await calls.replayed("PutConnectorConfig", applied)
    assert isinstance(again, config_pb2.PutConnectorConfigResponse) and again.created
    assert again.info.name == "p"


async def test_old_records_of_applied_commands_are_swept(
    calls: ConfigCalls, commands: Commands
) -> None:
    with applying("r3", "CreateConnector", "s"):
        await calls.CreateConnector(create("s"))
    applied = await calls.applied("r3")
    assert applied is not None
    await commands.service_calls.sweep_applied(applied.applied_at_ms + 1000, keep_ms=10_000)
    assert await calls.applied("r3") is not None  # young: kept
    await commands.service_calls.sweep_applied(applied.applied_at_ms + 20_000, keep_ms=10_000)
    assert await calls.applied("r3") is None


async def test_a_request_applied_elsewhere_is_not_applied_again(calls: ConfigCalls) -> None:
    """Two replicas' agents read one request (its records under two keys): the change is decided
    against the topic read to its end, so the second finds the first's and writes nothing."""
    with applying("r4", "PauseConnector", "c"):
        await calls.CreateConnector(create("c"))
    with applying("r4", "CreateConnector", "c"), pytest.raises(AlreadyApplied) as found:
        await calls.CreateConnector(create("c"))
    assert found.value.applied.connector == "c"


async def test_a_deletion_s_record_outlives_the_connector_it_deleted(calls: ConfigCalls) -> None:
    await calls.CreateConnector(create("d"))
    with applying("r6", "DeleteConnector", "d"):
        await calls.DeleteConnector(config_pb2.ConnectorRequest(name="d"))
    applied = await calls.applied("r6")
    assert applied is not None
    answer = await calls.replayed("DeleteConnector", applied)
    assert answer == config_pb2.DeleteConnectorResponse()
