"""The standalone process: the control plane of one worker, put together from the distributed
services' own parts over logs it keeps itself.

- **Configs and status** are logs in memory, as Connect's standalone worker keeps them: the
  connectors of the files given are created at every start, and those created through the API
  last as long as the process.
- **Source offsets** are a log in a file (``headrace.core.storage.filelog``), written whole and
  renamed into place at most every ``offset.flush.interval.ms``. This process alone writes it:
  its plugin processes store and read offsets through ``OffsetLogService``.
- **The parts** are the config service's commands, gRPC API and REST API (``ConfigParts``), the
  coordinator's group (``Leading``) and the worker (``Worker``), each as its service runs it. They
  speak as they do between processes, over this process's one gRPC server, which serves the public
  API beside them (Kafka Connect's REST API on its own port).

Plugins run in plugin processes, as in distributed mode. The Spark executor is started only if
a connector needs it (``headrace.standalone.executor``).
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Sequence
from pathlib import Path

import grpc

from headrace.config.offsets import OffsetsAdmin
from headrace.config.service import SERVICE_NAMES, ConfigParts, cluster_id
from headrace.config.store import ConfigStore
from headrace.config.validation import ConfigRejected
from headrace.coordinator.leading import Leading, config_feed
from headrace.coordinator.service import CoordinatorServicer
from headrace.core import runner
from headrace.core.model.plugins import PluginDescriptor
from headrace.core.model.structs import Target
from headrace.core.observability import log
from headrace.core.observability.health import Health, full_name
from headrace.core.security.guard import ServerSecurity
from headrace.core.settings import Settings
from headrace.core.storage.filelog import FileTopic, file_logs
from headrace.core.storage.stores import StatusStore
from headrace.core.storage.topiclog import LogFactory, MemoryTopic, memory_logs
from headrace.isolation.supervisor import PluginProcess
from headrace.standalone.executor import ExecutorOnDemand
from headrace.standalone.files import ConnectorFile, StandaloneConfigError
from headrace.standalone.offsetlog import OffsetLogServicer
from headrace.v1 import coordinator_pb2, coordinator_pb2_grpc, internal_pb2, internal_pb2_grpc
from headrace.worker.worker import Worker, build_worker

# A worker in the same process is not lost to the network; a stalled loop is the one way it
# misses heartbeats, and its units are its own again as soon as it beats once more.
SESSION_TIMEOUT_S = 10.0
GRACE_S = 0.0


class Logs:
    """The logs of one standalone process: configs, status and assignments in memory, source
    offsets in ``offsets``."""

    def __init__(self, offsets: FileTopic) -> None:
        self.offsets = offsets
        self._memory = {
            role: MemoryTopic(role, compacted=True) for role in ("configs", "status", "assignments")
        }

    def __call__(self, role: str) -> LogFactory:
        if role == "offsets":
            return file_logs(self.offsets)
        return memory_logs(self._memory[role])


async def create_connectors(parts: ConfigParts, files: Sequence[tuple[str, ConnectorFile]]) -> None:
    """Creates the connectors the files give, in their order; StandaloneConfigError naming the
    file for one that is refused, as Connect's standalone worker stops on one."""
    for where, connector in files:
        target = Target(connector.initial_state) if connector.initial_state else None
        try:
            await parts.commands.create(connector.name, connector.config, target, None)
        except ConfigRejected as exc:
            raise StandaloneConfigError(f"{where}: {exc}") from None


async def serve(
    settings: Settings,
    offsets_file: Path,
    flush_every_s: float,
    connectors: Sequence[tuple[str, ConnectorFile]],
    rest_address: str,
    security: ServerSecurity,
) -> None:
    """Runs the standalone worker until SIGTERM or SIGINT; ``settings.config_addr`` is where
    its gRPC server listens, and its parts and plugin processes reach it there."""
    logger = log.get()
    # Listening from the start: a stop asked for while it starts is a clean stop too.
    signalled = asyncio.create_task(runner.until_signalled(), name="signalled")
    logs = Logs(FileTopic("offsets", offsets_file, flush_every_s))
    store = ConfigStore(logs("configs"), StatusStore(logs("status")))
    await store.start()
    run_dir, log_dir = settings.var_dir / "run", settings.var_dir / "log"
    executor = ExecutorOnDemand(settings, log_dir / "executor.log")
    worker: Worker | None = None

    async def worker_process(plugin: PluginDescriptor) -> PluginProcess:
        # Configs are validated in the worker's plugin processes, which then run them: one
        # process per plugin version, not two.
        assert worker is not None, "the worker is made before any call is served"
        return await worker.process_for(plugin)

    # A change made through the offsets API is in the file before it is answered.
    offsets = OffsetsAdmin(settings, logs("offsets"), logs.offsets.flush)
    parts = ConfigParts(settings, store, offsets, executor, worker_process)
    run_dir.mkdir(parents=True, exist_ok=True)
    log_dir.mkdir(parents=True, exist_ok=True)
    # Named as Connect names a standalone worker: where its REST API listens.
    worker = build_worker(
        settings,
        rest_address,
        parts.commands.catalog,
        run_dir,
        log_dir,
        logs,
        executor,
        live=parts.live,
    )
    await parts.start()
    address = settings.config_addr
    coordinator = CoordinatorServicer(address, lambda: True, security.join_refusal)
    leading = Leading(
        logs("assignments"),
        config_feed(logs("configs"), coordinator),
        coordinator,
        session_timeout=SESSION_TIMEOUT_S,
        grace=GRACE_S,
        name=address,
    )

    def servicers(server: grpc.aio.Server) -> None:
        parts.add_servicers(server)
        coordinator_pb2_grpc.add_CoordinatorServicer_to_server(coordinator, server)
        internal_pb2_grpc.add_OffsetLogServiceServicer_to_server(
            OffsetLogServicer(logs.offsets), server
        )

    health = Health(
        [
            *SERVICE_NAMES,
            full_name(coordinator_pb2, "Coordinator"),
            full_name(internal_pb2, "OffsetLogService"),
        ]
    )
    server = await runner.start_server(address, servicers, health, security)
    async with contextlib.AsyncExitStack() as stopping:
        # Undone in the reverse order, each step whatever the one before it raised: health says
        # so, the REST API takes no more calls, the worker stops its units (its sources store
        # their last offsets through the gRPC server, which stays up), the executor stops, the
        # offsets file is written, then the group, the gRPC server, the config part, the store.
        stopping.push_async_callback(store.close)
        stopping.push_async_callback(parts.stop)
        stopping.push_async_callback(server.stop, 1)
        stopping.push_async_callback(leading.stop)
        stopping.push_async_callback(logs.offsets.close)
        stopping.push_async_callback(executor.stop)  # once the sinks writing through it stopped
        await leading.start()
        api, rest = await parts.serve_rest(rest_address, security, await cluster_id(settings))
        api.started = True
        working = asyncio.create_task(worker.run(), name="worker")

        async def stop_worker() -> None:
            worker.shutdown()  # its source tasks store their last offsets as they stop
            await asyncio.wait({working})

        stopping.push_async_callback(stop_worker)
        stopping.push_async_callback(rest.cleanup)
        stopping.push_async_callback(health.shutting_down)
        creating = asyncio.create_task(create_connectors(parts, connectors))
        await asyncio.wait({creating, signalled}, return_when=asyncio.FIRST_COMPLETED)
        if not creating.done():
            await runner.cancel(creating)
            logger.info("standalone_stopped_while_starting")
            return
        try:
            creating.result()
        except StandaloneConfigError as exc:
            # As Connect's standalone worker: a connector file refused stops the worker.
            logger.error("standalone_connector_refused", error=str(exc))
            sys.stderr.write(f"headrace standalone: error: {exc}\n")
            raise SystemExit(2) from None
        await health.ready()
        logger.info(
            "standalone_ready",
            address=address,
            rest_address=rest_address,
            offsets_file=str(offsets_file),
            connectors=len(connectors),
        )
        await runner.until_stopped(
            *store.readers(), *parts.tasks, *leading.readers, working, signalled=signalled
        )
    logger.info("standalone_stopped")
