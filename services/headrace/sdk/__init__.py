"""What plugin authors import: the connector and task API, records, ConfigDef, Schema and Struct.

An idiomatic async take on Kafka Connect's ``connect-api``::

    from headrace.sdk import SourceConnector, SourceTask, SourceRecord, ConfigDef, ConfigType
"""

from headrace.sdk.config import (
    NO_DEFAULT,
    ConfigDef,
    ConfigKey,
    ConfigValue,
    Importance,
    Range,
    ValidString,
    non_empty_string,
)
from headrace.sdk.config import Type as ConfigType
from headrace.sdk.connector import Connector, ConnectorContext, SinkConnector, SourceConnector
from headrace.sdk.data import Field, Schema, Struct
from headrace.sdk.data import Type as SchemaType
from headrace.sdk.errors import ConfigException, ConnectError, DataError, RetriableError
from headrace.sdk.records import RecordMetadata, SinkRecord, SourceRecord, TopicPartition
from headrace.sdk.task import (
    OffsetReader,
    SinkTask,
    SinkTaskContext,
    SourceTask,
    SourceTaskContext,
    Task,
)

__all__ = [
    "NO_DEFAULT",
    "ConfigDef",
    "ConfigException",
    "ConfigKey",
    "ConfigType",
    "ConfigValue",
    "ConnectError",
    "Connector",
    "ConnectorContext",
    "DataError",
    "Field",
    "Importance",
    "OffsetReader",
    "Range",
    "RecordMetadata",
    "RetriableError",
    "Schema",
    "SchemaType",
    "SinkConnector",
    "SinkRecord",
    "SinkTask",
    "SinkTaskContext",
    "SourceConnector",
    "SourceRecord",
    "SourceTask",
    "SourceTaskContext",
    "Struct",
    "Task",
    "TopicPartition",
    "ValidString",
    "non_empty_string",
]
