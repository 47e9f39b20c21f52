"""A plugin process's ``PluginHost`` API in domain terms: what the worker and the config service
call, with configs and the shared vocabulary in and out, and protobuf kept here.

A call that fails raises :class:`PluginCallError` with the process's own message; ``gone`` says
whether the process itself is unreachable (it exited, or did not answer in time), as opposed to
having answered that the call failed.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, TypeVar

import grpc

from headrace.core.model import wire
from headrace.core.model.configinfo import ComponentKeys, ConfigInfos
from headrace.core.model.structs import Cleanup, HostEvent, WorkUnit
from headrace.v1 import plugin_pb2, plugin_pb2_grpc

T = TypeVar("T")

_GONE = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)


class PluginCallError(Exception):
    """A call into a plugin process failed; the message is the process's own."""

    def __init__(self, details: str, *, gone: bool, retriable: bool = False) -> None:
        super().__init__(details)
        self.details = details
        self.gone = gone
        self.retriable = retriable  # the process could not answer now: asked again, it may


class UnknownEvent(ValueError):
    """An event in a state this side does not know: it says nothing it could act on."""

    def __init__(self, state: str) -> None:
        super().__init__(f"a unit event in state {state!r}")
        self.state = state


async def _called(call: Callable[[], Awaitable[T]]) -> T:
    """The call's answer; PluginCallError when it fails, or when the channel to the process
    is closed already (its process stopped by the worker), which gRPC says as it makes the call."""
    try:
        return await call()
    except grpc.aio.AioRpcError as exc:
        raise PluginCallError(
            exc.details() or str(exc.code()),
            gone=exc.code() in _GONE,
            retriable=exc.code() is grpc.StatusCode.FAILED_PRECONDITION,
        ) from None
    except grpc.aio.UsageError as exc:
        raise PluginCallError(f"the channel to the process is closed: {exc}", gone=True) from None


class PluginClient:
    """One plugin process's calls over its channel (a Unix socket only its owner may reach)."""

    def __init__(self, channel: grpc.aio.Channel) -> None:
        self._stub = plugin_pb2_grpc.PluginHostStub(channel)

    async def validate(
        self,
        config: Mapping[str, str],
        *,
        definition_only: bool,
        deadline_s: float,
        plugin_class: str = "",
    ) -> ConfigInfos:
        """The keys of the plugin ``plugin_class`` (else the one ``config`` names), with each
        one's verdict on ``config`` unless ``definition_only``."""
        request = plugin_pb2.ValidateRequest(
            config=dict(config), definition_only=definition_only, plugin_class=plugin_class
        )
        answer = await _called(lambda: self._stub.Validate(request, timeout=deadline_s))
        return wire.config_infos_from_pb(answer)

    async def alter_offsets(
        self,
        name: str,
        config: Mapping[str, str],
        entries: list[dict[str, Any]],
        *,
        reset: bool,
        deadline_s: float,
        plugin_class: str = "",
    ) -> tuple[bool, str]:
        """KIP-875: whether the connector altered its own offsets too, and why it refused
        ("" when it did not)."""
        request = plugin_pb2.ConnectorAlterOffsetsRequest(
            name=name,
            config=dict(config),
            offsets_json=json.dumps(entries),
            reset=reset,
            plugin_class=plugin_class,
        )
        answer = await _called(lambda: self._stub.AlterOffsets(request, timeout=deadline_s))
        return answer.handled, answer.refusal

    async def describe(self, *, deadline_s: float) -> list[ComponentKeys]:
        """The components from the plugin path this process loaded, with their keys."""
        answer = await _called(
            lambda: self._stub.Describe(plugin_pb2.DescribeRequest(), timeout=deadline_s)
        )
        return [wire.component_keys_from_pb(c) for c in answer.components]

    async def start_connector(
        self, name: str, config: Mapping[str, str], *, deadline_s: float
    ) -> list[dict[str, str]]:
        """Starts the connector (or asks a running one again); its task configs."""
        request = plugin_pb2.StartConnectorRequest(name=name, config=dict(config))
        started = await _called(lambda: self._stub.StartConnector(request, timeout=deadline_s))
        return [dict(t.config) for t in started.tasks]

    async def start_task(
        self,
        unit: WorkUnit,
        connector_config: Mapping[str, str],
        task_config: Mapping[str, str],
        *,
        deadline_s: float,
    ) -> None:
        request = plugin_pb2.StartTaskRequest(
            connector=unit.connector,
            task=unit.task,
            connector_config=dict(connector_config),
            task_config=dict(task_config),
        )
        await _called(lambda: self._stub.StartTask(request, timeout=deadline_s))

    async def stop(self, unit: WorkUnit, *, deleted: bool, deadline_s: float) -> bool:
        """Stops a connector or a task; ``deleted``: its connector was deleted. Whether the
        process had it to stop."""
        request = plugin_pb2.StopRequest(connector=unit.connector, task=unit.task, deleted=deleted)
        call = self._stub.StopConnector if unit.is_connector else self._stub.StopTask
        answer = await _called(lambda: call(request, timeout=deadline_s))
        return bool(answer.stopped)

    async def clean_up(self, cleanup: Cleanup, *, deadline_s: float) -> None:
        """Starts a deleted unit's plugin only to stop it with ``deleted=True``."""
        request = plugin_pb2.CleanupRequest(
            connector=cleanup.unit.connector,
            task=cleanup.unit.task,
            connector_config=dict(cleanup.connector_config),
            task_config=dict(cleanup.task_config),
        )
        await _called(lambda: self._stub.Cleanup(request, timeout=deadline_s))

    async def keep_alive(
        self,
        lease_s: float,
        stop_s: float,
        *,
        deadline_s: float,
        log_levels: Mapping[str, str] | None = None,
    ) -> None:
        """Renews the process's lease: it may run on unheard for ``lease_s``, then has
        ``stop_s`` to stop its units. ``log_levels`` are the cluster's its worker applied
        (KIP-976), which it holds its own loggers to."""
        request = plugin_pb2.KeepAliveRequest(
            lease_ms=int(lease_s * 1000), stop_ms=int(stop_s * 1000), log_levels=log_levels
        )
        await _called(lambda: self._stub.KeepAlive(request, timeout=deadline_s))

    async def forget_topics(self, connector: str, *, deadline_s: float) -> None:
        """Has the connector's tasks in this process report the topics they use again, as they
        next use them (KIP-558's reset)."""
        request = plugin_pb2.ForgetTopicsRequest(connector=connector)
        await _called(lambda: self._stub.ForgetTopics(request, timeout=deadline_s))

    async def watch(self, on_unknown: Callable[[UnknownEvent], None]) -> AsyncIterator[HostEvent]:
        """The process's unit events as they come, until it goes away (PluginCallError);
        an event this side cannot read goes to ``on_unknown`` instead."""
        stream = self._stub.Watch(plugin_pb2.WatchRequest())
        try:
            async for message in stream:
                try:
                    yield wire.host_event_from_pb(message)
                except ValueError:
                    on_unknown(UnknownEvent(message.state))
        except grpc.aio.AioRpcError as exc:
            raise PluginCallError(exc.details() or str(exc.code()), gone=True) from None
