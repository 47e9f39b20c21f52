"""``python -m headrace.coordinator``: assigns connectors and tasks to the workers that join."""

from __future__ import annotations

import argparse
import asyncio

from headrace.coordinator.assignmentlog import AssignmentLog
from headrace.coordinator.configview import ConfigFeed
from headrace.coordinator.group import Group, Tick
from headrace.coordinator.service import CoordinatorServicer
from headrace.core import log, runner
from headrace.core.settings import Settings
from headrace.core.topiclog import kafka_logs
from headrace.core.topics import ensure_topics
from headrace.v1 import coordinator_pb2_grpc


async def tick(group: Group, every: float) -> None:
    while True:
        await asyncio.sleep(every)
        group.submit(Tick())


async def serve(settings: Settings, address: str, session_timeout: float) -> None:
    """Resumes from the assignments topic, follows the configs topic and serves the group.

    The logic is elsewhere: the group in ``group``, the folds of the topics in ``assignmentlog``
    and ``configview``.
    """
    logger = log.get()
    await ensure_topics(settings)
    assignments = AssignmentLog(kafka_logs(settings, "assignments"))
    await assignments.start()
    group = Group(assignments.append, session_timeout=session_timeout)
    if assignments.last is not None:
        group.resume(assignments.last)
    configs = ConfigFeed(kafka_logs(settings, "configs"), group.submit)
    await configs.start()
    loop_task = asyncio.create_task(group.run(), name="group")
    ticker = asyncio.create_task(tick(group, min(0.5, session_timeout / 4)), name="tick")
    server = await runner.start_server(
        address,
        lambda s: coordinator_pb2_grpc.add_CoordinatorServicer_to_server(
            CoordinatorServicer(group), s
        ),
    )
    logger.info("coordinator_ready", address=address, generation=group.generation)
    try:
        await runner.until_stopped(loop_task, ticker, configs.reader, assignments.reader)
    finally:
        await server.stop(grace=1)
        await runner.cancel(ticker)
        await runner.cancel(loop_task)
        await configs.close()
        await assignments.close()
        logger.info("coordinator_stopped")


def main() -> None:
    settings = Settings()
    parser = argparse.ArgumentParser(prog="headrace-coordinator", description=__doc__)
    parser.add_argument("--address", default=settings.coordinator_addr)
    parser.add_argument(
        "--session-timeout",
        type=float,
        default=10.0,
        help="seconds without a heartbeat before a worker is taken for dead",
    )
    args = parser.parse_args()
    log.configure("coordinator")
    runner.run(lambda: serve(settings, args.address, args.session_timeout))


if __name__ == "__main__":
    main()
