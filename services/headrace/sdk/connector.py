"""The connector side of the plugin API: ``SourceConnector`` and ``SinkConnector``.

A connector does not move data. It reads its configuration, decides how many tasks to run and
what each one does (``task_configs``), and may watch the external system to ask for new task
configs (``context.request_task_reconfiguration()``). Lifecycle, driven by the plugin host:

    connector = MyConnector(); connector.initialize(context)
    await connector.start(config)          # once
    connector.task_configs(max_tasks)      # the configs the framework hands to tasks
    await connector.stop(deleted=...)      # once; deleted=True only when the connector was deleted

``stop(deleted=True)`` is the place to clean up what ``start`` provisioned in the external
system; every other stop (rebalance, pause, restart, shutdown, update) passes ``deleted=False``.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any

from headrace.sdk.config import ConfigDef, ConfigValue
from headrace.sdk.executor import NoSqlCheck, SqlCheck
from headrace.sdk.logger import Logger, StdlibLogger
from headrace.sdk.paths import Paths
from headrace.sdk.task import NoOffsets, OffsetReader

if TYPE_CHECKING:
    from headrace.sdk.task import SinkTask, SourceTask, Task


SourceOffsets = Sequence[tuple[Mapping[str, Any], Mapping[str, Any] | None]]
"""A source connector's offsets to alter: (source partition, offset or None) pairs."""
SinkOffsets = Mapping[tuple[str, int], int | None]
"""A sink connector's offsets to alter: (topic, partition) -> offset, or None to forget it."""


def _ignore(*_: Any) -> None:
    return None


@dataclass
class ConnectorContext:
    """What the framework offers a running connector: its ``logger``, and ``paths``, the
    folders a path in its config may name (``headrace.sdk.paths``). A source connector gets
    ``offset_reader``, its stored source offsets as they were when it started (KIP-131's
    ``offsetStorageReader``): ``task_configs`` may leave out the work its tasks finished. A
    connector being validated also gets ``sql``, which asks the Spark executor whether a query
    parses (``headrace.sdk.executor.SqlCheck``); elsewhere it checks nothing."""

    name: str = ""
    _on_reconfigure: Callable[[], None] = field(default=_ignore, repr=False)
    _on_error: Callable[[BaseException], None] = field(default=_ignore, repr=False)
    logger: Logger = field(default_factory=StdlibLogger, repr=False)
    paths: Paths = field(default_factory=Paths, repr=False)
    sql: SqlCheck = field(default_factory=NoSqlCheck, repr=False)
    offset_reader: OffsetReader = field(default_factory=NoOffsets, repr=False)

    def request_task_reconfiguration(self) -> None:
        """Asks the framework to call ``task_configs`` again and restart the tasks with them."""
        self._on_reconfigure()

    def raise_error(self, error: BaseException) -> None:
        """Reports an error from a connector's own background work: the connector FAILS."""
        self._on_error(error)


class Connector(abc.ABC):
    """Base of every connector. Subclass ``SourceConnector`` or ``SinkConnector``."""

    context: ConnectorContext

    def initialize(self, context: ConnectorContext) -> None:
        """Called by the framework before ``start``."""
        self.context = context

    def version(self) -> str:
        """The plugin version; by default the class attribute ``VERSION`` if set."""
        return str(getattr(self, "VERSION", "unknown"))

    @abc.abstractmethod
    async def start(self, config: Mapping[str, str]) -> None:
        """Reads the configuration; raise ConfigException for a bad one."""

    @abc.abstractmethod
    def task_class(self) -> type[Task]:
        """The Task class this connector runs."""

    @abc.abstractmethod
    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        """At most ``max_tasks`` configurations, one per task to run."""

    async def stop(self, deleted: bool = False) -> None:  # noqa: B027 - optional hook
        """Releases what ``start`` acquired; ``deleted`` says the connector is gone for good."""

    def config(self) -> ConfigDef:
        """The definition of this connector's own configuration keys."""
        return ConfigDef()

    def validate(self, config: Mapping[str, str]) -> list[ConfigValue]:
        """Per-key results (value, errors, recommended values); by default, ``config()``'s."""
        return self.config().validate(config)


class ExactlyOnceSupport(Enum):
    """Whether a source connector, with a given config, delivers each record exactly once."""

    SUPPORTED = "supported"
    UNSUPPORTED = "unsupported"


class ConnectorTransactionBoundaries(Enum):
    """Whether a source connector, with a given config, can say where its transactions end."""

    SUPPORTED = "supported"
    UNSUPPORTED = "unsupported"


class SourceConnector(Connector):
    """A connector whose tasks read from an external system into Kafka.

    Its tasks always write in Kafka transactions, with the source offsets of what they wrote
    (KIP-618). ``exactly.once.support=required`` in a config accepts only a connector whose
    ``exactly_once_support`` says SUPPORTED for it; ``transaction.boundary=connector`` only one
    whose ``can_define_transaction_boundaries`` does.
    """

    @abc.abstractmethod
    def task_class(self) -> type[SourceTask]:
        """The SourceTask class this connector runs."""

    def exactly_once_support(self, config: Mapping[str, str]) -> ExactlyOnceSupport | None:
        """SUPPORTED if, with ``config``, a task that resumes from its stored offsets gives
        each record once; None (the default) when the connector does not say."""
        return None

    def can_define_transaction_boundaries(
        self, config: Mapping[str, str]
    ) -> ConnectorTransactionBoundaries:
        """SUPPORTED if, with ``config``, its tasks end transactions themselves through
        ``context.transaction_context``; UNSUPPORTED by default."""
        return ConnectorTransactionBoundaries.UNSUPPORTED

    def alter_offsets(self, config: Mapping[str, str], offsets: SourceOffsets) -> bool:
        """KIP-875: the offsets of this stopped connector are about to be altered, or reset
        (every partition's offset None), to ``offsets``: (source partition, offset) pairs.
        Called on a new instance, not started. Return True once what the connector keeps
        outside Kafka is altered too; False (the default) when it keeps nothing there. Raise
        to refuse (nothing is altered then): ``NotImplementedError`` when offsets cannot be
        altered from outside at all, ``ConnectError`` with the reason otherwise."""
        return False


class SinkConnector(Connector):
    """A connector whose tasks write from Kafka into an external system."""

    @abc.abstractmethod
    def task_class(self) -> type[SinkTask]:
        """The SinkTask class this connector runs."""

    def alter_offsets(self, config: Mapping[str, str], offsets: SinkOffsets) -> bool:
        """KIP-875: the consumer group offsets of this stopped connector are about to be
        altered, or reset (every offset None), to ``offsets``, by (topic, partition). Called on
        a new instance, not started. Return True once what the connector keeps outside Kafka
        is altered too; False (the default) when it keeps nothing there. Raise to refuse
        (nothing is altered then): ``NotImplementedError`` when offsets cannot be altered from
        outside at all, ``ConnectError`` with the reason otherwise."""
        return False
