"""The config service's view of the cluster: configs and status, rebuilt by replay.

Two logs feed two folds: the configs topic into :class:`ConfigState` (desired), the status topic
into the status map (observed, through :class:`StatusStore`). Writes go through
:meth:`ConfigStore.transact`, which decides what to write against the state read to the end of
the topic, appends it, and waits until the fold has read the write back, so an answer never runs
ahead of the log.

Replicas of the config service write the one topic side by side. Their appends are transactions
under one transactional id, so an append commits only if no other replica wrote since this one
read: one that lost is discarded unseen, and the command reads again and decides again. Two
racing creates of one name thus end with one winner, the first in the topic, and one
ALREADY_EXISTS. In one replica, commands that arrive together are written together.

A change made for a command of the command topic (:data:`APPLYING` set by the automation agent)
is written in one transaction with the record that the command is applied
(``request-<id>``), so a command read again after a crash is found applied, never applied twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import random
import time
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass

from headrace.core.model import configlog
from headrace.core.model.configstate import (
    AppliedRequest,
    ConfigEvent,
    ConfigState,
    Folding,
    LoggerLevelSet,
    PluginInstalled,
    PluginUninstalled,
    level_pairs,
)
from headrace.core.model.errors import WriterFenced
from headrace.core.model.status import StatusState, topics_of
from headrace.core.observability import log
from headrace.core.settings import Settings
from headrace.core.storage.replay import replaying
from headrace.core.storage.stores import StatusStore
from headrace.core.storage.topiclog import LogFactory, LogRecord, kafka_logs


@dataclass
class Applying:
    """The command of the command topic a change is made for. ``created`` is set by a
    create-or-update that created its connector, which its answer says."""

    request_id: str
    method: str
    connector: str
    created: bool = False

    def record(self, now_ms: int) -> configlog.Record:
        applied = AppliedRequest(self.method, self.connector, self.created, now_ms)
        return configlog.request_applied(self.request_id, applied)


class AlreadyApplied(Exception):
    """The command a change was to be made for is applied already (``applied`` says how):
    nothing is written for it a second time."""

    def __init__(self, applied: AppliedRequest) -> None:
        super().__init__(f"applied already: {applied}")
        self.applied = applied


APPLYING: ContextVar[Applying | None] = ContextVar("applying", default=None)
"""Set by the automation agent around a command it applies; read when a change is written."""


class ConfigStore:
    """Holds the folded state; the only code that changes it is the logs' record handlers."""

    def __init__(self, config_logs: LogFactory, statuses: StatusStore) -> None:
        # The configs folded so far: a replay folds the whole topic in place, made a state
        # only when one is asked for (``configs``).
        self._folding = Folding(ConfigState())
        self.watchers: list[Callable[[ConfigEvent, ConfigState], None]] = []
        """Told of each configs event once it is folded, with the state before it (the
        console's updates, and the configs a connector had)."""
        self.on_plugins: Callable[[], None] = lambda: None
        """Told when the cluster's installed plugins change (``configs.plugins``)."""
        self._config_log = config_logs(self._on_config)
        self._statuses = statuses
        self._wake = asyncio.Event()
        self._writer: asyncio.Task[None] | None = None
        self._pending: list[tuple[Plan, asyncio.Future[ConfigState], Applying | None]] = []

    @classmethod
    def on_kafka(cls, settings: Settings) -> ConfigStore:
        """The store over the cluster's configs and status topics."""
        configs = kafka_logs(settings, "configs", writer_id=f"{settings.cluster}-configs-writer")
        return cls(configs, StatusStore(kafka_logs(settings, "status")))

    def _on_config(self, record: LogRecord) -> None:
        event = configlog.decode(record.key, record.value, record.offset)
        if event is None:
            return
        if not self.watchers:
            self._folding.apply(event)
        else:
            before = self._folding.state()
            self._folding.apply(event)
            for watcher in self.watchers:
                watcher(event, before)
        if isinstance(event, LoggerLevelSet):  # KIP-976: this process's too
            log.cluster_levels.apply(level_pairs(self.configs.log_levels))
        elif isinstance(event, PluginInstalled | PluginUninstalled):
            self.on_plugins()

    @property
    def configs(self) -> ConfigState:
        """Every config event read so far, folded."""
        return self._folding.state()

    async def start(self) -> None:
        """Replays the configs and status topics, timing each (``headrace_replay_seconds``),
        then keeps following them."""
        with replaying("configs"):
            await self._config_log.start()
        with replaying("status"):
            # A writer for the topics it forgets (a reset, a deletion); units' statuses are the
            # workers' to write.
            await self._statuses.start()

    def readers(self) -> list[asyncio.Task[None] | None]:
        """The tasks that keep the state current; the service stops if one of them ends."""
        return [self._config_log.reader, self._statuses.reader]

    async def close(self) -> None:
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await writer
        for _, waiting, _ in self._pending:
            waiting.cancel()
        await self._config_log.close()
        await self._statuses.close()

    async def current(self) -> ConfigState:
        """The configs after reading everything written so far (read-before-act)."""
        await self._config_log.catch_up()
        return self.configs

    async def current_status(self) -> StatusState:
        return await self._statuses.current()

    @property
    def statuses(self) -> StatusStore:
        """The status fold as read so far (no read to the topic's end: see ``current_status``)."""
        return self._statuses

    async def connector_topics(self, name: str) -> list[str]:
        """The topics the connector's tasks recorded as used (KIP-558), by name."""
        return [t.topic for t in topics_of(await self._statuses.current_topics(), name)]

    async def forget_topics(self, name: str) -> None:
        """Writes the tombstones of every topic recorded for the connector."""
        await self._statuses.forget_topics(name, await self.connector_topics(name))

    async def transact(self, plan: Plan) -> ConfigState:
        """Appends the records ``plan`` makes of the current state, and returns the state with
        them. ``plan`` raises to refuse, and is asked again, against the state read anew, when
        another replica wrote first.

        Commands that arrive while a write is under way are written together, in one
        transaction (a group commit): each plan is asked in turn, against the state its
        predecessors' records make, and each caller gets the state as of its own records. So
        writes cost one round trip per group, not per command, however many clients call.
        """
        mine: asyncio.Future[ConfigState] = asyncio.get_running_loop().create_future()
        # Read here: the writer runs in a task of its own, outside the caller's context.
        self._pending.append((plan, mine, APPLYING.get()))
        self._wake.set()
        if self._writer is None:
            self._writer = asyncio.create_task(self._write_forever(), name="configs-writer")
        return await mine

    async def _write_forever(self) -> None:
        """The one task that writes: a caller that gives up never strands the others."""
        while True:
            await self._wake.wait()
            self._wake.clear()
            group, self._pending = self._pending, []
            try:
                await self._write_group(group)
            except Exception as exc:  # noqa: BLE001 - the group hears of it; the writer goes on
                for _, done, _ in group:
                    if not done.done():
                        done.set_exception(exc)

    async def _write_group(
        self, group: list[tuple[Plan, asyncio.Future[ConfigState], Applying | None]]
    ) -> None:
        for attempt in itertools.count(1):
            state = await self.current()
            records: list[configlog.Record] = []
            outcomes: list[tuple[asyncio.Future[ConfigState], ConfigState | Exception]] = []
            for plan, done, applying in group:
                try:
                    if applying is not None and applying.request_id in state.requests:
                        # Decided against the topic read to its end, in the transaction that
                        # would write it: of two replicas applying one request, one wins.
                        raise AlreadyApplied(state.requests[applying.request_id])
                    planned = await plan(state)
                except Exception as exc:  # noqa: BLE001 - the refusal is that caller's answer
                    outcomes.append((done, exc))
                    continue
                if applying is not None:
                    planned = [*planned, applying.record(int(time.time() * 1000))]
                state = _folded(state, planned)
                records.extend(planned)
                outcomes.append((done, state))
            try:
                if records:
                    await self._config_log.write_and_read_back(records)
            except WriterFenced:
                log.get().info("configs_write_retried", attempt=attempt, commands=len(group))
                # Jitter: two replicas that keep fencing each other fall out of step.
                await asyncio.sleep(random.uniform(0, min(0.2, 0.005 * 2**attempt)))
                continue
            for done, outcome in outcomes:
                if done.done():
                    continue  # its caller gave up waiting
                if isinstance(outcome, Exception):
                    done.set_exception(outcome)
                else:
                    done.set_result(outcome)
            return


def _folded(state: ConfigState, records: list[configlog.Record]) -> ConfigState:
    """The state once ``records`` are read, as the log's reader will fold them."""
    folding = Folding(state)
    for key, value in records:
        event = configlog.decode(key, value)
        if event is not None:
            folding.apply(event)
    return folding.state()


Plan = Callable[[ConfigState], Awaitable[list[configlog.Record]]]
"""What a command writes, given the configs as they are: records, none, or an exception."""
