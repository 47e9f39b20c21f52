"""A small synchronous client of the config service, for the CLI, the demo, the tests and the
benchmarks: a method per call of ``ConfigService`` but ``PutTaskConfigs`` (which only workers
send), answering protobuf, which ``headrace.cli.shapes`` turns into Kafka Connect's JSON."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import grpc

from headrace.cli.shapes import info_json, status_json
from headrace.core.rpc import close_channel
from headrace.core.security import tls
from headrace.core.settings import Settings
from headrace.v1 import config_pb2, config_pb2_grpc, configdef_pb2

# Kept importable from here: the demo, the tests and the benchmarks read statuses through them.
__all__ = ["ConfigClient", "info_json", "is_not_found", "rpc_code", "status_json"]


def rpc_code(error: grpc.RpcError) -> grpc.StatusCode:
    """The status of a failed call (its RpcError is also its ``grpc.Call``)."""
    code = getattr(error, "code", None)
    return code() if callable(code) else grpc.StatusCode.UNKNOWN


def is_not_found(error: grpc.RpcError) -> bool:
    """Whether a failed call failed because what it named does not exist."""
    return bool(rpc_code(error) == grpc.StatusCode.NOT_FOUND)


class ConfigClient:
    """The config service's calls over one channel; a failed call raises ``grpc.RpcError``.

    TLS and the token are ``settings``' (``headrace.core.security.tls``), else the environment's."""

    def __init__(self, address: str, settings: Settings | None = None) -> None:
        self._channel = tls.channel(address, settings if settings is not None else Settings())
        self._stub = config_pb2_grpc.ConfigServiceStub(self._channel)

    def __enter__(self) -> ConfigClient:
        return self

    def __exit__(self, *exc: object) -> None:
        close_channel(self._channel)

    def create(
        self, name: str, config: Mapping[str, str], initial_state: str = ""
    ) -> config_pb2.ConnectorInfo:
        return self._stub.CreateConnector(
            config_pb2.CreateConnectorRequest(
                name=name, config=dict(config), initial_state=initial_state
            )
        )

    def put_config(
        self, name: str, config: Mapping[str, str]
    ) -> config_pb2.PutConnectorConfigResponse:
        return self._stub.PutConnectorConfig(
            config_pb2.PutConnectorConfigRequest(name=name, config=dict(config))
        )

    def patch(self, name: str, changes: Mapping[str, str | None]) -> config_pb2.ConnectorInfo:
        """Sets each key to its value; a None value removes the key (Connect's PATCH)."""
        return self._stub.PatchConnectorConfig(
            config_pb2.PatchConnectorConfigRequest(
                name=name,
                set={k: v for k, v in changes.items() if v is not None},
                remove=[k for k, v in changes.items() if v is None],
            )
        )

    def pause(self, name: str) -> None:
        self._stub.PauseConnector(config_pb2.ConnectorRequest(name=name))

    def resume(self, name: str) -> None:
        self._stub.ResumeConnector(config_pb2.ConnectorRequest(name=name))

    def stop(self, name: str) -> None:
        self._stub.StopConnector(config_pb2.ConnectorRequest(name=name))

    def restart(
        self, name: str, *, include_tasks: bool = False, only_failed: bool = False
    ) -> config_pb2.ConnectorStatus:
        return self._stub.RestartConnector(
            config_pb2.RestartConnectorRequest(
                name=name, include_tasks=include_tasks, only_failed=only_failed
            )
        )

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

    def task_status(self, name: str, task: int) -> config_pb2.UnitStatus:
        return self._stub.GetTaskStatus(config_pb2.TaskRequest(name=name, task=task))

    def get(self, name: str) -> config_pb2.ConnectorInfo:
        return self._stub.GetConnector(config_pb2.ConnectorRequest(name=name))

    def names(self) -> list[str]:
        return list(self._stub.ListConnectors(config_pb2.ListConnectorsRequest()).names)

    def delete(self, name: str) -> None:
        self._stub.DeleteConnector(config_pb2.ConnectorRequest(name=name))

    def find(self, name: str) -> config_pb2.ConnectorInfo | None:
        """The connector, or None when there is none of that name."""
        try:
            return self.get(name)
        except grpc.RpcError as exc:
            if is_not_found(exc):
                return None
            raise

    def status(self, name: str) -> config_pb2.ConnectorStatus:
        return self._stub.GetConnectorStatus(config_pb2.ConnectorRequest(name=name))

    def find_status(self, name: str) -> config_pb2.ConnectorStatus | None:
        """The connector's status, or None when there is no connector of that name."""
        try:
            return self.status(name)
        except grpc.RpcError as exc:
            if is_not_found(exc):
                return None
            raise

    def plugins(self, connectors_only: bool = True) -> list[config_pb2.PluginInfo]:
        request = config_pb2.ListPluginsRequest(connectors_only=connectors_only)
        return list(self._stub.ListPlugins(request).plugins)

    def install_plugin(self, coordinate: str, sha512: str | None) -> config_pb2.InstalledPlugin:
        """A Java plugin for the whole cluster, from Maven."""
        request = config_pb2.InstallPluginRequest(coordinate=coordinate, sha512=sha512 or "")
        return self._stub.InstallPlugin(request)

    def uninstall_plugin(self, coordinate: str) -> None:
        self._stub.UninstallPlugin(config_pb2.UninstallPluginRequest(coordinate=coordinate))

    def installed_plugins(self) -> list[config_pb2.InstalledPlugin]:
        request = config_pb2.ListInstalledPluginsRequest()
        return list(self._stub.ListInstalledPlugins(request).plugins)

    def plugin_config(self, plugin: str, version: str = "") -> list[configdef_pb2.ConfigKeyInfo]:
        """The plugin's own configuration keys; an empty version means the latest installed."""
        request = config_pb2.PluginConfigRequest(plugin=plugin, version=version)
        return list(self._stub.GetPluginConfig(request).keys)

    def validate(self, plugin: str, config: Mapping[str, str]) -> configdef_pb2.ConfigInfos:
        """Connect's validate: every key of ``config`` checked as a config of ``plugin``."""
        request = config_pb2.ValidateConfigRequest(plugin=plugin, config=dict(config))
        result: configdef_pb2.ConfigInfos = self._stub.ValidateConfig(request)
        return result
