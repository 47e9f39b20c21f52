"""A small synchronous client of the config service, for the CLI and the demo."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import grpc

from headrace.v1 import config_pb2, config_pb2_grpc


class ConfigClient:
    def __init__(self, address: str) -> None:
        self._channel = grpc.insecure_channel(address)
        self._stub = config_pb2_grpc.ConfigServiceStub(self._channel)

    def __enter__(self) -> ConfigClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self._channel.close()

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

    def task_status(self, name: str, task: int) -> config_pb2.UnitStatus:
        return self._stub.GetTaskStatus(config_pb2.TaskRequest(name=name, task=task))

    def get(self, name: str) -> config_pb2.ConnectorInfo:
        return self._stub.GetConnector(config_pb2.ConnectorRequest(name=name))

    def names(self) -> list[str]:
        return list(self._stub.ListConnectors(config_pb2.ListConnectorsRequest()).names)

    def delete(self, name: str) -> None:
        self._stub.DeleteConnector(config_pb2.ConnectorRequest(name=name))

    def status(self, name: str) -> config_pb2.ConnectorStatus:
        return self._stub.GetConnectorStatus(config_pb2.ConnectorRequest(name=name))

    def plugins(self, connectors_only: bool = True) -> list[config_pb2.PluginInfo]:
        request = config_pb2.ListPluginsRequest(connectors_only=connectors_only)
        return list(self._stub.ListPlugins(request).plugins)


def info_json(info: config_pb2.ConnectorInfo) -> dict[str, Any]:
    """The shape Kafka Connect's REST API gives a connector."""
    return {
        "name": info.name,
        "config": dict(info.config),
        "tasks": [{"connector": info.name, "task": t.task} for t in info.tasks],
        "type": info.type,
    }


def status_json(status: config_pb2.ConnectorStatus) -> dict[str, Any]:
    """The shape of Kafka Connect's status endpoint, with the version each unit runs."""

    def unit(u: config_pb2.UnitStatus) -> dict[str, Any]:
        out: dict[str, Any] = {"state": u.state, "worker_id": u.worker_id}
        if u.task >= 0:
            out["id"] = u.task
        if u.plugin_version:
            out["version"] = u.plugin_version
        if u.trace:
            out["trace"] = u.trace
        return out

    return {
        "name": status.name,
        "connector": unit(status.connector),
        "tasks": [unit(t) for t in status.tasks],
        "type": status.type,
    }
