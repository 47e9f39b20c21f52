"""The deletions a worker has told its plugins of, and the word of each that goes out.

Each one told is remembered on disk first (``Delivered``: a deletion handed back after a lost
acknowledgement is then acknowledged without telling the plugin again), then acknowledged to
the coordinator, and recorded where the next leading coordinator reads it (``ToldRecords``).
While a plugin process is asked to tell one, only that process's word that its plugin heard it
(``DeletionHeard``) counts: it may come before the stop answers, and is taken at once.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator

from structlog.typing import FilteringBoundLogger

from headrace.clients.pluginhost import PluginCallError
from headrace.core.model.errors import PluginError
from headrace.core.model.plugins import PluginCatalog, PluginDescriptor
from headrace.core.model.structs import Cleanup, Instance, WorkUnit
from headrace.core.storage.told import ToldRecords
from headrace.isolation.supervisor import PluginProcess, plugin_key
from headrace.worker.delivered import Delivered
from headrace.worker.processes import CALL_TIMEOUT_S, PluginProcesses, resolve

Acknowledge = Callable[[list[Instance]], None]


class Deletions:
    def __init__(self, delivered: Delivered, told: ToldRecords) -> None:
        self._delivered = delivered
        self._told = told
        # The deletions being told now, by unit: the incarnation, and the plugin process asked
        # to tell it (the only one whose word that its plugin heard it is taken).
        self._telling: dict[WorkUnit, tuple[str, PluginProcess]] = {}
        self._acknowledge: Acknowledge = lambda done: None

    def bind(self, acknowledge: Acknowledge) -> None:
        """Where acknowledgements go: the worker's membership, once it is built."""
        self._acknowledge = acknowledge

    async def start(self) -> None:
        await self._told.start()

    async def close(self) -> None:
        await self._told.close()

    def __contains__(self, instance: Instance) -> bool:
        return instance in self._delivered

    def newest(self, most: int) -> list[Instance]:
        return self._delivered.newest(most)

    def remember(self, instance: Instance) -> None:
        """Told: on disk before anything is said of it."""
        self._delivered.add(instance)

    def acknowledge(self, instances: list[Instance]) -> None:
        """Said to the coordinator (again, for one handed back that was told already)."""
        self._acknowledge(instances)

    async def told(self, instances: list[Instance]) -> None:
        """Told, remembered: acknowledged, and recorded for the next leading coordinator."""
        self._acknowledge(instances)
        await self._told.record(instances)

    @contextlib.contextmanager
    def told_by(self, instance: Instance, process: PluginProcess) -> Iterator[None]:
        """While ``process`` is asked to tell ``instance`` of its deletion."""
        unit, incarnation = instance
        self._telling[unit] = (incarnation, process)
        try:
            yield
        finally:
            if self._telling.get(unit) == (incarnation, process):
                del self._telling[unit]

    def heard(self, process: PluginProcess, unit: WorkUnit) -> None:
        """``process`` says its plugin heard of the unit's deletion: remembered and
        acknowledged at once, if that process was asked to tell it, whatever the worker is busy
        with (the stop that asked may take seconds yet to answer, closing the unit's clients)."""
        incarnation, asked = self._telling.get(unit, ("", None))
        heard = (unit, incarnation)
        if asked is process and heard not in self._delivered:  # only what it was asked to tell
            self._delivered.add(heard)
            self._acknowledge([heard])

    def each_told(self, instances: Iterable[Instance]) -> list[Instance]:
        """Those of ``instances`` told here already."""
        return [i for i in instances if i in self._delivered]


class Teller:
    """Tells plugins of their units' deletions: in the stop of a unit that runs, or, when its
    process is gone (crashed, or the unit was held), by starting its plugin only to stop it
    deleted (a clean-up). Nothing is told while ``stale`` says the assignment that asked for it
    may be out of date: the worker is or was cut off, and the coordinator may have handed the
    deletion to another worker."""

    def __init__(
        self,
        deletions: Deletions,
        processes: PluginProcesses,
        catalog: Callable[[], PluginCatalog],
        stale: Callable[[], bool],
        log: FilteringBoundLogger,
    ) -> None:
        self._deletions = deletions
        self._processes = processes
        self._catalog = catalog
        self._stale = stale
        self._log = log

    def may_tell(self, unit: WorkUnit) -> bool:
        """Whether a deletion may be told now; one that may not is logged as abandoned."""
        if self._stale():
            # Not acknowledged: the coordinator hands it to a live worker, or back to this one.
            self._log.warning(
                "deletion_cleanup_abandoned", connector=unit.connector, task=unit.task
            )
            return False
        return True

    async def halt(self, process: PluginProcess, instance: Instance, *, deleted: bool) -> bool:
        """Stops the unit in its plugin process; a failure to is logged, and the unit is gone
        from this worker all the same. Whether the plugin process stopped it: it answered,
        and had it to stop (one it had stopped already, with ``deleted=False`` as its lease ran
        out, say, never heard of the deletion: found by the nemesis, seed 404)."""
        assert process.client is not None
        unit = instance[0]
        telling = (
            self._deletions.told_by(instance, process) if deleted else contextlib.nullcontext()
        )
        try:
            with telling:
                return await process.client.stop(unit, deleted=deleted, deadline_s=CALL_TIMEOUT_S)
        except PluginCallError as exc:
            self._log.warning(
                "unit_stop_failed", connector=unit.connector, task=unit.task, error=exc.details
            )
            return False

    async def clean_up(self, cleanup: Cleanup) -> None:
        """Delivers a deletion the coordinator handed out, unless this worker already has."""
        if cleanup.instance not in self._deletions and not await self.deliver(cleanup):
            return  # not acknowledged: the coordinator keeps it pending and sends it again
        self._deletions.remember(cleanup.instance)
        await self._deletions.told([cleanup.instance])

    async def deliver(self, cleanup: Cleanup, ran: PluginDescriptor | None = None) -> bool:
        """Starts the deleted unit's plugin only to stop it with ``deleted=True``; whether the
        plugin process carried it out. The plugin is the version that ran the unit here
        (``ran``), when this worker ran it: not one installed since, which its config's
        version request (``latest``, a range) would pick now, and which never heard of it."""
        unit = cleanup.unit
        plugin = ran if ran is not None else resolve(self._catalog(), cleanup.connector_config)
        if isinstance(plugin, PluginError):
            # No plugin here can ever hear of it: said loudly, and not asked for again.
            self._log.error(
                "deletion_undeliverable",
                connector=unit.connector,
                task=unit.task,
                error=str(plugin),
            )
            return True
        if not self.may_tell(unit):
            return False
        host = (await self._processes.for_plugins([plugin]))[plugin_key(plugin)]
        if isinstance(host, Exception) or host.client is None:
            self._log.error("deletion_cleanup_failed", connector=unit.connector, error=str(host))
            return False
        if not self.may_tell(unit):
            return False
        try:
            with self._deletions.told_by(cleanup.instance, host):
                await host.client.clean_up(cleanup, deadline_s=CALL_TIMEOUT_S)
        except PluginCallError as exc:
            self._log.error(
                "deletion_cleanup_failed",
                connector=unit.connector,
                task=unit.task,
                error=exc.details,
            )
            return cleanup.instance in self._deletions  # heard, though the answer did not come
        self._log.info("deletion_cleaned_up", connector=unit.connector, task=unit.task)
        return True
