"""Cluster log levels (KIP-976) as one process applies them, and as the configs topic keeps them."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from headrace.core.model import configlog
from headrace.core.model.configstate import ConfigState, LogLevel, apply, level_pairs
from headrace.core.observability import log

LOGGER = "headrace.test.cluster"


@pytest.fixture(autouse=True)
def fresh_logger() -> Iterator[None]:
    yield
    logging.getLogger(LOGGER).setLevel(logging.NOTSET)


def test_a_level_set_after_the_process_started_is_applied_once_and_an_older_one_not() -> None:
    levels = log.ClusterLevels(started_ms=1_000)
    assert levels.apply({LOGGER: ("DEBUG", 999)}) == []  # before it started: its own stays
    assert logging.getLogger(LOGGER).level == logging.NOTSET
    assert levels.apply({LOGGER: ("DEBUG", 1_500)}) == [LOGGER]
    assert logging.getLogger(LOGGER).level == logging.DEBUG
    assert levels.apply({LOGGER: ("DEBUG", 1_500)}) == []  # heard again: nothing new
    assert levels.apply({LOGGER: ("ERROR", 2_000), "headrace.x": ("LOUD", 2_100)}) == [LOGGER]
    assert levels.current() == {LOGGER: "ERROR"}


def test_a_plugin_process_holds_its_loggers_to_the_levels_its_worker_sends() -> None:
    assert log.hold({LOGGER: "WARN"}) == [LOGGER]
    assert logging.getLogger(LOGGER).level == logging.WARNING
    assert log.hold({LOGGER: "WARN"}) == []  # already there


def test_the_configs_topic_keeps_the_latest_level_per_logger() -> None:
    state = ConfigState()
    for level, at in (("DEBUG", 10), ("INFO", 20)):
        key, value = configlog.logger_level(LOGGER, level, at)
        event = configlog.decode(key, value)
        assert event is not None
        state = apply(state, event)
    assert dict(state.log_levels) == {LOGGER: LogLevel("INFO", 20)}
    assert level_pairs(state.log_levels) == {LOGGER: ("INFO", 20)}


@pytest.mark.parametrize(
    ("written", "recorded"), [("warning", "WARN"), (" Warn ", "WARN"), ("debug", "DEBUG")]
)
def test_a_cluster_level_is_recorded_as_log4j_names_it_for_the_jvms_that_apply_it_too(
    written: str, recorded: str
) -> None:
    """Python takes WARNING; log4j knows only WARN (and would take an unknown name as DEBUG)."""
    assert log.log4j_name(written) == recorded
    assert recorded in log.LEVELS


def test_a_logger_name_is_bounded_and_so_is_the_number_kept() -> None:
    for good in ("root", "aiokafka.conn", "io.debezium.connector.postgresql", "naïve", "a b"):
        assert log.name_refusal(good) is None
    for bad in ("", " lead", "trail ", "a\nb", "a\x00b", "\x85c", "x" * 256):
        assert "is not a logger's name" in (log.name_refusal(bad) or "")
    kept = [f"kept.{n}" for n in range(log.MAX_SET_LOGGERS)]
    assert log.kept_refusal("kept.3", kept) is None  # set again
    assert log.kept_refusal("root", kept) is None  # one that exists here
    assert "the most there may be" in (log.kept_refusal("new.one", kept) or "")
    assert log.kept_refusal("new.one", kept[:-1]) is None
