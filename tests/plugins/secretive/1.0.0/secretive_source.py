"""secretive source 1.0.0: tells what secrets it received by their digests, never by value.

Its keys ``file.secret``, ``dir.secret`` and ``password`` are PASSWORD keys, ``env.secret`` a
plain one. The connector and its task log their whole config (which the runtime must hide);
the connector hands its task its whole config (which the runtime must put back as references
before storing it). The task writes ``<digest.path>/task-<n>.json``: the SHA-256 of each of
those keys' values as it received them. With ``fail.quoting=true`` the task's ``start`` raises
an error quoting every secret. It produces nothing.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping

from headrace.sdk import ConfigDef, ConfigType, SourceConnector, SourceRecord, SourceTask

VERSION = "1.0.0"
SECRET_KEYS = ("file.secret", "env.secret", "dir.secret", "password")


class SecretiveSourceConnector(SourceConnector):
    VERSION = VERSION

    def config(self) -> ConfigDef:
        return (
            ConfigDef()
            .define("file.secret", ConfigType.PASSWORD, "")
            .define("env.secret", ConfigType.STRING, "")
            .define("dir.secret", ConfigType.PASSWORD, "")
            .define("password", ConfigType.PASSWORD, "")
            .define("digest.path", ConfigType.STRING)
            .define("fail.quoting", ConfigType.BOOLEAN, False)
        )

    async def start(self, config: Mapping[str, str]) -> None:
        self.context.logger.info("secretive_connector_config", config=dict(config))
        self._config = dict(config)

    def task_class(self) -> type[SecretiveSourceTask]:
        return SecretiveSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [{**self._config, "task.id": str(k)} for k in range(max_tasks)]


class SecretiveSourceTask(SourceTask):
    VERSION = VERSION

    async def start(self, config: Mapping[str, str]) -> None:
        self.context.logger.info("secretive_task_config", config=dict(config))
        if config.get("fail.quoting") == "true":
            quoted = ", ".join(config.get(k, "") for k in SECRET_KEYS)
            raise RuntimeError(f"cannot log in with {quoted}")
        folder = self.context.paths.resolve(config["digest.path"], "digest.path")
        digests = {k: hashlib.sha256(config.get(k, "").encode()).hexdigest() for k in SECRET_KEYS}
        (folder / f"task-{config['task.id']}.json").write_text(json.dumps(digests))

    async def poll(self) -> list[SourceRecord]:
        return []  # nothing to send: the runtime waits a little before it polls again
