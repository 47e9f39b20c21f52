"""What plugin authors import: the connector and task API, records, ConfigDef, Schema and Struct.

An idiomatic async take on Kafka Connect's ``connect-api``::

    from headrace.sdk import SourceConnector, SourceTask, SourceRecord, ConfigDef, ConfigType

This package is all of headrace a plugin may import. What else a plugin needs from its host
comes through its context: ``context.logger`` (a :class:`Logger`) for every connector and task,
``context.paths`` (:class:`Paths`, the folders a path in a config may name) for every connector
and task, ``context.executor`` (an :class:`Executor`) for sink tasks that write through Spark,
and ``context.errant_record_reporter`` (an :class:`ErrantRecordReporter`) for sink tasks;
a connector's ``validate()`` may ask the executor whether a query parses (``context.sql``, a
:class:`SqlCheck`).
A sink that writes through the executor subclasses :class:`TableSinkConnector` and
:class:`TableSinkTask`, which buffer, build the tables and commit only what was written.

Converters, transformations and predicates can be plugins too; their contracts
(:class:`Converter`, :class:`HeaderConverter`, :class:`Transformation`, :class:`Predicate`) are in
``headrace.sdk.components``.
"""

from typing import TYPE_CHECKING, Any

from headrace.sdk.components import (
    Converter,
    HeaderConverter,
    Predicate,
    SchemaAndValue,
    Transformation,
)
from headrace.sdk.config import (
    NO_DEFAULT,
    ConfigDef,
    ConfigKey,
    ConfigValue,
    Importance,
    Range,
    Recommender,
    ValidString,
    Width,
    non_empty_string,
    topic_name,
)
from headrace.sdk.config import Type as ConfigType
from headrace.sdk.connector import (
    Connector,
    ConnectorContext,
    ConnectorTransactionBoundaries,
    ExactlyOnceSupport,
    SinkConnector,
    SourceConnector,
)
from headrace.sdk.data import (
    DATE_NAME,
    DATE_SCHEMA,
    DECIMAL_NAME,
    LOGICAL_NAMES,
    OPTIONAL_DATE_SCHEMA,
    OPTIONAL_TIME_SCHEMA,
    OPTIONAL_TIMESTAMP_SCHEMA,
    SCALE_PARAMETER,
    TIME_NAME,
    TIME_SCHEMA,
    TIMESTAMP_NAME,
    TIMESTAMP_SCHEMA,
    Field,
    Schema,
    SchemaBuilder,
    Struct,
    decimal_scale,
    decimal_schema,
    from_logical,
    to_logical,
)
from headrace.sdk.data import Type as SchemaType
from headrace.sdk.errors import ConfigException, ConnectError, DataError, RetriableError
from headrace.sdk.executor import KAFKA_OFFSET_COLUMN, Executor, SqlCheck
from headrace.sdk.logger import Logger
from headrace.sdk.paths import Paths
from headrace.sdk.records import (
    ArrowRecords,
    RecordMetadata,
    SinkBatch,
    SinkRecord,
    SourceBatch,
    SourceRecord,
    TopicPartition,
)
from headrace.sdk.task import (
    ErrantRecordReporter,
    OffsetReader,
    SinkTask,
    SinkTaskContext,
    SourceTask,
    SourceTaskContext,
    Task,
    TransactionContext,
)

_TABLE_SINK = frozenset(
    {"PARTITION_BY", "TABLE_SINK_CONFIG", "TOPICS_CONFIG", "TableSinkConnector", "TableSinkTask"}
)
"""The table sink's names, imported on first use: the table sink needs pyarrow, which a process
that runs no table sink (a Java plugin's, a worker) need not load."""

if TYPE_CHECKING:
    from headrace.sdk.tablesink import (
        PARTITION_BY,
        TABLE_SINK_CONFIG,
        TOPICS_CONFIG,
        TableSinkConnector,
        TableSinkTask,
    )


def __getattr__(name: str) -> Any:
    if name in _TABLE_SINK:
        from headrace.sdk import tablesink

        return getattr(tablesink, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DATE_NAME",
    "DATE_SCHEMA",
    "DECIMAL_NAME",
    "KAFKA_OFFSET_COLUMN",
    "LOGICAL_NAMES",
    "NO_DEFAULT",
    "OPTIONAL_DATE_SCHEMA",
    "OPTIONAL_TIMESTAMP_SCHEMA",
    "OPTIONAL_TIME_SCHEMA",
    "PARTITION_BY",
    "SCALE_PARAMETER",
    "TABLE_SINK_CONFIG",
    "TIMESTAMP_NAME",
    "TIMESTAMP_SCHEMA",
    "TIME_NAME",
    "TIME_SCHEMA",
    "TOPICS_CONFIG",
    "ArrowRecords",
    "ConfigDef",
    "ConfigException",
    "ConfigKey",
    "ConfigType",
    "ConfigValue",
    "ConnectError",
    "Connector",
    "ConnectorContext",
    "ConnectorTransactionBoundaries",
    "Converter",
    "DataError",
    "ErrantRecordReporter",
    "ExactlyOnceSupport",
    "Executor",
    "Field",
    "HeaderConverter",
    "Importance",
    "Logger",
    "OffsetReader",
    "Paths",
    "Predicate",
    "Range",
    "Recommender",
    "RecordMetadata",
    "RetriableError",
    "Schema",
    "SchemaAndValue",
    "SchemaBuilder",
    "SchemaType",
    "SinkBatch",
    "SinkConnector",
    "SinkRecord",
    "SinkTask",
    "SinkTaskContext",
    "SourceBatch",
    "SourceConnector",
    "SourceRecord",
    "SourceTask",
    "SourceTaskContext",
    "SqlCheck",
    "Struct",
    "TableSinkConnector",
    "TableSinkTask",
    "Task",
    "TopicPartition",
    "TransactionContext",
    "Transformation",
    "ValidString",
    "Width",
    "decimal_scale",
    "decimal_schema",
    "from_logical",
    "non_empty_string",
    "to_logical",
    "topic_name",
]
