"""The config service's gRPC API: protobuf in and out at this edge, commands underneath.

``ConfigCalls`` holds the calls of ``ConfigService`` without gRPC: a request in, a response out,
``ConfigRejected`` for a refusal. ``ConfigServicer`` answers them on the wire, a refusal as its
status code (``CODES``); automation applies the commands it reads through the same calls, in the
process, so a command takes exactly the path a gRPC client's call takes."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from typing import TypeVar

import grpc
from google.protobuf.message import Message

from headrace.config.commands import Commands
from headrace.config.commands.restarts import RestartPlan
from headrace.config.commands.servicecalls import Signed
from headrace.config.commands.views import ConnectorView
from headrace.config.installs.installs import Install, PluginInstalls
from headrace.config.offsets import ConnectorOffset, modified, parse_entries
from headrace.config.validation import ConfigRejected, Problem
from headrace.core.model.autorestart import Shown
from headrace.core.model.configstate import AppliedRequest
from headrace.core.model.status import StatusState, UnitStatus
from headrace.core.model.structs import State, Target, WorkUnit
from headrace.core.model.wire import config_infos_to_pb, key_info_to_pb
from headrace.core.security.sessionkey import now_ms
from headrace.v1 import config_pb2, config_pb2_grpc, configdef_pb2, internal_pb2_grpc

T = TypeVar("T")

SERVICE = config_pb2.DESCRIPTOR.services_by_name["ConfigService"]

CODES = {
    Problem.INVALID: grpc.StatusCode.INVALID_ARGUMENT,
    Problem.NOT_FOUND: grpc.StatusCode.NOT_FOUND,
    Problem.NO_PLUGIN: grpc.StatusCode.NOT_FOUND,
    Problem.CONFLICT: grpc.StatusCode.ALREADY_EXISTS,
    Problem.PRECONDITION: grpc.StatusCode.FAILED_PRECONDITION,
    Problem.UNAUTHENTICATED: grpc.StatusCode.UNAUTHENTICATED,
    Problem.FORBIDDEN: grpc.StatusCode.FAILED_PRECONDITION,
    Problem.UNAVAILABLE: grpc.StatusCode.UNAVAILABLE,
    Problem.REFUSED: grpc.StatusCode.FAILED_PRECONDITION,
}


async def _answer(context: grpc.aio.ServicerContext, call: Awaitable[T]) -> T:
    try:
        return await call
    except ConfigRejected as exc:
        await context.abort(CODES[exc.problem], exc.message)
        raise  # abort raises; this keeps type checkers honest


async def _done(call: Awaitable[None]) -> config_pb2.LifecycleResponse:
    """The empty answer of a call that only changes state."""
    await call
    return config_pb2.LifecycleResponse()


def _info(view: ConnectorView) -> config_pb2.ConnectorInfo:
    return config_pb2.ConnectorInfo(
        name=view.name,
        config=dict(view.config),
        tasks=[config_pb2.TaskInfo(task=i, config=dict(t)) for i, t in enumerate(view.tasks)],
        type=view.type,
        target_state=view.target.value,
    )


def _installed(install: Install) -> config_pb2.InstalledPlugin:
    return config_pb2.InstalledPlugin(
        coordinate=install.coordinate,
        sha512=install.plugin.sha512,
        at_ms=install.plugin.at_ms,
        plugins=[
            config_pb2.PluginInfo(
                class_name=p.class_name, type=p.type, version=p.version, aliases=p.aliases
            )
            for p in install.holds
        ],
    )


def _target(value: str) -> Target | None:
    """The initial state a request names; None for none."""
    if not value:
        return None
    try:
        return Target(value.upper())
    except ValueError:
        choices = ", ".join(t.value for t in Target)
        raise ConfigRejected(
            Problem.INVALID, f"initial_state: {value!r} is not one of {choices}"
        ) from None


def _status(
    view: ConnectorView,
    statuses: StatusState,
    plan: RestartPlan | None = None,
    auto: Mapping[int, Shown] | None = None,
) -> config_pb2.ConnectorStatus:
    """The connector's status; the units of a restart ``plan`` show RESTARTING."""
    restarting = set(plan.units) if plan is not None else set()

    def unit(u: WorkUnit) -> config_pb2.UnitStatus:
        reported = _unit(u, statuses.get(u), (auto or {}).get(u.task))
        if u.task in restarting:
            reported.state = State.RESTARTING.value
        return reported

    return config_pb2.ConnectorStatus(
        name=view.name,
        type=view.type,
        connector=unit(WorkUnit.of(view.name)),
        tasks=[unit(WorkUnit(view.name, i)) for i in range(len(view.tasks))],
    )


def _unit(
    unit: WorkUnit, status: UnitStatus | None, auto: Shown | None = None
) -> config_pb2.UnitStatus:
    if status is None:
        return config_pb2.UnitStatus(task=unit.task, state=State.UNASSIGNED.value)
    shown = auto or Shown()
    return config_pb2.UnitStatus(
        task=unit.task,
        state=status.state.value,
        worker_id=status.worker_id,
        trace=status.trace,
        plugin_version=status.plugin_version,
        auto_restart_attempts=shown.attempts,
        auto_restart_next_ms=shown.next_ms,
        auto_restart_given_up=shown.given_up,
    )


class ConfigCalls:
    """Each call of ``ConfigService``, by its name: protobuf in and out, commands underneath;
    a refusal raises ``ConfigRejected``."""

    def __init__(self, commands: Commands, installs: PluginInstalls | None = None) -> None:
        """``installs``: the cluster's Java plugin installs; without, those calls are refused."""
        self._commands = commands
        self._installs = installs

    def _plugin_installs(self) -> PluginInstalls:
        if self._installs is None:
            raise ConfigRejected(
                Problem.PRECONDITION, "plugins are installed for a cluster, not in standalone mode"
            )
        return self._installs

    async def InstallPlugin(
        self, request: config_pb2.InstallPluginRequest
    ) -> config_pb2.InstalledPlugin:
        done = await self._plugin_installs().install(request.coordinate, request.sha512 or None)
        return _installed(done)

    async def UninstallPlugin(
        self, request: config_pb2.UninstallPluginRequest
    ) -> config_pb2.UninstallPluginResponse:
        await self._plugin_installs().uninstall(request.coordinate)
        return config_pb2.UninstallPluginResponse()

    async def ListInstalledPlugins(
        self, request: config_pb2.ListInstalledPluginsRequest
    ) -> config_pb2.ListInstalledPluginsResponse:
        listed = self._plugin_installs().listed()
        return config_pb2.ListInstalledPluginsResponse(plugins=[_installed(i) for i in listed])

    async def CreateConnector(
        self, request: config_pb2.CreateConnectorRequest
    ) -> config_pb2.ConnectorInfo:
        offsets = None
        if request.HasField("initial_offsets"):
            given = request.initial_offsets.offsets
            offsets = parse_entries([(o.partition, o.offset) for o in given])
        create = self._commands.create(
            request.name, dict(request.config), _target(request.initial_state), offsets
        )
        return _info(await create)

    async def PutConnectorConfig(
        self, request: config_pb2.PutConnectorConfigRequest
    ) -> config_pb2.PutConnectorConfigResponse:
        view, created = await self._commands.put_config(request.name, dict(request.config))
        return config_pb2.PutConnectorConfigResponse(info=_info(view), created=created)

    async def PatchConnectorConfig(
        self, request: config_pb2.PatchConnectorConfigRequest
    ) -> config_pb2.ConnectorInfo:
        patch = self._commands.patch(request.name, dict(request.set), list(request.remove))
        return _info(await patch)

    async def GetConnector(self, request: config_pb2.ConnectorRequest) -> config_pb2.ConnectorInfo:
        return _info(await self._commands.get(request.name))

    async def ListConnectors(
        self, request: config_pb2.ListConnectorsRequest
    ) -> config_pb2.ListConnectorsResponse:
        return config_pb2.ListConnectorsResponse(names=await self._commands.list())

    async def DeleteConnector(
        self, request: config_pb2.ConnectorRequest
    ) -> config_pb2.DeleteConnectorResponse:
        await self._commands.delete(request.name)
        return config_pb2.DeleteConnectorResponse()

    async def GetConnectorStatus(
        self, request: config_pb2.ConnectorRequest
    ) -> config_pb2.ConnectorStatus:
        view, statuses = await self._commands.status(request.name)
        return _status(view, statuses, auto=self._commands.restarts.shown(view.name, statuses))

    async def GetTaskStatus(self, request: config_pb2.TaskRequest) -> config_pb2.UnitStatus:
        view, statuses = await self._commands.task_status(request.name, request.task)
        unit = WorkUnit(view.name, request.task)
        auto = self._commands.restarts.shown(view.name, statuses).get(unit.task)
        return _unit(unit, statuses.get(unit), auto)

    async def PauseConnector(
        self, request: config_pb2.ConnectorRequest
    ) -> config_pb2.LifecycleResponse:
        return await _done(self._commands.pause(request.name))

    async def ResumeConnector(
        self, request: config_pb2.ConnectorRequest
    ) -> config_pb2.LifecycleResponse:
        return await _done(self._commands.resume(request.name))

    async def StopConnector(
        self, request: config_pb2.ConnectorRequest
    ) -> config_pb2.LifecycleResponse:
        return await _done(self._commands.stop(request.name))

    async def RestartConnector(
        self, request: config_pb2.RestartConnectorRequest
    ) -> config_pb2.ConnectorStatus:
        restart = self._commands.restarts.restart(
            request.name, include_tasks=request.include_tasks, only_failed=request.only_failed
        )
        view, statuses, plan = await restart
        return _status(view, statuses, plan)

    async def RestartTask(self, request: config_pb2.TaskRequest) -> config_pb2.LifecycleResponse:
        return await _done(self._commands.restarts.task(request.name, request.task))

    async def ListPlugins(
        self, request: config_pb2.ListPluginsRequest
    ) -> config_pb2.ListPluginsResponse:
        aliases = {p.class_name: p.aliases for p in self._commands.catalog.plugins}
        return config_pb2.ListPluginsResponse(
            plugins=[
                config_pb2.PluginInfo(
                    class_name=p.class_name,
                    type=p.type,
                    version=p.version,
                    aliases=aliases.get(p.class_name, ()),
                    error=p.error,
                )
                for p in self._commands.plugin_calls.listed(connectors_only=request.connectors_only)
            ]
        )

    async def GetPluginConfig(
        self, request: config_pb2.PluginConfigRequest
    ) -> config_pb2.PluginConfig:
        keys = await self._commands.plugin_calls.config_keys(
            request.plugin, request.version or None
        )
        return config_pb2.PluginConfig(keys=[key_info_to_pb(k) for k in keys])

    async def ValidateConfig(
        self, request: config_pb2.ValidateConfigRequest
    ) -> configdef_pb2.ConfigInfos:
        validated = self._commands.plugin_calls.validate(request.plugin, dict(request.config))
        return config_infos_to_pb(await validated)

    async def GetOffsets(self, request: config_pb2.ConnectorRequest) -> config_pb2.ConnectorOffsets:
        found = await self._commands.connector_offsets.read(request.name)
        return config_pb2.ConnectorOffsets(offsets=[_offset(o) for o in found])

    async def AlterOffsets(
        self, request: config_pb2.AlterOffsetsRequest
    ) -> config_pb2.OffsetsChanged:
        entries = parse_entries([(o.partition, o.offset) for o in request.offsets])
        handled = await self._commands.connector_offsets.alter(request.name, entries)
        return config_pb2.OffsetsChanged(message=modified(handled, reset=False))

    async def ResetOffsets(self, request: config_pb2.ConnectorRequest) -> config_pb2.OffsetsChanged:
        handled = await self._commands.connector_offsets.reset(request.name)
        return config_pb2.OffsetsChanged(message=modified(handled, reset=True))

    async def GetConnectorTopics(
        self, request: config_pb2.ConnectorRequest
    ) -> config_pb2.ConnectorTopics:
        topics = await self._commands.topics.of(request.name)
        return config_pb2.ConnectorTopics(name=request.name, topics=topics)

    async def ResetConnectorTopics(
        self, request: config_pb2.ConnectorRequest
    ) -> config_pb2.LifecycleResponse:
        await self._commands.topics.reset(request.name)
        return config_pb2.LifecycleResponse()

    async def applied(self, request_id: str) -> AppliedRequest | None:
        """Whether the command topic's command of this request id was applied."""
        return await self._commands.service_calls.applied(request_id)

    async def replayed(self, method: str, applied: AppliedRequest) -> Message:
        """The answer to a command found applied: what the call answers when it succeeds,
        made from the connector as it is now, without applying anything."""
        name = config_pb2.ConnectorRequest(name=applied.connector)
        match method:
            case "CreateConnector" | "PatchConnectorConfig":
                return await self.GetConnector(name)
            case "PutConnectorConfig":
                info = await self.GetConnector(name)
                return config_pb2.PutConnectorConfigResponse(info=info, created=applied.created)
            case "DeleteConnector":
                return config_pb2.DeleteConnectorResponse()
            case "RestartConnector":
                return await self.GetConnectorStatus(name)
            case _:  # pause, resume, stop, a task's restart: the empty answer of a change
                return config_pb2.LifecycleResponse()


class ConfigServicer(config_pb2_grpc.ConfigServiceServicer):
    """``ConfigService`` on the wire: each call of :class:`ConfigCalls`, a refusal answered
    with its status code. Its methods are made below, one per method of the service."""

    def __init__(self, calls: ConfigCalls) -> None:
        self._calls = calls


def _served(method: str) -> Callable[..., Awaitable[Message]]:
    async def serve(
        self: ConfigServicer, request: Message, context: grpc.aio.ServicerContext
    ) -> Message:
        answered: Message = await _answer(context, getattr(self._calls, method)(request))
        return answered

    serve.__name__ = method
    return serve


for _method in SERVICE.methods:
    setattr(ConfigServicer, _method.name, _served(_method.name))


def _json(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _offset(entry: ConnectorOffset) -> config_pb2.ConnectorOffset:
    offset = "" if entry.offset is None else _json(dict(entry.offset))
    return config_pb2.ConnectorOffset(partition=_json(dict(entry.partition)), offset=offset)


class TaskConfigServicer(internal_pb2_grpc.TaskConfigServiceServicer):
    """The internal call workers make, beside the public service and refused unless signed."""

    def __init__(self, commands: Commands) -> None:
        self._commands = commands

    async def PutTaskConfigs(
        self, request: config_pb2.PutTaskConfigsRequest, context: grpc.aio.ServicerContext
    ) -> config_pb2.PutTaskConfigsResponse:
        tasks = [dict(t.config) for t in sorted(request.tasks, key=lambda t: t.task)]
        metadata = {k: v for k, v in (context.invocation_metadata() or ()) if isinstance(v, str)}
        signed = Signed(request.SerializeToString(deterministic=True), metadata, now_ms())
        put = self._commands.service_calls.put_task_configs(
            request.connector, tasks, signed, request.incarnation, request.config_version
        )
        return config_pb2.PutTaskConfigsResponse(changed=await _answer(context, put))
