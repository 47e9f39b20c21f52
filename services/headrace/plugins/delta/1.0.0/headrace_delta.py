"""delta 1.0.0: a sink appending records to a Delta Lake table through the Spark executor.

Exactly once: each (connector, topic, partition) is one Delta application, and each batch is one
Delta commit that records, with the rows, the last offset it covers (``txnAppId`` and
``txnVersion``). Delta refuses to commit a version it has, and the executor drops the rows a
retry holds that a commit already has: a batch redelivered after any crash is written once.

``merge.schema=true`` lets a batch add columns to the table; without it, a batch whose columns
differ is refused and the task fails with the reason. ``partition.by`` partitions the table.

Self-contained: imported as ``headrace_delta`` with this folder first on ``sys.path``; it imports
nothing of headrace but ``headrace.sdk``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from headrace.sdk import (
    TABLE_SINK_CONFIG,
    ConfigType,
    Importance,
    TableSinkConnector,
    TableSinkTask,
)

VERSION = "1.0.0"
MERGE_SCHEMA = "merge.schema"

CONFIG = TABLE_SINK_CONFIG.define(
    MERGE_SCHEMA,
    ConfigType.BOOLEAN,
    False,
    Importance.MEDIUM,
    doc="Whether a batch may add columns to the table (Delta's schema evolution).",
)


class DeltaSinkConnector(TableSinkConnector):
    """Every task gets the same config; the consumer group spreads the partitions."""

    VERSION = VERSION
    CONFIG = CONFIG

    def task_class(self) -> type[DeltaSinkTask]:
        return DeltaSinkTask


class DeltaSinkTask(TableSinkTask):
    """Appends each partition's buffer to the table in one Delta commit per batch."""

    VERSION = VERSION
    FORMAT = "delta"
    CONFIG = CONFIG

    def write_options(self, config: Mapping[str, Any]) -> dict[str, str]:
        options = super().write_options(config)
        if config[MERGE_SCHEMA]:
            options[MERGE_SCHEMA] = "true"
        return options
