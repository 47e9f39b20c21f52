"""``python -m headrace.coordinator``: assigns connectors and tasks to the workers that join."""

from __future__ import annotations

import argparse
import asyncio

from headrace.coordinator import assignmentlog
from headrace.coordinator.group import ConfigsChanged, ConnectorDeleted, Group, Tick
from headrace.coordinator.service import CoordinatorServicer
from headrace.core import configlog, log, runner
from headrace.core.configstate import ConfigState, ConnectorRemoved, apply
from headrace.core.settings import Settings
from headrace.core.topiclog import LogRecord, TopicLog
from headrace.core.topics import ensure_topics
from headrace.v1 import coordinator_pb2_grpc


async def tick(group: Group, every: float) -> None:
    while True:
        await asyncio.sleep(every)
        group.submit(Tick())


async def serve(settings: Settings, address: str, session_timeout: float) -> None:
    logger = log.get()
    await ensure_topics(settings)
    last: list[assignmentlog.Generation] = []

    def on_assignment(record: LogRecord) -> None:
        if record.value is not None:
            last[:] = [assignmentlog.decode(record.value)]

    assignments = TopicLog(settings.bootstrap_servers, settings.topic("assignments"), on_assignment)
    await assignments.start()

    async def append(generation: assignmentlog.Generation) -> None:
        await assignments.append(*assignmentlog.encode(generation))

    group = Group(append, session_timeout=session_timeout)
    if last:
        group.resume(last[0])
    configs = ConfigState()

    replayed = False

    def on_config(record: LogRecord) -> None:
        nonlocal configs
        event = configlog.decode(record.key, record.value)
        if event is not None:
            configs = apply(event, configs)
            group.submit(ConfigsChanged(configs))
            # Tombstones in the history were acted on before this coordinator started; a new
            # one may be followed by a re-create the snapshot alone would not show.
            if replayed and isinstance(event, ConnectorRemoved):
                group.submit(ConnectorDeleted(event.name))

    config_log = TopicLog(settings.bootstrap_servers, settings.topic("configs"), on_config)
    await config_log.start(writer=False)
    replayed = True
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
        await runner.until_stopped(loop_task, ticker, config_log.reader, assignments.reader)
    finally:
        await server.stop(grace=1)
        await runner.cancel(ticker)
        await runner.cancel(loop_task)
        await config_log.close()
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
