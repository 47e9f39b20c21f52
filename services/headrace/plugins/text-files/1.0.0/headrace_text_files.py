"""text-files 1.0.0: a sink writing records as JSON lines or CSV files through the Spark executor.

Each topic partition's records are written as ``<path>/<topic>/<partition>/<first>-<last>-<writer>/
part-*.json`` (or ``.csv``, with a header line), one folder per batch, named for the offsets and
the connector and topic it holds, and committed by one rename: a reader never sees half a batch,
and the executor skips what a committed folder holds when a batch is redelivered. That holds while
one executor writes the folder; a second one writing it at the same time could write a batch
twice, so this sink promises at least once.

Self-contained: imported as ``headrace_text_files`` with this folder first on ``sys.path``; it
imports nothing of headrace but ``headrace.sdk``.
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
    ValidString,
)

VERSION = "1.0.0"
FORMAT = "format"

CONFIG = TABLE_SINK_CONFIG.define(
    FORMAT,
    ConfigType.STRING,
    importance=Importance.HIGH,
    validator=ValidString(("json", "csv")),
    doc="json: one JSON object per line; csv: comma-separated values with a header line.",
)


class TextFilesSinkConnector(TableSinkConnector):
    """Every task gets the same config; the consumer group spreads the partitions."""

    VERSION = VERSION
    CONFIG = CONFIG

    def task_class(self) -> type[TextFilesSinkTask]:
        return TextFilesSinkTask


class TextFilesSinkTask(TableSinkTask):
    """Writes each partition's buffer as one file (per partition value) per batch."""

    VERSION = VERSION
    CONFIG = CONFIG

    def write_format(self, config: Mapping[str, Any]) -> str:
        return str(config[FORMAT]).lower()
