"""``python -m headrace.coordinator``: assigns connectors and tasks to the workers that join.

Run several replicas, each with its own ``--address``: one is active, the others stand by and
take over when its lease runs out (``leadership``). Workers are given every replica's address.
Prometheus metrics on ``--metrics-addr`` (``headrace.coordinator.metrics``).
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Awaitable

from headrace.coordinator import metrics
from headrace.coordinator.configview import ConfigFeed
from headrace.coordinator.leadership import Leadership, LeadershipLost
from headrace.coordinator.leading import Leading, config_feed
from headrace.coordinator.service import CoordinatorServicer
from headrace.core import runner
from headrace.core.observability import log
from headrace.core.observability.health import Health, full_name
from headrace.core.observability.metrics import Startup, exposed
from headrace.core.observability.metrics import add_flag as metrics_flag
from headrace.core.security.guard import ServerSecurity, security_or_exit
from headrace.core.settings import Settings, settings_or_exit
from headrace.core.storage.topiclog import kafka_logs
from headrace.core.storage.topics import ensure_topics
from headrace.v1 import coordinator_pb2, coordinator_pb2_grpc


async def serve(
    settings: Settings,
    address: str,
    session_timeout: float,
    grace: float,
    lease_timeout: float,
    security: ServerSecurity,
) -> None:
    """Stands by until this replica holds the lease, leads until it loses it, and stands by
    again, until told to stop.

    The logic is elsewhere: the group in ``group``, the folds of the topics in ``assignmentlog``
    and ``configview``, the lease in ``leadership``.
    """
    logger = log.get()
    startup = Startup("coordinator")  # ready: leading, with its state replayed
    await ensure_topics(settings)
    leadership = Leadership(settings, address, lease_timeout)
    servicer = CoordinatorServicer(address, leadership.fresh, security.join_refusal)
    # Ready while leading with its state replayed; a replica standing by answers (with who
    # leads) but is not ready, so a readiness probe sends workers to the leader.
    health = Health([full_name(coordinator_pb2, "Coordinator")])
    server = await runner.start_server(
        address,
        lambda s: coordinator_pb2_grpc.add_CoordinatorServicer_to_server(servicer, s),
        health,
        security,
    )
    logger.info("coordinator_serving", address=address)
    try:
        while True:
            # A replica standing by follows the configs, so that taking over does not wait for
            # a replay of every one: at 100,000 connectors that is most of a cold start.
            configs = config_feed(kafka_logs(settings, "configs"), servicer)
            configs.replay()
            try:
                if not await _until_signalled_or(leadership.acquire()):
                    break
                stopped = await lead(
                    settings,
                    address,
                    session_timeout,
                    grace,
                    leadership,
                    servicer,
                    configs,
                    health,
                    startup,
                )
            except LeadershipLost as exc:
                logger.warning("coordinator_leadership_lost", error=str(exc))
                continue  # another replica leads now: stand by again
            finally:
                await configs.close()
            if stopped:
                break
    finally:
        await health.shutting_down()
        await server.stop(grace=1)
        await leadership.close()
        logger.info("coordinator_stopped")


async def _until_signalled_or(work: Awaitable[object]) -> bool:
    """Runs ``work`` to its end (True), unless SIGTERM or SIGINT comes first (False)."""
    task = asyncio.ensure_future(work)
    signalled = asyncio.create_task(runner.until_signalled())
    try:
        await asyncio.wait({task, signalled}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        await runner.cancel(signalled)
    if not task.done():
        await runner.cancel(task)
        return False
    task.result()
    return True


async def lead(
    settings: Settings,
    address: str,
    session_timeout: float,
    grace: float,
    leadership: Leadership,
    servicer: CoordinatorServicer,
    configs: ConfigFeed,
    health: Health,
    startup: Startup,
) -> bool:
    """Resumes from the assignments topic, leads from the ``configs`` feed and serves the
    group, until stopped (True) or the lease is lost (:class:`LeadershipLost`)."""
    assert leadership.writer is not None
    # Read after taking over: whatever the previous leader committed is in, and it can commit
    # nothing more.
    leading = Leading(
        kafka_logs(settings, "assignments", leadership.writer.send),
        configs,
        servicer,
        session_timeout=session_timeout,
        grace=grace,
        name=address,
    )
    keeping: asyncio.Task[None] | None = None
    try:
        await leading.start()
        keeping = asyncio.create_task(leadership.keep(), name="lease")
        await health.ready()
        startup.ready()
        metrics.LEADER.set(1)
        assert leading.group is not None
        members = leading.group.members  # the group's own dict: read, never changed, by a scrape
        metrics.MEMBERS.set_function(lambda: len(members))
        log.get().info("coordinator_ready", address=address, generation=leading.group.generation)
        await runner.until_stopped(*leading.readers, keeping)
        return True
    finally:
        servicer.lead(None)  # first: a replica that no longer leads serves no join
        metrics.LEADER.set(0)
        metrics.MEMBERS.set_function(lambda: 0)
        await health.not_ready()
        if keeping is not None:
            await runner.cancel(keeping)
        await leading.stop()
        await leadership.step_down()


def main() -> None:
    settings = settings_or_exit("headrace-coordinator")
    parser = argparse.ArgumentParser(prog="headrace-coordinator", description=__doc__)
    parser.add_argument(
        "--address",
        default=settings.coordinator_addrs[0],
        help="where this replica serves (one of the addresses workers are given)",
    )
    parser.add_argument(
        "--session-timeout",
        type=float,
        default=10.0,
        help="seconds without a heartbeat before a worker is taken for lost; a worker that has "
        "not heard from the coordinator for most of this stops its units itself",
    )
    parser.add_argument(
        "--grace-period",
        type=float,
        default=300.0,
        help="seconds a lost worker's units wait for it after its session timeout, before they "
        "move to other workers (Kafka Connect's scheduled.rebalance.max.delay.ms)",
    )
    parser.add_argument(
        "--lease-timeout",
        type=float,
        default=3.0,
        help="seconds without a lease renewal after which a standby replica takes over",
    )
    metrics_flag(parser)
    args = parser.parse_args()
    security = security_or_exit(parser, settings)
    log.configure("coordinator")
    runner.run(
        lambda: exposed(
            args.metrics_addr,
            serve(
                settings,
                args.address,
                args.session_timeout,
                args.grace_period,
                args.lease_timeout,
                security,
            ),
        )
    )


if __name__ == "__main__":
    main()
