from headrace.v1 import configdef_pb2 as _configdef_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ScanRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class JavaPlugin(_message.Message):
    __slots__ = ("class_name", "type", "version")
    CLASS_NAME_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    class_name: str
    type: str
    version: str
    def __init__(self, class_name: _Optional[str] = ..., type: _Optional[str] = ..., version: _Optional[str] = ...) -> None: ...

class ScanResponse(_message.Message):
    __slots__ = ("plugins",)
    PLUGINS_FIELD_NUMBER: _ClassVar[int]
    plugins: _containers.RepeatedCompositeFieldContainer[JavaPlugin]
    def __init__(self, plugins: _Optional[_Iterable[_Union[JavaPlugin, _Mapping]]] = ...) -> None: ...

class JvmValidateRequest(_message.Message):
    __slots__ = ("connector_class", "config", "definition_only")
    class ConfigEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    CONNECTOR_CLASS_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    DEFINITION_ONLY_FIELD_NUMBER: _ClassVar[int]
    connector_class: str
    config: _containers.ScalarMap[str, str]
    definition_only: bool
    def __init__(self, connector_class: _Optional[str] = ..., config: _Optional[_Mapping[str, str]] = ..., definition_only: _Optional[bool] = ...) -> None: ...

class JvmAlterOffsetsRequest(_message.Message):
    __slots__ = ("connector_class", "config", "offsets_json")
    class ConfigEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    CONNECTOR_CLASS_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    OFFSETS_JSON_FIELD_NUMBER: _ClassVar[int]
    connector_class: str
    config: _containers.ScalarMap[str, str]
    offsets_json: str
    def __init__(self, connector_class: _Optional[str] = ..., config: _Optional[_Mapping[str, str]] = ..., offsets_json: _Optional[str] = ...) -> None: ...

class JvmAlterOffsetsResponse(_message.Message):
    __slots__ = ("handled", "unsupported", "connect_exception", "message", "failed")
    HANDLED_FIELD_NUMBER: _ClassVar[int]
    UNSUPPORTED_FIELD_NUMBER: _ClassVar[int]
    CONNECT_EXCEPTION_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    handled: bool
    unsupported: bool
    connect_exception: bool
    message: str
    failed: bool
    def __init__(self, handled: _Optional[bool] = ..., unsupported: _Optional[bool] = ..., connect_exception: _Optional[bool] = ..., message: _Optional[str] = ..., failed: _Optional[bool] = ...) -> None: ...

class CapabilitiesRequest(_message.Message):
    __slots__ = ("connector_class", "config")
    class ConfigEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    CONNECTOR_CLASS_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    connector_class: str
    config: _containers.ScalarMap[str, str]
    def __init__(self, connector_class: _Optional[str] = ..., config: _Optional[_Mapping[str, str]] = ...) -> None: ...

class CapabilitiesResponse(_message.Message):
    __slots__ = ("exactly_once_support", "transaction_boundaries")
    EXACTLY_ONCE_SUPPORT_FIELD_NUMBER: _ClassVar[int]
    TRANSACTION_BOUNDARIES_FIELD_NUMBER: _ClassVar[int]
    exactly_once_support: str
    transaction_boundaries: str
    def __init__(self, exactly_once_support: _Optional[str] = ..., transaction_boundaries: _Optional[str] = ...) -> None: ...

class JvmStartConnectorRequest(_message.Message):
    __slots__ = ("connector_class", "name", "config", "max_tasks", "offsets")
    class ConfigEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    CONNECTOR_CLASS_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    MAX_TASKS_FIELD_NUMBER: _ClassVar[int]
    OFFSETS_FIELD_NUMBER: _ClassVar[int]
    connector_class: str
    name: str
    config: _containers.ScalarMap[str, str]
    max_tasks: int
    offsets: _containers.RepeatedCompositeFieldContainer[SourceOffset]
    def __init__(self, connector_class: _Optional[str] = ..., name: _Optional[str] = ..., config: _Optional[_Mapping[str, str]] = ..., max_tasks: _Optional[int] = ..., offsets: _Optional[_Iterable[_Union[SourceOffset, _Mapping]]] = ...) -> None: ...

class JvmStartConnectorResponse(_message.Message):
    __slots__ = ("tasks",)
    TASKS_FIELD_NUMBER: _ClassVar[int]
    tasks: _containers.RepeatedCompositeFieldContainer[JvmTaskConfig]
    def __init__(self, tasks: _Optional[_Iterable[_Union[JvmTaskConfig, _Mapping]]] = ...) -> None: ...

class JvmTaskConfig(_message.Message):
    __slots__ = ("config",)
    class ConfigEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    config: _containers.ScalarMap[str, str]
    def __init__(self, config: _Optional[_Mapping[str, str]] = ...) -> None: ...

class JvmStopRequest(_message.Message):
    __slots__ = ("connector", "task", "deleted")
    CONNECTOR_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    DELETED_FIELD_NUMBER: _ClassVar[int]
    connector: str
    task: int
    deleted: bool
    def __init__(self, connector: _Optional[str] = ..., task: _Optional[int] = ..., deleted: _Optional[bool] = ...) -> None: ...

class JvmStopResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class SourceOffset(_message.Message):
    __slots__ = ("partition", "offset")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    partition: str
    offset: str
    def __init__(self, partition: _Optional[str] = ..., offset: _Optional[str] = ...) -> None: ...

class JvmStartTaskRequest(_message.Message):
    __slots__ = ("connector_class", "connector", "task", "connector_config", "task_config", "offsets", "transactions")
    class ConnectorConfigEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class TaskConfigEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    CONNECTOR_CLASS_FIELD_NUMBER: _ClassVar[int]
    CONNECTOR_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    CONNECTOR_CONFIG_FIELD_NUMBER: _ClassVar[int]
    TASK_CONFIG_FIELD_NUMBER: _ClassVar[int]
    OFFSETS_FIELD_NUMBER: _ClassVar[int]
    TRANSACTIONS_FIELD_NUMBER: _ClassVar[int]
    connector_class: str
    connector: str
    task: int
    connector_config: _containers.ScalarMap[str, str]
    task_config: _containers.ScalarMap[str, str]
    offsets: _containers.RepeatedCompositeFieldContainer[SourceOffset]
    transactions: bool
    def __init__(self, connector_class: _Optional[str] = ..., connector: _Optional[str] = ..., task: _Optional[int] = ..., connector_config: _Optional[_Mapping[str, str]] = ..., task_config: _Optional[_Mapping[str, str]] = ..., offsets: _Optional[_Iterable[_Union[SourceOffset, _Mapping]]] = ..., transactions: _Optional[bool] = ...) -> None: ...

class JvmStartTaskResponse(_message.Message):
    __slots__ = ("commits_records",)
    COMMITS_RECORDS_FIELD_NUMBER: _ClassVar[int]
    commits_records: bool
    def __init__(self, commits_records: _Optional[bool] = ...) -> None: ...

class Header(_message.Message):
    __slots__ = ("key", "value")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    key: str
    value: bytes
    def __init__(self, key: _Optional[str] = ..., value: _Optional[bytes] = ...) -> None: ...

class ProducedRecord(_message.Message):
    __slots__ = ("topic", "partition", "key", "value", "headers", "timestamp", "source_partition", "source_offset", "polled", "commit_after", "abort_after", "dropped", "failure")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    HEADERS_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    SOURCE_PARTITION_FIELD_NUMBER: _ClassVar[int]
    SOURCE_OFFSET_FIELD_NUMBER: _ClassVar[int]
    POLLED_FIELD_NUMBER: _ClassVar[int]
    COMMIT_AFTER_FIELD_NUMBER: _ClassVar[int]
    ABORT_AFTER_FIELD_NUMBER: _ClassVar[int]
    DROPPED_FIELD_NUMBER: _ClassVar[int]
    FAILURE_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partition: int
    key: bytes
    value: bytes
    headers: _containers.RepeatedCompositeFieldContainer[Header]
    timestamp: int
    source_partition: str
    source_offset: str
    polled: int
    commit_after: bool
    abort_after: bool
    dropped: bool
    failure: RecordFailure
    def __init__(self, topic: _Optional[str] = ..., partition: _Optional[int] = ..., key: _Optional[bytes] = ..., value: _Optional[bytes] = ..., headers: _Optional[_Iterable[_Union[Header, _Mapping]]] = ..., timestamp: _Optional[int] = ..., source_partition: _Optional[str] = ..., source_offset: _Optional[str] = ..., polled: _Optional[int] = ..., commit_after: _Optional[bool] = ..., abort_after: _Optional[bool] = ..., dropped: _Optional[bool] = ..., failure: _Optional[_Union[RecordFailure, _Mapping]] = ...) -> None: ...

class RecordFailure(_message.Message):
    __slots__ = ("index", "stage", "executing", "error_class", "message", "trace", "source_partition", "topic")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    STAGE_FIELD_NUMBER: _ClassVar[int]
    EXECUTING_FIELD_NUMBER: _ClassVar[int]
    ERROR_CLASS_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    TRACE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_PARTITION_FIELD_NUMBER: _ClassVar[int]
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    index: int
    stage: str
    executing: str
    error_class: str
    message: str
    trace: str
    source_partition: str
    topic: str
    def __init__(self, index: _Optional[int] = ..., stage: _Optional[str] = ..., executing: _Optional[str] = ..., error_class: _Optional[str] = ..., message: _Optional[str] = ..., trace: _Optional[str] = ..., source_partition: _Optional[str] = ..., topic: _Optional[str] = ...) -> None: ...

class PollRequest(_message.Message):
    __slots__ = ("connector", "task")
    CONNECTOR_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    connector: str
    task: int
    def __init__(self, connector: _Optional[str] = ..., task: _Optional[int] = ...) -> None: ...

class ProducedBatch(_message.Message):
    __slots__ = ("topic", "partition", "source_partition", "source_offset", "values", "keys", "timestamps")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    SOURCE_PARTITION_FIELD_NUMBER: _ClassVar[int]
    SOURCE_OFFSET_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    KEYS_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMPS_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partition: int
    source_partition: str
    source_offset: str
    values: _containers.RepeatedScalarFieldContainer[bytes]
    keys: _containers.RepeatedScalarFieldContainer[bytes]
    timestamps: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, topic: _Optional[str] = ..., partition: _Optional[int] = ..., source_partition: _Optional[str] = ..., source_offset: _Optional[str] = ..., values: _Optional[_Iterable[bytes]] = ..., keys: _Optional[_Iterable[bytes]] = ..., timestamps: _Optional[_Iterable[int]] = ...) -> None: ...

class PollResponse(_message.Message):
    __slots__ = ("records", "batch", "failed", "commit_requested", "abort_requested")
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    BATCH_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    COMMIT_REQUESTED_FIELD_NUMBER: _ClassVar[int]
    ABORT_REQUESTED_FIELD_NUMBER: _ClassVar[int]
    records: _containers.RepeatedCompositeFieldContainer[ProducedRecord]
    batch: ProducedBatch
    failed: RecordFailure
    commit_requested: bool
    abort_requested: bool
    def __init__(self, records: _Optional[_Iterable[_Union[ProducedRecord, _Mapping]]] = ..., batch: _Optional[_Union[ProducedBatch, _Mapping]] = ..., failed: _Optional[_Union[RecordFailure, _Mapping]] = ..., commit_requested: _Optional[bool] = ..., abort_requested: _Optional[bool] = ...) -> None: ...

class Acknowledged(_message.Message):
    __slots__ = ("polled", "topic", "partition", "offset", "timestamp", "written")
    POLLED_FIELD_NUMBER: _ClassVar[int]
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    WRITTEN_FIELD_NUMBER: _ClassVar[int]
    polled: int
    topic: str
    partition: int
    offset: int
    timestamp: int
    written: bool
    def __init__(self, polled: _Optional[int] = ..., topic: _Optional[str] = ..., partition: _Optional[int] = ..., offset: _Optional[int] = ..., timestamp: _Optional[int] = ..., written: _Optional[bool] = ...) -> None: ...

class CommitRequest(_message.Message):
    __slots__ = ("connector", "task", "records", "commit")
    CONNECTOR_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    COMMIT_FIELD_NUMBER: _ClassVar[int]
    connector: str
    task: int
    records: _containers.RepeatedCompositeFieldContainer[Acknowledged]
    commit: bool
    def __init__(self, connector: _Optional[str] = ..., task: _Optional[int] = ..., records: _Optional[_Iterable[_Union[Acknowledged, _Mapping]]] = ..., commit: _Optional[bool] = ...) -> None: ...

class CommitResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ConsumedRecord(_message.Message):
    __slots__ = ("topic", "partition", "offset", "key", "value", "headers", "timestamp", "timestamp_type")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    HEADERS_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_TYPE_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partition: int
    offset: int
    key: bytes
    value: bytes
    headers: _containers.RepeatedCompositeFieldContainer[Header]
    timestamp: int
    timestamp_type: str
    def __init__(self, topic: _Optional[str] = ..., partition: _Optional[int] = ..., offset: _Optional[int] = ..., key: _Optional[bytes] = ..., value: _Optional[bytes] = ..., headers: _Optional[_Iterable[_Union[Header, _Mapping]]] = ..., timestamp: _Optional[int] = ..., timestamp_type: _Optional[str] = ...) -> None: ...

class TopicPartitionOffset(_message.Message):
    __slots__ = ("topic", "partition", "offset")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partition: int
    offset: int
    def __init__(self, topic: _Optional[str] = ..., partition: _Optional[int] = ..., offset: _Optional[int] = ...) -> None: ...

class SinkRequests(_message.Message):
    __slots__ = ("offsets", "paused", "resumed", "commit_requested")
    OFFSETS_FIELD_NUMBER: _ClassVar[int]
    PAUSED_FIELD_NUMBER: _ClassVar[int]
    RESUMED_FIELD_NUMBER: _ClassVar[int]
    COMMIT_REQUESTED_FIELD_NUMBER: _ClassVar[int]
    offsets: _containers.RepeatedCompositeFieldContainer[TopicPartitionOffset]
    paused: _containers.RepeatedCompositeFieldContainer[TopicPartitionOffset]
    resumed: _containers.RepeatedCompositeFieldContainer[TopicPartitionOffset]
    commit_requested: bool
    def __init__(self, offsets: _Optional[_Iterable[_Union[TopicPartitionOffset, _Mapping]]] = ..., paused: _Optional[_Iterable[_Union[TopicPartitionOffset, _Mapping]]] = ..., resumed: _Optional[_Iterable[_Union[TopicPartitionOffset, _Mapping]]] = ..., commit_requested: _Optional[bool] = ...) -> None: ...

class ConsumedBatch(_message.Message):
    __slots__ = ("topic", "partition", "offsets", "timestamps", "timestamp_type", "keys", "key_lengths", "values", "value_lengths")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    OFFSETS_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMPS_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_TYPE_FIELD_NUMBER: _ClassVar[int]
    KEYS_FIELD_NUMBER: _ClassVar[int]
    KEY_LENGTHS_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    VALUE_LENGTHS_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partition: int
    offsets: _containers.RepeatedScalarFieldContainer[int]
    timestamps: _containers.RepeatedScalarFieldContainer[int]
    timestamp_type: str
    keys: bytes
    key_lengths: _containers.RepeatedScalarFieldContainer[int]
    values: bytes
    value_lengths: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, topic: _Optional[str] = ..., partition: _Optional[int] = ..., offsets: _Optional[_Iterable[int]] = ..., timestamps: _Optional[_Iterable[int]] = ..., timestamp_type: _Optional[str] = ..., keys: _Optional[bytes] = ..., key_lengths: _Optional[_Iterable[int]] = ..., values: _Optional[bytes] = ..., value_lengths: _Optional[_Iterable[int]] = ...) -> None: ...

class RecordSet(_message.Message):
    __slots__ = ("topic", "partition", "batches")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    BATCHES_FIELD_NUMBER: _ClassVar[int]
    topic: str
    partition: int
    batches: bytes
    def __init__(self, topic: _Optional[str] = ..., partition: _Optional[int] = ..., batches: _Optional[bytes] = ...) -> None: ...

class PutRequest(_message.Message):
    __slots__ = ("connector", "task", "records", "batches", "record_sets")
    CONNECTOR_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    BATCHES_FIELD_NUMBER: _ClassVar[int]
    RECORD_SETS_FIELD_NUMBER: _ClassVar[int]
    connector: str
    task: int
    records: _containers.RepeatedCompositeFieldContainer[ConsumedRecord]
    batches: _containers.RepeatedCompositeFieldContainer[ConsumedBatch]
    record_sets: _containers.RepeatedCompositeFieldContainer[RecordSet]
    def __init__(self, connector: _Optional[str] = ..., task: _Optional[int] = ..., records: _Optional[_Iterable[_Union[ConsumedRecord, _Mapping]]] = ..., batches: _Optional[_Iterable[_Union[ConsumedBatch, _Mapping]]] = ..., record_sets: _Optional[_Iterable[_Union[RecordSet, _Mapping]]] = ...) -> None: ...

class PutResponse(_message.Message):
    __slots__ = ("skipped", "requests")
    SKIPPED_FIELD_NUMBER: _ClassVar[int]
    REQUESTS_FIELD_NUMBER: _ClassVar[int]
    skipped: _containers.RepeatedCompositeFieldContainer[RecordFailure]
    requests: SinkRequests
    def __init__(self, skipped: _Optional[_Iterable[_Union[RecordFailure, _Mapping]]] = ..., requests: _Optional[_Union[SinkRequests, _Mapping]] = ...) -> None: ...

class PreCommitRequest(_message.Message):
    __slots__ = ("connector", "task", "offsets")
    CONNECTOR_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    OFFSETS_FIELD_NUMBER: _ClassVar[int]
    connector: str
    task: int
    offsets: _containers.RepeatedCompositeFieldContainer[TopicPartitionOffset]
    def __init__(self, connector: _Optional[str] = ..., task: _Optional[int] = ..., offsets: _Optional[_Iterable[_Union[TopicPartitionOffset, _Mapping]]] = ...) -> None: ...

class PreCommitResponse(_message.Message):
    __slots__ = ("offsets", "requests")
    OFFSETS_FIELD_NUMBER: _ClassVar[int]
    REQUESTS_FIELD_NUMBER: _ClassVar[int]
    offsets: _containers.RepeatedCompositeFieldContainer[TopicPartitionOffset]
    requests: SinkRequests
    def __init__(self, offsets: _Optional[_Iterable[_Union[TopicPartitionOffset, _Mapping]]] = ..., requests: _Optional[_Union[SinkRequests, _Mapping]] = ...) -> None: ...

class PartitionsRequest(_message.Message):
    __slots__ = ("connector", "task", "partitions", "close")
    CONNECTOR_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    CLOSE_FIELD_NUMBER: _ClassVar[int]
    connector: str
    task: int
    partitions: _containers.RepeatedCompositeFieldContainer[TopicPartitionOffset]
    close: bool
    def __init__(self, connector: _Optional[str] = ..., task: _Optional[int] = ..., partitions: _Optional[_Iterable[_Union[TopicPartitionOffset, _Mapping]]] = ..., close: _Optional[bool] = ...) -> None: ...

class PartitionsResponse(_message.Message):
    __slots__ = ("requests",)
    REQUESTS_FIELD_NUMBER: _ClassVar[int]
    requests: SinkRequests
    def __init__(self, requests: _Optional[_Union[SinkRequests, _Mapping]] = ...) -> None: ...

class JvmWatchRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class JvmEvent(_message.Message):
    __slots__ = ("connector", "reconfiguration_requested", "error")
    CONNECTOR_FIELD_NUMBER: _ClassVar[int]
    RECONFIGURATION_REQUESTED_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    connector: str
    reconfiguration_requested: bool
    error: str
    def __init__(self, connector: _Optional[str] = ..., reconfiguration_requested: _Optional[bool] = ..., error: _Optional[str] = ...) -> None: ...

class LogLevelsRequest(_message.Message):
    __slots__ = ("levels",)
    class LevelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    LEVELS_FIELD_NUMBER: _ClassVar[int]
    levels: _containers.ScalarMap[str, str]
    def __init__(self, levels: _Optional[_Mapping[str, str]] = ...) -> None: ...

class LogLevelsResponse(_message.Message):
    __slots__ = ("changed",)
    CHANGED_FIELD_NUMBER: _ClassVar[int]
    changed: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, changed: _Optional[_Iterable[str]] = ...) -> None: ...
