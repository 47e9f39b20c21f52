"""The config service as its clients ask it (the ``headrace`` command, the demo, the tests and
the benchmarks): a method per call of ``ConfigService`` but ``PutTaskConfigs`` (which only
workers send), over one channel, answering headrace's own types, never protobuf. A failed call
raises ``grpc.RpcError`` (``headrace.clients.errors`` reads its code)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import grpc

from headrace.clients.errors import is_not_found
from headrace.core.model.configinfo import ConfigInfos, KeyInfo
from headrace.core.model.plugins import PluginInfo
from headrace.core.model.structs import State, Target
from headrace.core.model.wire import config_infos_from_pb, key_info_from_pb
from headrace.core.rpc import close_channel
from headrace.core.security import tls
from headrace.core.settings import Settings
from headrace.v1 import config_pb2, config_pb2_grpc


@dataclass(frozen=True)
class TaskInfo:
    task: int
    config: Mapping[str, str]


@dataclass(frozen=True)
class ConnectorInfo:
    """A connector as the config service answers it: its config (secret values hidden), its
    task configs, its type and the state an operator wants it in."""

    name: str
    config: Mapping[str, str]
    tasks: tuple[TaskInfo, ...]
    type: str
    target_state: Target


@dataclass(frozen=True)
class UnitState:
    """A connector's (``task`` -1) or a task's last reported state, the plugin version that
    runs it and, with ``auto.restart.enable``, its automatic restarts so far in a row, when
    the next is due (epoch ms; 0 for none) and whether they were given up."""

    task: int
    state: State
    worker_id: str = ""
    trace: str = ""
    plugin_version: str = ""
    auto_restart_attempts: int = 0
    auto_restart_next_ms: int = 0
    auto_restart_given_up: bool = False


@dataclass(frozen=True)
class ConnectorStatus:
    name: str
    type: str
    connector: UnitState
    tasks: tuple[UnitState, ...]


@dataclass(frozen=True)
class InstalledPlugin:
    """A Java plugin installed for the whole cluster from Maven, and what it holds."""

    coordinate: str
    sha512: str
    at_ms: int
    plugins: tuple[PluginInfo, ...] = field(default=())


def _info(msg: config_pb2.ConnectorInfo) -> ConnectorInfo:
    return ConnectorInfo(
        msg.name,
        dict(msg.config),
        tuple(TaskInfo(t.task, dict(t.config)) for t in msg.tasks),
        msg.type,
        Target(msg.target_state) if msg.target_state else Target.RUNNING,
    )


def _unit(msg: config_pb2.UnitStatus) -> UnitState:
    return UnitState(
        msg.task,
        State(msg.state),
        msg.worker_id,
        msg.trace,
        msg.plugin_version,
        msg.auto_restart_attempts,
        msg.auto_restart_next_ms,
        msg.auto_restart_given_up,
    )


def _status(msg: config_pb2.ConnectorStatus) -> ConnectorStatus:
    return ConnectorStatus(
        msg.name, msg.type, _unit(msg.connector), tuple(_unit(t) for t in msg.tasks)
    )


def _plugin(msg: config_pb2.PluginInfo) -> PluginInfo:
    return PluginInfo(msg.class_name, msg.type, msg.version, msg.error, tuple(msg.aliases))


def _installed(msg: config_pb2.InstalledPlugin) -> InstalledPlugin:
    return InstalledPlugin(
        msg.coordinate, msg.sha512, msg.at_ms, tuple(_plugin(p) for p in msg.plugins)
    )


class ConfigClient:
    """The config service's calls over one channel, with TLS and the token ``settings`` give
    (``headrace.core.security.tls``)."""

    def __init__(self, address: str, settings: Settings) -> None:
        self._channel = tls.channel(address, settings)
        self._stub = config_pb2_grpc.ConfigServiceStub(self._channel)

    def __enter__(self) -> ConfigClient:
        return self

    def __exit__(self, *exc: object) -> None:
        close_channel(self._channel)

    def create(
        self, name: str, config: Mapping[str, str], initial_state: str = ""
    ) -> ConnectorInfo:
        request = config_pb2.CreateConnectorRequest(
            name=name, config=dict(config), initial_state=initial_state
        )
        return _info(self._stub.CreateConnector(request))

    def put_config(self, name: str, config: Mapping[str, str]) -> tuple[ConnectorInfo, bool]:
        """The connector as it now is, and whether the call created it."""
        request = config_pb2.PutConnectorConfigRequest(name=name, config=dict(config))
        answer = self._stub.PutConnectorConfig(request)
        return _info(answer.info), answer.created

    def patch(self, name: str, changes: Mapping[str, str | None]) -> ConnectorInfo:
        """Sets each key to its value; a None value removes the key (Connect's PATCH)."""
        request = config_pb2.PatchConnectorConfigRequest(
            name=name,
            set={k: v for k, v in changes.items() if v is not None},
            remove=[k for k, v in changes.items() if v is None],
        )
        return _info(self._stub.PatchConnectorConfig(request))

    def pause(self, name: str) -> None:
        self._stub.PauseConnector(config_pb2.ConnectorRequest(name=name))

    def resume(self, name: str) -> None:
        self._stub.ResumeConnector(config_pb2.ConnectorRequest(name=name))

    def stop(self, name: str) -> None:
        self._stub.StopConnector(config_pb2.ConnectorRequest(name=name))

    def restart(
        self, name: str, *, include_tasks: bool = False, only_failed: bool = False
    ) -> ConnectorStatus:
        request = config_pb2.RestartConnectorRequest(
            name=name, include_tasks=include_tasks, only_failed=only_failed
        )
        return _status(self._stub.RestartConnector(request))

    def restart_task(self, name: str, task: int) -> None:
        self._stub.RestartTask(config_pb2.TaskRequest(name=name, task=task))

    def offsets(self, name: str) -> list[dict[str, Any]]:
        """The connector's offsets in Connect's shape: ``{"partition": …, "offset": …}``."""
        found = self._stub.GetOffsets(config_pb2.ConnectorRequest(name=name)).offsets
        return [
            {"partition": json.loads(o.partition), "offset": json.loads(o.offset or "null")}
            for o in found
        ]

    def alter_offsets(self, name: str, offsets: list[dict[str, Any]]) -> str:
        request = config_pb2.AlterOffsetsRequest(
            name=name,
            offsets=[
                config_pb2.ConnectorOffset(
                    partition=json.dumps(o["partition"]), offset=json.dumps(o.get("offset"))
                )
                for o in offsets
            ],
        )
        return str(self._stub.AlterOffsets(request).message)

    def reset_offsets(self, name: str) -> str:
        return str(self._stub.ResetOffsets(config_pb2.ConnectorRequest(name=name)).message)

    def topics(self, name: str) -> list[str]:
        """The topics the connector's tasks used (KIP-558), by name."""
        return list(self._stub.GetConnectorTopics(config_pb2.ConnectorRequest(name=name)).topics)

    def reset_topics(self, name: str) -> None:
        self._stub.ResetConnectorTopics(config_pb2.ConnectorRequest(name=name))

    def task_status(self, name: str, task: int) -> UnitState:
        return _unit(self._stub.GetTaskStatus(config_pb2.TaskRequest(name=name, task=task)))

    def get(self, name: str) -> ConnectorInfo:
        return _info(self._stub.GetConnector(config_pb2.ConnectorRequest(name=name)))

    def names(self) -> list[str]:
        return list(self._stub.ListConnectors(config_pb2.ListConnectorsRequest()).names)

    def delete(self, name: str) -> None:
        self._stub.DeleteConnector(config_pb2.ConnectorRequest(name=name))

    def find(self, name: str) -> ConnectorInfo | None:
        """The connector, or None when there is none of that name."""
        try:
            return self.get(name)
        except grpc.RpcError as exc:
            if is_not_found(exc):
                return None
            raise

    def status(self, name: str) -> ConnectorStatus:
        return _status(self._stub.GetConnectorStatus(config_pb2.ConnectorRequest(name=name)))

    def find_status(self, name: str) -> ConnectorStatus | None:
        """The connector's status, or None when there is no connector of that name."""
        try:
            return self.status(name)
        except grpc.RpcError as exc:
            if is_not_found(exc):
                return None
            raise

    def plugins(self, connectors_only: bool = True) -> list[PluginInfo]:
        request = config_pb2.ListPluginsRequest(connectors_only=connectors_only)
        return [_plugin(p) for p in self._stub.ListPlugins(request).plugins]

    def install_plugin(self, coordinate: str, sha512: str | None) -> InstalledPlugin:
        """A Java plugin for the whole cluster, from Maven."""
        request = config_pb2.InstallPluginRequest(coordinate=coordinate, sha512=sha512 or "")
        return _installed(self._stub.InstallPlugin(request))

    def uninstall_plugin(self, coordinate: str) -> None:
        self._stub.UninstallPlugin(config_pb2.UninstallPluginRequest(coordinate=coordinate))

    def installed_plugins(self) -> list[InstalledPlugin]:
        request = config_pb2.ListInstalledPluginsRequest()
        return [_installed(p) for p in self._stub.ListInstalledPlugins(request).plugins]

    def plugin_config(self, plugin: str, version: str = "") -> list[KeyInfo]:
        """The plugin's own configuration keys; an empty version means the latest installed."""
        request = config_pb2.PluginConfigRequest(plugin=plugin, version=version)
        return [key_info_from_pb(k) for k in self._stub.GetPluginConfig(request).keys]

    def validate(self, plugin: str, config: Mapping[str, str]) -> ConfigInfos:
        """Connect's validate: every key of ``config`` checked as a config of ``plugin``."""
        request = config_pb2.ValidateConfigRequest(plugin=plugin, config=dict(config))
        return config_infos_from_pb(self._stub.ValidateConfig(request))
