"""KIP-158 topic creation: which group a topic falls in, what it inherits, and the refusals."""

from __future__ import annotations

import pytest

from headrace.components.topiccreation import TopicSettings, topic_creation
from headrace.sdk.errors import ConfigException

DEFAULT = {
    "topic.creation.default.replication.factor": "1",
    "topic.creation.default.partitions": "3",
}


def test_without_any_key_no_topic_is_created() -> None:
    assert topic_creation({"topic": "t"}) is None


def test_every_topic_takes_the_default_group_when_there_is_no_other() -> None:
    creation = topic_creation({**DEFAULT, "topic.creation.default.cleanup.policy": "delete"})
    assert creation is not None
    assert creation.settings_for("anything") == TopicSettings(3, 1, {"cleanup.policy": "delete"})


def test_the_first_group_that_includes_and_does_not_exclude_a_topic_wins() -> None:
    creation = topic_creation(
        {
            **DEFAULT,
            "topic.creation.default.retention.ms": "1000",
            "topic.creation.groups": "compacted, logs",
            "topic.creation.compacted.include": "users, log-audit",
            "topic.creation.compacted.cleanup.policy": "compact",
            "topic.creation.logs.include": "log-.*",
            "topic.creation.logs.exclude": "log-secret",
            "topic.creation.logs.partitions": "6",
        }
    )
    assert creation is not None
    compacted = {"retention.ms": "1000", "cleanup.policy": "compact"}
    assert creation.settings_for("users") == TopicSettings(3, 1, compacted)
    assert creation.settings_for("log-audit") == TopicSettings(3, 1, compacted)  # listed first
    assert creation.settings_for("log-app") == TopicSettings(6, 1, {"retention.ms": "1000"})
    assert creation.settings_for("log-secret").partitions == 3  # excluded: default
    assert creation.settings_for("users-2").partitions == 3  # a name, matched whole


@pytest.mark.parametrize(
    ("config", "key", "why"),
    [
        ({"topic.creation.default.partitions": "1"}, "default.replication.factor", "required"),
        ({**DEFAULT, "topic.creation.default.partitions": "0"}, "default.partitions", "neither"),
        ({**DEFAULT, "topic.creation.default.partitions": "-2"}, "default.partitions", "neither"),
        (
            {**DEFAULT, "topic.creation.default.replication.factor": "x"},
            "default.replication",
            "neither",
        ),
        ({**DEFAULT, "topic.creation.big.partitions": "9"}, "big.partitions", "not in"),
        (
            {**DEFAULT, "topic.creation.groups": "a, a", "topic.creation.a.include": "t"},
            "groups",
            "twice",
        ),
        ({**DEFAULT, "topic.creation.groups": "default"}, "groups", "always there"),
        ({**DEFAULT, "topic.creation.default.include": "t"}, "default.include", "every topic"),
        ({**DEFAULT, "topic.creation.groups": "a"}, "a.include", "needs the topics"),
        (
            {**DEFAULT, "topic.creation.groups": "a", "topic.creation.a.include": "(unclosed"},
            "a.include",
            "not a valid regex",
        ),
    ],
)
def test_a_bad_value_is_refused_naming_its_key(config: dict[str, str], key: str, why: str) -> None:
    with pytest.raises(ConfigException, match=rf"topic\.creation\.{key}.*{why}"):
        topic_creation(config)
