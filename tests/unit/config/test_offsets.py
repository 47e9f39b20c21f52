"""KIP-875 offset entries: what a sink's and a source's entries must look like, and the errors
that name what is wrong."""

from __future__ import annotations

import pytest
from aiokafka import TopicPartition

from headrace.config.offsets import (
    ConnectorOffset,
    modified,
    parse_entries,
    sink_entry,
    source_entry,
)
from headrace.config.validation import ConfigRejected, Problem


def test_a_sink_entry_names_a_topic_partition_and_its_next_offset() -> None:
    entry = ConnectorOffset({"kafka_topic": "t", "kafka_partition": 2}, {"kafka_offset": 40})
    assert sink_entry(entry) == (TopicPartition("t", 2), 40)
    forget = ConnectorOffset({"kafka_topic": "t", "kafka_partition": "0"}, None)
    assert sink_entry(forget) == (TopicPartition("t", 0), None)


@pytest.mark.parametrize(
    ("partition", "offset", "named"),
    [
        ({"kafka_partition": 0}, {"kafka_offset": 1}, "kafka_topic"),
        ({"kafka_topic": "t"}, {"kafka_offset": 1}, "kafka_partition"),
        ({"kafka_topic": "t", "kafka_partition": -1}, {"kafka_offset": 1}, "kafka_partition"),
        ({"kafka_topic": "t", "kafka_partition": True}, {"kafka_offset": 1}, "kafka_partition"),
        ({"kafka_topic": "t", "kafka_partition": 0, "x": 1}, {"kafka_offset": 1}, "['x']"),
        ({"kafka_topic": "t", "kafka_partition": 0}, {"offset": 1}, "kafka_offset"),
        ({"kafka_topic": "t", "kafka_partition": 0}, {"kafka_offset": "ten"}, "kafka_offset"),
        ({"kafka_topic": "t", "kafka_partition": 0}, {"kafka_offset": 1.5}, "kafka_offset"),
    ],
)
def test_a_bad_sink_entry_is_refused_naming_the_key(
    partition: dict, offset: dict, named: str
) -> None:
    with pytest.raises(ConfigRejected) as info:
        sink_entry(ConnectorOffset(partition, offset))
    assert info.value.problem is Problem.INVALID
    assert named in info.value.message


def test_a_source_entry_is_any_non_empty_partition_with_an_object_or_null() -> None:
    assert source_entry(ConnectorOffset({"file": "a"}, {"pos": 3})) == ({"file": "a"}, {"pos": 3})
    assert source_entry(ConnectorOffset({"file": "a"}, None)) == ({"file": "a"}, None)
    with pytest.raises(ConfigRejected, match="non-empty"):
        source_entry(ConnectorOffset({}, {"pos": 3}))


def test_entries_parse_from_json_and_an_empty_or_null_offset_forgets() -> None:
    entries = parse_entries([('{"a": 1}', '{"b": 2}'), ('{"a": 2}', ""), ('{"a": 3}', "null")])
    assert entries == [
        ConnectorOffset({"a": 1}, {"b": 2}),
        ConnectorOffset({"a": 2}, None),
        ConnectorOffset({"a": 3}, None),
    ]
    for bad in [("{", "{}"), ("[1]", "{}"), ('{"a": 1}', "7")]:
        with pytest.raises(ConfigRejected, match="offsets"):
            parse_entries([bad])


def test_an_alteration_is_answered_in_connect_s_words_for_what_the_connector_said() -> None:
    assert modified(True, reset=False) == (
        "The offsets for this connector have been altered successfully"
    )
    assert (
        modified(True, reset=True) == "The offsets for this connector have been reset successfully"
    )
    assert modified(False, reset=True) == (
        "The Connect framework-managed offsets for this connector have been reset successfully. "
        "However, if this connector manages offsets externally, they will need to be manually "
        "reset in the system that the connector uses."
    )
