"""Settings shared by every service, read from the environment (flags override them).

| variable | default | meaning |
| --- | --- | --- |
| KAFKA_BOOTSTRAP_SERVERS | 127.0.0.1:9092 | the Kafka cluster (set: no embedded broker) |
| HEADRACE_CLUSTER | headrace | the prefix of every topic name (clusters can share Kafka) |
| HEADRACE_CONFIG_ADDR | 127.0.0.1:50051 | the config service's gRPC address |
| HEADRACE_COORDINATOR_ADDR | 127.0.0.1:50052 | the coordinator's gRPC address |
| HEADRACE_EXECUTOR_ADDR | 127.0.0.1:50053 | the Spark executor's gRPC address |
| HEADRACE_PLUGIN_PATH | the built-in plugins | folders holding plugins, separated by ``:`` |
| HEADRACE_VAR | ./var | where logs, sockets and demo output go |
| SPARK_MASTER | local[*] | the Spark master URL for the executor |
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

BUILTIN_PLUGINS = Path(__file__).resolve().parents[1] / "plugins"


def _plugin_path() -> tuple[Path, ...]:
    raw = os.environ.get("HEADRACE_PLUGIN_PATH", "")
    if not raw:
        return (BUILTIN_PLUGINS,)
    return tuple(Path(p) for p in raw.split(":") if p)


@dataclass(frozen=True)
class Settings:
    """Where everything is. Immutable; build a new one to change it."""

    bootstrap_servers: str = field(
        default_factory=lambda: os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:9092")
    )
    cluster: str = field(default_factory=lambda: os.environ.get("HEADRACE_CLUSTER", "headrace"))
    config_addr: str = field(
        default_factory=lambda: os.environ.get("HEADRACE_CONFIG_ADDR", "127.0.0.1:50051")
    )
    coordinator_addr: str = field(
        default_factory=lambda: os.environ.get("HEADRACE_COORDINATOR_ADDR", "127.0.0.1:50052")
    )
    executor_addr: str = field(
        default_factory=lambda: os.environ.get("HEADRACE_EXECUTOR_ADDR", "127.0.0.1:50053")
    )
    plugin_path: tuple[Path, ...] = field(default_factory=_plugin_path)
    var_dir: Path = field(default_factory=lambda: Path(os.environ.get("HEADRACE_VAR", "var")))
    spark_master: str = field(default_factory=lambda: os.environ.get("SPARK_MASTER", "local[*]"))

    def topic(self, role: str) -> str:
        """The full name of one of the cluster's topics: configs, offsets, status, assignments."""
        return f"{self.cluster}-{role}"
