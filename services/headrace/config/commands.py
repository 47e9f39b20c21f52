"""The connector lifecycle as commands, shared by every entry point (gRPC now; REST and the
topic-driven automation later). Each command validates against the current state, appends its
events, and returns the state that includes them; bad input raises :class:`ConfigRejected`.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from headrace.config.store import ConfigStore
from headrace.config.validation import ConfigRejected, Problem, check_create, check_exists
from headrace.core import configlog
from headrace.core.configstate import Config
from headrace.core.plugins import PluginCatalog
from headrace.core.status import StatusState, of_connector


@dataclass(frozen=True)
class ConnectorView:
    name: str
    config: Config
    tasks: tuple[Config, ...]
    type: str


class Commands:
    """Lifecycle commands over one store and the installed plugins."""

    def __init__(self, store: ConfigStore, catalog: PluginCatalog) -> None:
        self.store = store
        self.catalog = catalog

    def _type_of(self, config: Mapping[str, str]) -> str:
        versions = self.catalog.versions_of(config.get("connector.class", ""))
        return versions[-1].type if versions else "unknown"

    def _view(self, name: str) -> ConnectorView:
        state = self.store.configs
        check_exists(name, state)
        config = state.connectors[name]
        return ConnectorView(name, config, state.tasks_of(name), self._type_of(config))

    async def create(self, name: str, config: Mapping[str, str]) -> ConnectorView:
        async with self.store.write_lock:
            accepted = check_create(name, config, self.catalog, await self.store.current())
            # A new incarnation: the coordinator tells its units from those of a connector that
            # had the name before, whose deletion may still be on its way to the plugin.
            incarnation = uuid.uuid4().hex
            record = configlog.connector_configured(name, accepted.config, incarnation)
            await self.store.write([record])
            return self._view(name)

    async def get(self, name: str) -> ConnectorView:
        await self.store.current()
        return self._view(name)

    async def list(self) -> list[str]:
        return sorted((await self.store.current()).connectors)

    async def delete(self, name: str) -> None:
        async with self.store.write_lock:
            state = await self.store.current()
            check_exists(name, state)
            await self.store.write(configlog.deletion(name, len(state.tasks_of(name))))

    async def put_task_configs(self, name: str, tasks: Sequence[Mapping[str, str]]) -> bool:
        """Makes ``tasks`` the connector's live task set; False when it already is."""
        async with self.store.write_lock:
            state = await self.store.current()
            check_exists(name, state)
            if [dict(t) for t in state.tasks_of(name)] == [dict(t) for t in tasks]:
                return False
            await self.store.write(configlog.task_set(name, list(tasks)))
            return True

    async def status(self, name: str) -> tuple[ConnectorView, StatusState]:
        view = await self.get(name)
        statuses = await self.store.current_status()
        return view, of_connector(statuses, name)


__all__ = ["Commands", "ConfigRejected", "ConnectorView", "Problem"]
