"""``python -m headrace.config``: the config service (gRPC on --address, Kafka Connect's REST
API on --rest-address, Prometheus metrics on --metrics-addr)."""

from __future__ import annotations

import argparse
import asyncio

from headrace.config.console import session
from headrace.config.offsets import OffsetsAdmin
from headrace.config.service import SERVICE_NAMES, ConfigParts, cluster_id
from headrace.config.store import ConfigStore
from headrace.core import runner
from headrace.core.model.clientconfig import override_policy
from headrace.core.observability import log, metrics
from headrace.core.observability.health import Health
from headrace.core.security.guard import ServerSecurity, security_or_exit
from headrace.core.settings import Settings, settings_or_exit
from headrace.core.storage.topics import ensure_topics


async def serve(
    settings: Settings, address: str, rest_address: str, security: ServerSecurity
) -> None:
    startup = metrics.Startup("config")
    logger = log.get()
    await ensure_topics(settings)
    store = ConfigStore.on_kafka(settings)
    await store.start()
    parts = ConfigParts(settings, store, OffsetsAdmin(settings))
    await parts.start()  # a session key before any worker asks for one
    health = Health(list(SERVICE_NAMES))
    server = await runner.start_server(address, parts.add_servicers, health, security)
    api, rest = await parts.serve_rest(rest_address, security, await cluster_id(settings))
    api.started = True  # the configs topic is replayed: answers are current
    await health.ready()
    startup.ready()
    logger.info(
        "config_service_ready",
        address=address,
        rest_address=rest_address,
        connectors=len(store.configs.connectors),
        plugins=len(parts.commands.catalog.plugins),
    )
    # The agent joins its group and recovers its answers in the background: the gRPC and REST
    # APIs answer meanwhile, and commands wait in their topic until it is ready. Imported only
    # now: faust's import took 0.45 s of a start's 6.7 s (py-spy, 100,000 connectors), all of
    # it before the service could answer.
    from headrace.config.automation import Automation

    automation = Automation(settings, parts.calls)
    automating = asyncio.create_task(automation.start(), name="automation")
    try:
        await runner.until_stopped(*store.readers(), *parts.tasks)
    finally:
        await runner.cancel(automating)
        await automation.stop()
        await health.shutting_down()
        await rest.cleanup()
        await server.stop(grace=2)
        await parts.stop()
        await store.close()
        logger.info("config_service_stopped")


def main() -> None:
    settings = settings_or_exit("headrace-config")
    parser = argparse.ArgumentParser(prog="headrace-config", description=__doc__)
    parser.add_argument(
        "--address", default=settings.config_addr, help="host:port to serve gRPC on"
    )
    parser.add_argument(
        "--rest-address",
        default=settings.rest_addr,
        help="host:port to serve Kafka Connect's REST API on",
    )
    metrics.add_flag(parser)
    args = parser.parse_args()
    try:
        # Every config is checked against it: a policy it cannot read stops the start, named.
        override_policy(settings.client_override_policy)
    except ValueError as exc:
        parser.error(str(exc))
    security = security_or_exit(parser, settings)
    refused = session.open_refusal(
        args.rest_address, security.policy is not None, settings.rest_open == "true"
    )
    if refused is not None:
        parser.error(f"--rest-address: {refused}")
    log.configure("config")
    runner.run(
        lambda: metrics.exposed(
            args.metrics_addr, serve(settings, args.address, args.rest_address, security)
        )
    )


if __name__ == "__main__":
    main()
