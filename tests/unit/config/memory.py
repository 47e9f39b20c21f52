"""Commands over the in-memory configs and status topics, with a plugin process's answers
stood in for: every config is found fine, and only the keys a test names are secret."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import cast

from headrace.config.commands import Commands
from headrace.config.framework import Operator
from headrace.config.offsets import OffsetsAdmin
from headrace.config.pluginchecks import PluginChecks
from headrace.config.store import ConfigStore
from headrace.core.model.configinfo import ConfigInfo, ConfigInfos, KeyInfo, ValueInfo
from headrace.core.model.connectorconfig import ClientRules
from headrace.core.model.plugins import PluginCatalog, PluginDescriptor
from headrace.core.storage.stores import StatusStore
from headrace.core.storage.topiclog import MemoryTopic, memory_logs

GEN = PluginDescriptor("gen.GenConnector", "1.0.0", "source", "gen", "GenConnector", Path("/g"))
LAKE = PluginDescriptor("lake.LakeConnector", "1.0.0", "sink", "lake", "LakeConnector", Path("/l"))


class _Checks:
    """A plugin process that finds every config fine and defines ``secret_keys`` as
    passwords."""

    def __init__(self, secret_keys: tuple[str, ...]) -> None:
        self.secret_keys = secret_keys
        self.asked: list[dict[str, str]] = []  # every config a plugin process was asked about

    async def validate(
        self, plugin: PluginDescriptor, config: Mapping[str, str], *, definition_only: bool = False
    ) -> ConfigInfos:
        self.asked.append(dict(config))
        defined = (ConfigInfo(KeyInfo(k, "PASSWORD"), ValueInfo(k)) for k in self.secret_keys)
        return ConfigInfos(plugin.class_name, tuple(defined))

    async def describe(self, plugin: PluginDescriptor) -> list[object]:
        return []

    async def alter_offsets(
        self,
        plugin: PluginDescriptor,
        name: str,
        config: Mapping[str, str],
        entries: list[dict[str, object]],
        *,
        reset: bool,
    ) -> bool:
        """A connector that keeps no offsets of its own (KIP-875's default)."""
        return False


async def memory_commands(
    configs: MemoryTopic | None = None,
    status: MemoryTopic | None = None,
    plugins: tuple[PluginDescriptor, ...] = (GEN,),
    *,
    tracks_topics: bool = True,
    topic_reset_allowed: bool = True,
    secret_keys: tuple[str, ...] = (),
    cluster: str = "headrace",
    clients: ClientRules | None = None,
) -> Commands:
    """Commands on a started store over ``configs`` and ``status`` (fresh topics unless given),
    with ``plugins`` installed, ``secret_keys`` defined as passwords and topic tracking as
    said; ``clients``, the operator's rules for client overrides (none let through unless
    given)."""
    store = ConfigStore(
        memory_logs(configs if configs is not None else MemoryTopic("configs")),
        StatusStore(memory_logs(status if status is not None else MemoryTopic("status"))),
    )
    await store.start()
    checks = cast(PluginChecks, _Checks(secret_keys))
    return Commands(
        store,
        PluginCatalog(plugins),
        cast(OffsetsAdmin, None),
        checks,
        tracks_topics=tracks_topics,
        topic_reset_allowed=topic_reset_allowed,
        operator=Operator(cluster=cluster, clients=clients or ClientRules()),
    )
