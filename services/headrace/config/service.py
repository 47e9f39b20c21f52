"""The config service's parts, put together over a store: its commands, its gRPC servicers, its
REST API, and what runs beside them (the session key's rotation, automatic restarts). Its own
process (``__main__``) puts them on the cluster's topics; standalone mode on logs of its one
process.

Fencing the transactional ids of source tasks a connector no longer has (KIP-618) is wired here
too: a source task writes in Kafka transactions under its own id (``task_client_id``). When its
connector's task set shrinks, one of the tasks past the new count may still run somewhere, cut off
(a zombie), with a transaction open. Before the smaller set is written, each dropped id is fenced:
a producer takes it (Kafka bumps its epoch), so the zombie's next write or commit is refused, and
what it left open is aborted.
"""

from __future__ import annotations

import asyncio
import functools
import hmac
import secrets
import shutil
import tempfile
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path

import grpc
from aiohttp import web
from aiokafka import AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient

from headrace.clients.connect import Side
from headrace.config import framework
from headrace.config.commands import Commands
from headrace.config.console import session
from headrace.config.console.app import Console
from headrace.config.grpc_api import ConfigCalls, ConfigServicer, TaskConfigServicer
from headrace.config.installs import rest as installs_rest
from headrace.config.installs.installs import PluginInstalls, owed_by_coordinator
from headrace.config.offsets import OffsetsAdmin
from headrace.config.pluginchecks import PluginChecks
from headrace.config.rest import ConnectApi, Handler, app
from headrace.config.restarter import AutoRestarter
from headrace.config.store import ConfigStore
from headrace.core import runner
from headrace.core.model.plugins import PluginCatalog, PluginDescriptor, builtin_version
from headrace.core.observability import log
from headrace.core.observability.health import full_name
from headrace.core.rpc import split_address
from headrace.core.security import sessionkey, tls
from headrace.core.security.guard import ServerSecurity
from headrace.core.settings import Settings
from headrace.core.storage.topics import task_client_id
from headrace.isolation.live import LivePlugins
from headrace.isolation.plugins import JVM_PLUGINS
from headrace.isolation.supervisor import BeforeStart, PluginProcess
from headrace.migration import api as migration_api
from headrace.migration.moving import HEADRACE
from headrace.migration.operations import Migrations
from headrace.v1 import (
    config_pb2,
    config_pb2_grpc,
    internal_pb2,
    internal_pb2_grpc,
    migration_pb2,
    migration_pb2_grpc,
)

# How often the session key's age is checked: rotation lands within this of its time to live.
SESSION_KEY_CHECK_S = 60.0
SERVICE_NAMES = (
    full_name(config_pb2, "ConfigService"),
    full_name(internal_pb2, "TaskConfigService"),
    full_name(migration_pb2, "MigrationService"),
)


async def fence_tasks(settings: Settings, connector: str, tasks: Iterable[int]) -> None:
    """Fences each task's transactional id; the Kafka error when one cannot be."""
    for task in tasks:
        transactional_id = task_client_id(settings, connector, task)
        producer = AIOKafkaProducer(
            **settings.kafka_client(),
            client_id=f"{transactional_id}-fence",
            enable_idempotence=True,
            transactional_id=transactional_id,
        )
        await producer.start()  # InitProducerId: the id's epoch moves past the zombie's
        await producer.stop()
        log.get().info("task_fenced", connector=connector, task=task)


async def cluster_id(settings: Settings) -> str:
    """The Kafka cluster's id, as Connect's ``GET /`` shows it."""
    admin = AIOKafkaAdminClient(**settings.kafka_client())
    await admin.start()
    try:
        described = await admin.describe_cluster()
    finally:
        await admin.close()
    return str(described.get("cluster_id") or "")


class ConfigParts:
    """The commands over ``store``, with the plugins the settings name, and the calls of the
    gRPC API, the REST API and the console over them. Its session key is current once
    :meth:`start` returns, and kept so, with the automatic restarts, until :meth:`stop`."""

    def __init__(
        self,
        settings: Settings,
        store: ConfigStore,
        offsets: OffsetsAdmin,
        before_plugin_start: BeforeStart | None = None,
        plugin_processes: Callable[[PluginDescriptor], Awaitable[PluginProcess]] | None = None,
    ) -> None:
        """``before_plugin_start`` and ``plugin_processes``: see ``PluginChecks``."""
        self.settings = settings
        self.checks = PluginChecks(settings, before_plugin_start, plugin_processes)
        self.live = LivePlugins(settings.plugin_path, settings.var_dir / JVM_PLUGINS)
        self.live.listen(self._plugins_changed)
        self.commands = Commands(
            store,
            self.live.catalog,
            offsets,
            self.checks,
            tracks_topics=settings.tracks_topics,
            topic_reset_allowed=settings.topic_reset_allowed,
            operator=framework.Operator.of(settings),
        )
        if settings.exactly_once_source:
            self.commands.service_calls.fence = functools.partial(fence_tasks, settings)
        self.installs = PluginInstalls(
            self.commands, self.live, functools.partial(owed_by_coordinator, settings)
        )
        # The gRPC API's calls, and automation's.
        self.calls = ConfigCalls(self.commands, self.installs)
        self.restarter = AutoRestarter(self.commands)
        self.commands.restarts.shown_by = self.restarter.shown
        self.tasks: list[asyncio.Task[None]] = []
        self.migrations = Migrations(settings.worker_config)
        self.console = Console(self.commands, store, settings)
        self._own_rest: tuple[web.AppRunner, Path] | None = None

    def add_servicers(self, server: grpc.aio.Server) -> None:
        config_pb2_grpc.add_ConfigServiceServicer_to_server(ConfigServicer(self.calls), server)
        internal_pb2_grpc.add_TaskConfigServiceServicer_to_server(
            TaskConfigServicer(self.commands), server
        )
        migration_pb2_grpc.add_MigrationServiceServicer_to_server(
            migration_api.MigrationServicer(self.migrations), server
        )

    def _plugins_changed(self, catalog: PluginCatalog) -> None:
        """The plugin path holds other plugins now: configs are checked against them."""
        self.commands.catalog = self.commands.hidden.catalog = catalog

    def _installs_changed(self) -> None:
        self.live.want(self.installs.recorded())

    async def start(self) -> None:
        await self.commands.service_calls.ensure_session_key(sessionkey.now_ms())
        # The cluster's installs, as replayed, then as they change (another replica's too).
        self.commands.store.on_plugins = self._installs_changed
        await self.live.want(self.installs.recorded())
        self.tasks = [
            asyncio.create_task(self.live.watch(), name="plugin-path"),
            asyncio.create_task(self._rotate_session_keys(), name="session-keys"),
            asyncio.create_task(self.restarter.run(), name="auto-restarts"),
        ]

    async def _rotate_session_keys(self) -> None:
        """Keeps the session key younger than its time to live, and sweeps the records of old
        commands of the command topic, as long as the service runs."""
        while True:
            await asyncio.sleep(SESSION_KEY_CHECK_S)
            await self.commands.service_calls.ensure_session_key(sessionkey.now_ms())
            await self.commands.service_calls.sweep_applied(sessionkey.now_ms())

    async def serve_rest(
        self, rest_address: str, security: ServerSecurity, kafka_cluster_id: str
    ) -> tuple[ConnectApi, web.AppRunner]:
        """Kafka Connect's REST API on ``rest_address``, with HTTPS when the process has TLS."""
        info = {"version": builtin_version(), "commit": "", "kafka_cluster_id": kafka_cluster_id}

        async def server_info() -> dict[str, str]:
            return info

        api = ConnectApi(self.commands, server_info)
        site = session.Site.of(
            rest_address, self.settings.console_origins, self.settings.rest_hosts
        )
        served = app(api, security.policy, site)
        served.add_routes(migration_api.routes(self.migrations))
        served.add_routes(installs_rest.routes(self.installs))
        self.console.policy = security.policy
        self.console.site = site
        served.add_routes(self.console.routes())
        served.on_shutdown.append(self.console.shutdown)
        rest = web.AppRunner(served, access_log=None)
        await rest.setup()
        host, port = split_address(rest_address)
        https = (
            None if security.tls is None else tls.server_ssl_context(self.settings, security.tls)
        )
        await web.TCPSite(rest, host, port, ssl_context=https).start()
        self.migrations.ours = await self._serve_own_rest(api)
        return api, rest

    async def _serve_own_rest(self, api: ConnectApi) -> Side:
        """The same API for this process's own migrations, on a Unix socket in a folder only
        its user reaches, answering only requests with a key that never leaves the process: a
        migration acts on headrace with what its caller was allowed to start it with (admin),
        whatever the caller proved that with."""
        key = secrets.token_urlsafe(32)
        expected = f"Bearer {key}".encode()

        @web.middleware
        async def own(request: web.Request, handler: Handler) -> web.StreamResponse:
            given = request.headers.get("Authorization", "").encode()
            if not hmac.compare_digest(given, expected):
                return web.json_response({"error_code": 401, "message": "no"}, status=401)
            return await handler(request)

        served = app(api)
        served.add_routes(installs_rest.routes(self.installs))  # a migration's --install
        served.middlewares.append(own)
        folder = Path(tempfile.mkdtemp(prefix="headrace-config-"))  # 0700
        socket = folder / "rest.sock"
        rest = web.AppRunner(served, access_log=None)
        await rest.setup()
        await web.UnixSite(rest, str(socket)).start()
        self._own_rest = (rest, folder)
        return Side(
            HEADRACE, "http://headrace", {"Authorization": f"Bearer {key}"}, None, str(socket)
        )

    async def stop(self) -> None:
        await self.migrations.close()  # a cutover under way puts back what it may, first
        if self._own_rest is not None:
            rest, folder = self._own_rest
            await rest.cleanup()
            shutil.rmtree(folder, ignore_errors=True)
        for task in self.tasks:
            await runner.cancel(task)
        await self.console.close()
        await self.checks.close()
