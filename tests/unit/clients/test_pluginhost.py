"""A plugin process's client turns every way a call can fail into PluginCallError."""

from __future__ import annotations

import grpc
import pytest

from headrace.clients.pluginhost import PluginCallError, PluginClient
from headrace.core.model.structs import WorkUnit


async def test_a_call_on_a_closed_channel_says_the_process_is_gone() -> None:
    """Found by the nemesis (seed 313): a worker stopping a connector in a process whose
    channel it had closed met gRPC's UsageError, which no caller expected, and ended."""
    # As a worker does: the client is made while the channel is open (gRPC registers its
    # methods then; registering them on a closed channel can block for good).
    channel = grpc.aio.insecure_channel("unix:/nonexistent/plugin.sock")
    client = PluginClient(channel)
    await channel.close()
    with pytest.raises(PluginCallError) as raised:
        await client.stop(WorkUnit("c", 0), deleted=False, deadline_s=1.0)
    assert raised.value.gone
