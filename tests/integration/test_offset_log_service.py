"""Standalone mode's source offsets as its plugin processes reach them: an ``OffsetStore`` in
one process over the ``OffsetLogService`` another serves from its offsets file, on a real gRPC
server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from headrace.core import runner
from headrace.core.observability.health import Health
from headrace.core.security.guard import ServerSecurity
from headrace.core.settings import Settings
from headrace.core.storage.filelog import FileTopic
from headrace.core.storage.stores import OffsetStore
from headrace.local.kafka import free_port
from headrace.sdk.errors import ConfigException
from headrace.standalone.offsetlog import OffsetLogServicer
from headrace.v1 import internal_pb2_grpc


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[Settings]:
    """Settings whose offsets are served from ``connect.offsets`` in ``tmp_path``."""
    topic = FileTopic("offsets", tmp_path / "connect.offsets")
    address = f"127.0.0.1:{free_port()}"
    server = await runner.start_server(
        address,
        lambda s: internal_pb2_grpc.add_OffsetLogServiceServicer_to_server(
            OffsetLogServicer(topic), s
        ),
        Health([]),
        ServerSecurity(),
    )
    try:
        yield Settings(offsets_addr=address, var_dir=tmp_path)
    finally:
        await server.stop(grace=None)


async def test_a_task_stores_offsets_in_the_file_and_reads_them_when_started_again(
    served: Settings, tmp_path: Path
) -> None:
    settings = served
    first = OffsetStore(settings, "src")
    await first.load()
    assert first.offset({"filename": "a"}) is None
    await first.write([({"filename": "a"}, {"position": 10}), ({"filename": "b"}, {"position": 3})])
    await first.write([({"filename": "a"}, {"position": 12})])
    await first.close()
    other = OffsetStore(settings, "other")  # another connector's offsets are its own
    await other.load()
    await other.write([({"filename": "a"}, {"position": 99})])
    await other.close()

    again = OffsetStore(settings, "src")
    await again.load()
    assert again.offsets([{"filename": "a"}, {"filename": "b"}]) == [
        ({"filename": "a"}, {"position": 12}),
        ({"filename": "b"}, {"position": 3}),
    ]
    await again.close()
    # The file holds them: what a restarted standalone process reads.
    assert len(FileTopic("offsets", tmp_path / "connect.offsets").records) == 3


def test_a_connectors_own_offsets_topic_is_refused_where_offsets_are_in_a_file(
    tmp_path: Path,
) -> None:
    settings = Settings(offsets_addr="127.0.0.1:1", var_dir=tmp_path)
    with pytest.raises(ConfigException, match=r"^offsets.storage.topic: 'mine': a standalone"):
        OffsetStore(settings, "src", topic="mine")
