"""``python -m headrace.config``: the config service (gRPC on --address, Kafka Connect's REST
API on --rest-address, Prometheus metrics on --metrics-addr)."""

from __future__ import annotations

import argparse
import asyncio
import functools

import grpc
from aiohttp import web
from aiokafka.admin import AIOKafkaAdminClient

from headrace.config.automation import Automation
from headrace.config.commands import Commands
from headrace.config.fencing import fence_tasks
from headrace.config.grpc_api import ConfigCalls, ConfigServicer, TaskConfigServicer
from headrace.config.offsets import OffsetsAdmin
from headrace.config.pluginchecks import PluginChecks
from headrace.config.rest import ConnectApi, app
from headrace.config.restarter import AutoRestarter
from headrace.config.store import ConfigStore
from headrace.core import runner
from headrace.core.model.clientconfig import override_policy
from headrace.core.observability import log, metrics
from headrace.core.observability.health import Health, full_name
from headrace.core.rpc import split_address
from headrace.core.security import sessionkey, tls
from headrace.core.security.guard import ServerSecurity, security_or_exit
from headrace.core.settings import Settings, settings_or_exit
from headrace.core.storage.topics import ensure_topics
from headrace.isolation.plugins import JVM_PLUGINS, builtin_version, installed
from headrace.v1 import config_pb2, config_pb2_grpc, internal_pb2, internal_pb2_grpc

# How often the session key's age is checked: rotation lands within this of its time to live.
SESSION_KEY_CHECK_S = 60.0


async def cluster_id(settings: Settings) -> str:
    """The Kafka cluster's id, as Connect's ``GET /`` shows it."""
    admin = AIOKafkaAdminClient(**settings.kafka_client())
    await admin.start()
    try:
        described = await admin.describe_cluster()
    finally:
        await admin.close()
    return str(described.get("cluster_id") or "")


async def rotate_session_keys(commands: Commands) -> None:
    """Keeps the session key younger than its time to live, and sweeps the records of old
    commands of the command topic, as long as the service runs."""
    while True:
        await asyncio.sleep(SESSION_KEY_CHECK_S)
        await commands.ensure_session_key(sessionkey.now_ms())
        await commands.sweep_applied(sessionkey.now_ms())


async def serve(
    settings: Settings, address: str, rest_address: str, security: ServerSecurity
) -> None:
    startup = metrics.Startup("config")
    logger = log.get()
    await ensure_topics(settings)
    store = ConfigStore.on_kafka(settings)
    await store.start()
    checks = PluginChecks(settings)
    commands = Commands(
        store,
        installed(settings.plugin_path, settings.var_dir / JVM_PLUGINS),
        OffsetsAdmin(settings),
        checks,
        tracks_topics=settings.tracks_topics,
        topic_reset_allowed=settings.topic_reset_allowed,
    )
    commands.fence = functools.partial(fence_tasks, settings)
    await commands.ensure_session_key(sessionkey.now_ms())
    calls = ConfigCalls(commands)  # the gRPC API's calls, and automation's

    def servicers(server: grpc.aio.Server) -> None:
        config_pb2_grpc.add_ConfigServiceServicer_to_server(ConfigServicer(calls), server)
        internal_pb2_grpc.add_TaskConfigServiceServicer_to_server(
            TaskConfigServicer(commands), server
        )

    health = Health(
        [
            full_name(config_pb2, "ConfigService"),
            full_name(internal_pb2, "TaskConfigService"),
        ]
    )
    server = await runner.start_server(address, servicers, health, security)
    info = {
        "version": builtin_version(),
        "commit": "",
        "kafka_cluster_id": await cluster_id(settings),
    }

    async def server_info() -> dict[str, str]:
        return info

    api = ConnectApi(commands, server_info)
    rest = web.AppRunner(app(api, security.policy), access_log=None)
    await rest.setup()
    host, port = split_address(rest_address)
    https = None if security.tls is None else tls.server_ssl_context(settings, security.tls)
    await web.TCPSite(rest, host, port, ssl_context=https).start()
    # The agent joins its group and recovers its answers in the background: the gRPC and REST
    # APIs answer meanwhile, and commands wait in their topic until it is ready.
    automation = Automation(settings, calls)
    automating = asyncio.create_task(automation.start(), name="automation")
    rotating = asyncio.create_task(rotate_session_keys(commands), name="session-keys")
    restarter = AutoRestarter(commands)
    commands.restarts_shown = restarter.shown
    restarting = asyncio.create_task(restarter.run(), name="auto-restarts")
    api.started = True  # the configs topic is replayed: answers are current
    await health.ready()
    startup.ready()
    logger.info(
        "config_service_ready",
        address=address,
        rest_address=rest_address,
        connectors=len(store.configs.connectors),
        plugins=len(commands.catalog.plugins),
    )
    try:
        await runner.until_stopped(*store.readers(), rotating, restarting)
    finally:
        await runner.cancel(restarting)
        await runner.cancel(rotating)
        await runner.cancel(automating)
        await automation.stop()
        await health.shutting_down()
        await rest.cleanup()
        await server.stop(grace=2)
        await checks.close()
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
    log.configure("config")
    runner.run(
        lambda: metrics.exposed(
            args.metrics_addr, serve(settings, args.address, args.rest_address, security)
        )
    )


if __name__ == "__main__":
    main()
