"""The config service's gRPC API: protobuf in and out at this edge, commands underneath."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TypeVar

import grpc

from headrace.config.commands import Commands, ConnectorView
from headrace.config.validation import ConfigRejected, Problem
from headrace.core.status import UnitStatus
from headrace.core.structs import State, WorkUnit
from headrace.v1 import config_pb2, config_pb2_grpc

T = TypeVar("T")

CODES = {
    Problem.INVALID: grpc.StatusCode.INVALID_ARGUMENT,
    Problem.NOT_FOUND: grpc.StatusCode.NOT_FOUND,
    Problem.CONFLICT: grpc.StatusCode.ALREADY_EXISTS,
}


async def _answer(context: grpc.aio.ServicerContext, call: Awaitable[T]) -> T:
    try:
        return await call
    except ConfigRejected as exc:
        await context.abort(CODES[exc.problem], exc.message)
        raise  # abort raises; this keeps type checkers honest


def _info(view: ConnectorView) -> config_pb2.ConnectorInfo:
    return config_pb2.ConnectorInfo(
        name=view.name,
        config=dict(view.config),
        tasks=[config_pb2.TaskInfo(task=i, config=dict(t)) for i, t in enumerate(view.tasks)],
        type=view.type,
    )


def _unit(unit: WorkUnit, status: UnitStatus | None) -> config_pb2.UnitStatus:
    if status is None:
        return config_pb2.UnitStatus(task=unit.task, state=State.UNASSIGNED.value)
    return config_pb2.UnitStatus(
        task=unit.task,
        state=status.state.value,
        worker_id=status.worker_id,
        trace=status.trace,
        plugin_version=status.plugin_version,
    )


class ConfigServicer(config_pb2_grpc.ConfigServiceServicer):
    def __init__(self, commands: Commands) -> None:
        self._commands = commands

    async def CreateConnector(
        self, request: config_pb2.CreateConnectorRequest, context: grpc.aio.ServicerContext
    ) -> config_pb2.ConnectorInfo:
        view = await _answer(context, self._commands.create(request.name, dict(request.config)))
        return _info(view)

    async def GetConnector(
        self, request: config_pb2.ConnectorRequest, context: grpc.aio.ServicerContext
    ) -> config_pb2.ConnectorInfo:
        return _info(await _answer(context, self._commands.get(request.name)))

    async def ListConnectors(
        self, request: config_pb2.ListConnectorsRequest, context: grpc.aio.ServicerContext
    ) -> config_pb2.ListConnectorsResponse:
        return config_pb2.ListConnectorsResponse(names=await self._commands.list())

    async def DeleteConnector(
        self, request: config_pb2.ConnectorRequest, context: grpc.aio.ServicerContext
    ) -> config_pb2.DeleteConnectorResponse:
        await _answer(context, self._commands.delete(request.name))
        return config_pb2.DeleteConnectorResponse()

    async def GetConnectorStatus(
        self, request: config_pb2.ConnectorRequest, context: grpc.aio.ServicerContext
    ) -> config_pb2.ConnectorStatus:
        view, statuses = await _answer(context, self._commands.status(request.name))
        return config_pb2.ConnectorStatus(
            name=view.name,
            type=view.type,
            connector=_unit(WorkUnit.of(view.name), statuses.get(WorkUnit.of(view.name))),
            tasks=[
                _unit(WorkUnit(view.name, i), statuses.get(WorkUnit(view.name, i)))
                for i in range(len(view.tasks))
            ],
        )

    async def ListPlugins(
        self, request: config_pb2.ListPluginsRequest, context: grpc.aio.ServicerContext
    ) -> config_pb2.ListPluginsResponse:
        return config_pb2.ListPluginsResponse(
            plugins=[
                config_pb2.PluginInfo(
                    class_name=p.class_name, type=p.type, version=p.version, aliases=p.aliases
                )
                for p in self._commands.catalog.plugins
            ]
        )

    async def PutTaskConfigs(
        self, request: config_pb2.PutTaskConfigsRequest, context: grpc.aio.ServicerContext
    ) -> config_pb2.PutTaskConfigsResponse:
        tasks = [dict(t.config) for t in sorted(request.tasks, key=lambda t: t.task)]
        changed = await _answer(context, self._commands.put_task_configs(request.connector, tasks))
        return config_pb2.PutTaskConfigsResponse(changed=changed)
