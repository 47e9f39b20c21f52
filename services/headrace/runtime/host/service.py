"""The ``PluginHost`` gRPC service: protobuf in, domain calls on the ``HostedPlugin`` a call is
for (``plugins.HostedPlugins`` says which), protobuf out.

``Watch`` streams the bus's events (``headrace.core.model.structs``) as ``UnitEvent`` messages,
converted by ``headrace.core.model.wire``: a state change carries its state, a reconfiguration
request the ``reconfiguration_requested`` flag.

Errors cross the socket as status codes with text, never as pickles:

| failure | status | details |
| --- | --- | --- |
| invalid connector config (``ConfigException``) | INVALID_ARGUMENT | the message |
| unit already runs with another config | ALREADY_EXISTS | the message |
| the process is shutting down | UNAVAILABLE | the message |
| the plugin raised | INTERNAL | the traceback text |
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Callable, Mapping
from typing import NoReturn

import grpc

from headrace.core.model.structs import WorkUnit
from headrace.core.model.wire import (
    component_keys_to_pb,
    config_infos_to_pb,
    host_event_to_pb,
)
from headrace.core.observability import log
from headrace.core.security import secrets
from headrace.runtime.host.hosted import HostClosing, UnitConflict
from headrace.runtime.host.plugins import HostedPlugins
from headrace.runtime.lifecycle import format_trace
from headrace.sdk.errors import ConfigException, RetriableError
from headrace.v1 import configdef_pb2
from headrace.v1 import plugin_pb2 as pb
from headrace.v1 import plugin_pb2_grpc as pb_grpc

MAX_DETAILS = 6000
"""gRPC carries status details in trailers (8 KiB by default); keep a trace's end, its most
telling part, within that."""


def _details(text: str) -> str:
    text = secrets.mask(text)  # what leaves the process never shows a secret it holds
    return text if len(text) <= MAX_DETAILS else "...\n" + text[-MAX_DETAILS:]


async def _abort(context: grpc.aio.ServicerContext, exc: Exception) -> NoReturn:
    if isinstance(exc, ConfigException):
        await context.abort(grpc.StatusCode.INVALID_ARGUMENT, _details(str(exc)))
    if isinstance(exc, UnitConflict):
        await context.abort(grpc.StatusCode.ALREADY_EXISTS, _details(str(exc)))
    if isinstance(exc, HostClosing):
        await context.abort(grpc.StatusCode.UNAVAILABLE, _details(str(exc)))
    if isinstance(exc, RetriableError):  # a check it needs could not be made now: no verdict
        await context.abort(grpc.StatusCode.FAILED_PRECONDITION, _details(str(exc)))
    await context.abort(grpc.StatusCode.INTERNAL, _details(format_trace(exc)))
    raise AssertionError("context.abort raises")  # for the type checker: abort never returns


class Lease:
    """How long the worker has said this host may run on (``KeepAlive``); none until it first
    says so. ``clock`` is monotonic seconds."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self.until: float | None = None
        self.stop_s = 0.0

    def renew(self, lease_s: float, stop_s: float) -> None:
        self.until = self._clock() + lease_s
        self.stop_s = stop_s

    def expired(self) -> bool:
        return self.until is not None and self._clock() > self.until


class PluginHostService(pb_grpc.PluginHostServicer):
    """Serves the process's ``HostedPlugins``."""

    def __init__(
        self,
        plugins: HostedPlugins,
        lease: Lease | None = None,
        on_levels: Callable[[Mapping[str, str]], None] | None = None,
    ) -> None:
        self.plugins = plugins
        self.lease = lease or Lease()
        self._on_levels = on_levels  # a Java plugin's JVM, told the cluster's levels too

    async def KeepAlive(
        self, request: pb.KeepAliveRequest, context: grpc.aio.ServicerContext
    ) -> pb.KeepAliveResponse:
        self.lease.renew(request.lease_ms / 1000, request.stop_ms / 1000)
        log.hold(request.log_levels)  # the cluster's, as its worker applied them (KIP-976)
        if self._on_levels is not None:
            self._on_levels(request.log_levels)
        return pb.KeepAliveResponse()

    async def ForgetTopics(
        self, request: pb.ForgetTopicsRequest, context: grpc.aio.ServicerContext
    ) -> pb.ForgetTopicsResponse:
        plugin = self.plugins.of_connector(request.connector)
        if plugin is not None:
            plugin.forget_topics(request.connector)
        return pb.ForgetTopicsResponse()

    async def Describe(
        self, request: pb.DescribeRequest, context: grpc.aio.ServicerContext
    ) -> pb.DescribeResponse:
        d = self.plugins.descriptor
        return pb.DescribeResponse(
            plugin_class=d.class_name,
            version=d.version,
            type=d.type,
            components=[component_keys_to_pb(c) for c in self.plugins.component_keys()],
        )

    async def Validate(
        self, request: pb.ValidateRequest, context: grpc.aio.ServicerContext
    ) -> configdef_pb2.ConfigInfos:
        try:
            config = dict(request.config)
            plugin = self.plugins.for_call(request.plugin_class, config)
            infos = plugin.validate(config, request.definition_only)
        except Exception as exc:  # noqa: BLE001 - every failure becomes a status with text
            await _abort(context, exc)
        return config_infos_to_pb(infos)

    async def AlterOffsets(
        self, request: pb.ConnectorAlterOffsetsRequest, context: grpc.aio.ServicerContext
    ) -> pb.ConnectorAlterOffsetsResponse:
        try:
            entries = json.loads(request.offsets_json)
            config = dict(request.config)
            handled, refusal = self.plugins.for_call(request.plugin_class, config).alter_offsets(
                request.name, config, entries, request.reset
            )
        except Exception as exc:  # noqa: BLE001 - every failure becomes a status with text
            await _abort(context, exc)
        return pb.ConnectorAlterOffsetsResponse(handled=handled, refusal=refusal)

    async def StartConnector(
        self, request: pb.StartConnectorRequest, context: grpc.aio.ServicerContext
    ) -> pb.StartConnectorResponse:
        try:
            config = dict(request.config)
            plugin = self.plugins.for_unit(request.name, config)
            configs = await plugin.start_connector(request.name, config)
        except Exception as exc:  # noqa: BLE001 - every failure becomes a status with text
            await _abort(context, exc)
        return pb.StartConnectorResponse(tasks=[pb.TaskConfig(config=c) for c in configs])

    async def StopConnector(
        self, request: pb.StopRequest, context: grpc.aio.ServicerContext
    ) -> pb.StopResponse:
        plugin = self.plugins.of_connector(request.connector)
        stopped = plugin is not None and await plugin.stop_connector(
            request.connector, request.deleted
        )
        return pb.StopResponse(stopped=stopped)

    async def StartTask(
        self, request: pb.StartTaskRequest, context: grpc.aio.ServicerContext
    ) -> pb.StartTaskResponse:
        if request.task < 0:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "task must be >= 0")
        try:
            config = dict(request.connector_config)
            await self.plugins.for_unit(request.connector, config).start_task(
                WorkUnit(request.connector, request.task), config, dict(request.task_config)
            )
        except Exception as exc:  # noqa: BLE001 - every failure becomes a status with text
            await _abort(context, exc)
        return pb.StartTaskResponse()

    async def StopTask(
        self, request: pb.StopRequest, context: grpc.aio.ServicerContext
    ) -> pb.StopResponse:
        unit = WorkUnit(request.connector, request.task)
        plugin = self.plugins.of_connector(request.connector)
        stopped = plugin is not None and await plugin.stop_task(unit, request.deleted)
        return pb.StopResponse(stopped=stopped)

    async def Cleanup(
        self, request: pb.CleanupRequest, context: grpc.aio.ServicerContext
    ) -> pb.StopResponse:
        try:
            config = dict(request.connector_config)
            await self.plugins.for_unit(request.connector, config).clean_up(
                WorkUnit(request.connector, request.task), config, dict(request.task_config)
            )
        except Exception as exc:  # noqa: BLE001 - every failure becomes a status with text
            await _abort(context, exc)
        return pb.StopResponse()

    async def Watch(
        self, request: pb.WatchRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[pb.UnitEvent]:
        async for event in self.plugins.bus.subscribe():
            yield host_event_to_pb(event)
