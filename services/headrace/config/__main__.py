"""``python -m headrace.config``: the config service (gRPC on --port)."""

from __future__ import annotations

import argparse

from headrace.config.commands import Commands
from headrace.config.grpc_api import ConfigServicer
from headrace.config.offsets import OffsetsAdmin
from headrace.config.store import ConfigStore
from headrace.core import log, runner
from headrace.core.plugins import discover
from headrace.core.settings import Settings
from headrace.core.topics import ensure_topics
from headrace.v1 import config_pb2_grpc


async def serve(settings: Settings, address: str) -> None:
    logger = log.get()
    await ensure_topics(settings)
    store = ConfigStore.on_kafka(settings)
    await store.start()
    commands = Commands(store, discover(settings.plugin_path), OffsetsAdmin(settings))
    server = await runner.start_server(
        address,
        lambda s: config_pb2_grpc.add_ConfigServiceServicer_to_server(ConfigServicer(commands), s),
    )
    logger.info(
        "config_service_ready",
        address=address,
        connectors=len(store.configs.connectors),
        plugins=len(commands.catalog.plugins),
    )
    try:
        await runner.until_stopped(*store.readers())
    finally:
        await server.stop(grace=2)
        await store.close()
        logger.info("config_service_stopped")


def main() -> None:
    settings = Settings()
    parser = argparse.ArgumentParser(prog="headrace-config", description=__doc__)
    parser.add_argument(
        "--address", default=settings.config_addr, help="host:port to serve gRPC on"
    )
    args = parser.parse_args()
    log.configure("config")
    runner.run(lambda: serve(settings, args.address))


if __name__ == "__main__":
    main()
