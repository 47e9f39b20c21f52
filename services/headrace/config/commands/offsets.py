"""A connector's offsets (KIP-875): read at any time, altered or reset only while it is STOPPED
and none of its tasks still runs. The connector is asked first (its ``alterOffsets``, in a new
instance of its plugin), and may refuse: then nothing changes. Otherwise the offsets of its
source partitions, or of its sink's consumer group, are changed, and what is answered says
whether the connector altered what it keeps outside Kafka too.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence

from headrace.config.commands.views import ConnectorView
from headrace.config.groupadmin import GroupInUse, NoSuchPartition
from headrace.config.offsets import ConnectorOffset, OffsetsAdmin, as_json
from headrace.config.pluginchecks import PluginChecks
from headrace.config.store import ConfigStore
from headrace.config.validation import ConfigRejected, Problem
from headrace.core.model.connectorconfig import requested_version
from headrace.core.model.errors import PluginError
from headrace.core.model.plugins import PluginCatalog
from headrace.core.model.status import of_connector
from headrace.core.model.structs import State, Target


class OffsetCommands:
    def __init__(
        self,
        store: ConfigStore,
        admin: OffsetsAdmin,
        checks: PluginChecks,
        catalog: Callable[[], PluginCatalog],
        view: Callable[[str], Awaitable[ConnectorView]],
    ) -> None:
        """``catalog``: the installed plugins as they are now; ``view``, a connector as it is
        answered (``Commands.get``)."""
        self._store = store
        self._admin = admin
        self._checks = checks
        self._catalog = catalog
        self._view = view

    async def read(self, name: str) -> Sequence[ConnectorOffset]:
        """The connector's offsets as they are stored now (KIP-875)."""
        view = await self._view(name)
        return await self._admin.read(name, view.type, view.config)

    async def alter(self, name: str, entries: Sequence[ConnectorOffset]) -> bool:
        """Sets or forgets the offsets of the partitions named; only while STOPPED. The
        connector is asked first (KIP-875's ``alterOffsets``), and may refuse: whether it
        altered what it keeps outside Kafka too."""
        view = await self._stopped(name)
        if not entries:
            raise ConfigRejected(Problem.INVALID, "offsets: name at least one partition to alter")
        await on_group(self._admin.check(view.type, entries))
        handled = await self._asked(name, view.type, view.config, entries, reset=False)
        await on_group(self._admin.alter(name, view.type, view.config, entries))
        return handled

    async def reset(self, name: str) -> bool:
        """Forgets every offset of the connector; only while STOPPED. The connector is asked
        first, with every partition it has an offset for, and may refuse."""
        view = await self._stopped(name)
        stored = await self._admin.read(name, view.type, view.config)
        forgotten = [ConnectorOffset(e.partition, None) for e in stored]
        handled = await self._asked(name, view.type, view.config, forgotten, reset=True)
        await on_group(self._admin.reset(name, view.type, view.config))
        return handled

    async def initial(
        self, name: str, kind: str, config: Mapping[str, str], entries: Sequence[ConnectorOffset]
    ) -> None:
        """The offsets a connector created now starts from (KIP-995's ``initial_offsets``):
        what its name still has is forgotten, and ``entries`` written, its connector asked
        first as for an alteration of a stopped connector's."""
        await on_group(self._admin.check(kind, entries))
        if entries:
            await self._asked(name, kind, config, entries, reset=False)
        await on_group(self._admin.reset(name, kind, config))
        if entries:
            await on_group(self._admin.alter(name, kind, config, entries))

    async def _asked(
        self,
        name: str,
        kind: str,
        config: Mapping[str, str],
        entries: Sequence[ConnectorOffset],
        *,
        reset: bool,
    ) -> bool:
        """A new instance of the connector's plugin asked to alter its offsets to ``entries``."""
        try:
            plugin = self._catalog().resolve(
                config.get("connector.class", ""), requested_version(config)
            )
        except PluginError as exc:
            raise ConfigRejected(Problem.NO_PLUGIN, str(exc)) from None
        return await self._checks.alter_offsets(
            plugin, name, config, as_json(kind, entries), reset=reset
        )

    async def _stopped(self, name: str) -> ConnectorView:
        """The connector, if it is STOPPED and none of its tasks still runs."""
        view = await self._view(name)
        if view.target is not Target.STOPPED or view.tasks:
            raise ConfigRejected(
                Problem.PRECONDITION,
                f"connector {name!r} is {view.target.value}: offsets change only while it is "
                "STOPPED; stop it first",
            )
        statuses = of_connector(await self._store.current_status(), name)
        live = [
            str(unit)
            for unit, status in statuses.items()
            if not unit.is_connector and status.state in (State.RUNNING, State.PAUSED)
        ]
        if live:
            raise ConfigRejected(
                Problem.PRECONDITION,
                f"connector {name!r} is stopping: its tasks {sorted(live)} have not stopped yet",
            )
        return view


async def on_group(change: Awaitable[None]) -> None:
    """Awaits a change of a consumer group's offsets; ConfigRejected when the group is in use
    (PRECONDITION) or names no such partition (INVALID)."""
    try:
        await change
    except GroupInUse as exc:
        raise ConfigRejected(Problem.PRECONDITION, str(exc)) from None
    except NoSuchPartition as exc:
        raise ConfigRejected(Problem.INVALID, f"offsets: {exc}") from None
