"""Coordinator leadership against the real broker: a replica that takes over fences the one
that led, whichever write the old leader tries next."""

from __future__ import annotations

import pytest

from headrace.coordinator.leadership import Leadership, LeadershipLost
from headrace.core.settings import Settings
from headrace.core.storage.topics import ensure_topics

pytestmark = pytest.mark.kafka


async def test_a_fenced_leader_s_next_write_loses_it_the_leadership(
    kafka: str, cluster: str
) -> None:
    settings = Settings(bootstrap_servers=kafka, cluster=cluster)
    await ensure_topics(settings)
    first = Leadership(settings, "first", lease_timeout=0.5)
    second = Leadership(settings, "second", lease_timeout=0.5)
    try:
        old = await first.acquire()
        await second.acquire()  # the first stops renewing: its lease lapses, and is taken
        with pytest.raises(LeadershipLost, match="another replica took over"):
            await old.send(settings.topic("assignments"), [("generation-1", b"{}")])
    finally:
        await first.close()
        await second.close()


@pytest.mark.parametrize("replicas", ["alone", "alone,other"])
async def test_a_replica_waits_for_rivals_to_take_over_first_only_where_there_can_be_some(
    kafka: str, cluster: str, replicas: str
) -> None:
    """With no lease ever written, replicas started together would all take over: each waits a
    moment first, unless the cluster names no other replica than itself."""
    settings = Settings(bootstrap_servers=kafka, cluster=cluster, coordinator_addr=replicas)
    await ensure_topics(settings)
    pauses: list[float] = []

    async def pause(seconds: float) -> None:
        pauses.append(seconds)

    leadership = Leadership(settings, "alone", lease_timeout=0.5, pause=pause)
    try:
        await leadership.acquire()
        assert leadership.fresh()
        assert len(pauses) == (1 if "other" in replicas else 0)
    finally:
        await leadership.close()
