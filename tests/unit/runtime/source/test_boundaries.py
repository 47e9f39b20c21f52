"""Where a source task's transactions end (KIP-618), and the keys that say so, without I/O."""

from __future__ import annotations

from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st

from headrace.core.model.connectorconfig import (
    Boundary,
    Transactions,
    check_support,
    transactions,
)
from headrace.runtime.source.boundaries import End, Requests, Segment, is_due, plan
from headrace.sdk import (
    ConfigException,
    ConnectorTransactionBoundaries,
    ExactlyOnceSupport,
    SourceRecord,
)

POLL, INTERVAL, CONNECTOR = (Transactions(b) for b in Boundary)


def records(n: int) -> list[SourceRecord]:
    return [SourceRecord({"p": 0}, {"n": i}, "t", i) for i in range(n)]


def test_by_default_every_poll_commits_and_an_empty_one_does_nothing() -> None:
    assert plan(records(3), POLL, Requests(), due=False) == [Segment(0, 3, End.COMMIT)]
    assert plan([], POLL, Requests(), due=True) == []


def test_an_interval_commits_the_batch_that_finds_it_due_even_an_empty_one() -> None:
    assert plan(records(2), INTERVAL, Requests(), due=False) == [Segment(0, 2, None)]
    assert plan(records(2), INTERVAL, Requests(), due=True) == [Segment(0, 2, End.COMMIT)]
    assert plan([], INTERVAL, Requests(), due=True) == [Segment(0, 0, End.COMMIT)]


def test_is_due_counts_from_the_open_transaction() -> None:
    ten = Transactions(Boundary.INTERVAL, interval_s=10)
    assert not is_due(None, 100.0, ten)  # none open: the next batch opens one
    assert not is_due(95.0, 100.0, ten)
    assert is_due(90.0, 100.0, ten)
    assert is_due(None, 100.0, Transactions(Boundary.INTERVAL, interval_s=0))
    assert not is_due(0.0, 100.0, POLL)


def test_a_task_cuts_its_batch_after_the_records_it_names() -> None:
    polled = records(5)
    asked = Requests()
    asked.commit_transaction(polled[1])
    asked.abort_transaction(polled[3])
    assert plan(polled, CONNECTOR, asked, due=False) == [
        Segment(0, 2, End.COMMIT),
        Segment(2, 4, End.ABORT),
        Segment(4, 5, None),  # the rest stays in the open transaction
    ]


def test_a_request_for_the_last_record_wins_over_one_for_the_batch() -> None:
    polled = records(3)
    asked = Requests()
    asked.abort_transaction()
    asked.commit_transaction(polled[2])
    assert plan(polled, CONNECTOR, asked, due=False) == [Segment(0, 3, End.COMMIT)]


def test_a_batch_request_applies_to_an_empty_poll_and_an_unknown_record_to_nothing() -> None:
    asked = Requests()
    asked.commit_transaction()
    asked.abort_transaction(records(1)[0])  # not in the batch
    assert plan([], CONNECTOR, asked, due=False) == [Segment(0, 0, End.COMMIT)]


def test_requests_apply_to_one_batch_only() -> None:
    asked = Requests()
    asked.commit_transaction()
    taken = asked.take()
    assert taken.batch is End.COMMIT
    assert asked.take() == Requests()


@given(st.lists(st.sampled_from([None, End.COMMIT, End.ABORT]), max_size=30), st.booleans())
def test_segments_cover_the_batch_in_order_once(marks: list[End | None], batch: bool) -> None:
    polled = records(len(marks))
    asked = Requests()
    if batch:
        asked.commit_transaction()
    for record, mark in zip(polled, marks, strict=True):
        if mark is End.COMMIT:
            asked.commit_transaction(record)
        elif mark is End.ABORT:
            asked.abort_transaction(record)
    segments = plan(polled, CONNECTOR, asked, due=False)
    assert segments[0].start == 0 and segments[-1].end == len(polled)
    assert all(a.end == b.start for a, b in pairwise(segments))
    # Every marked record ends its segment with its own request.
    ends = {s.end - 1: s.then for s in segments if s.end > s.start}
    for index, mark in enumerate(marks):
        if mark is not None:
            assert ends[index] is mark


def test_the_keys_default_to_a_commit_per_poll() -> None:
    assert transactions({}) == POLL
    assert transactions({"exactly.once.support": "required"}).required
    assert transactions({"transaction.boundary": "interval"}).interval_s == 60.0
    assert transactions(
        {"transaction.boundary": "interval", "transaction.boundary.interval.ms": "250"}
    ) == Transactions(Boundary.INTERVAL, 0.25)


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"exactly.once.support": "maybe"}, "exactly.once.support: 'maybe' is not one of"),
        ({"transaction.boundary": "row"}, "transaction.boundary: 'row' is not one of"),
        (
            {"transaction.boundary.interval.ms": "100"},
            "transaction.boundary.interval.ms: applies only with transaction.boundary=interval",
        ),
        (
            {"transaction.boundary": "interval", "transaction.boundary.interval.ms": "1s"},
            "is not a whole number of milliseconds",
        ),
        (
            {"transaction.boundary": "interval", "transaction.boundary.interval.ms": "-1"},
            "must be at least 0",
        ),
    ],
)
def test_a_bad_value_is_refused_naming_its_key(config: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigException, match=message):
        transactions(config)


def test_without_exactly_once_offsets_are_stored_each_poll_and_more_is_refused() -> None:
    assert transactions({}, exactly_once=False) == Transactions(transactional=False)
    assert not transactions({"transaction.boundary": "poll"}, exactly_once=False).transactional
    for config, key in [
        ({"exactly.once.support": "required"}, "exactly.once.support: required"),
        ({"transaction.boundary": "interval"}, "transaction.boundary: interval"),
        ({"transaction.boundary": "connector"}, "transaction.boundary: connector"),
        ({"transaction.boundary.interval.ms": "100"}, "transaction.boundary.interval.ms: set"),
    ]:
        with pytest.raises(ConfigException, match=f"{key}, but sources run without transactions"):
            transactions(config, exactly_once=False)


def test_what_a_connector_cannot_honour_is_refused() -> None:
    required = Transactions(required=True)
    with pytest.raises(ConfigException, match="required, but the connector does not say"):
        check_support(required, None, ConnectorTransactionBoundaries.UNSUPPORTED)
    with pytest.raises(ConfigException, match="says it does not support"):
        check_support(
            required, ExactlyOnceSupport.UNSUPPORTED, ConnectorTransactionBoundaries.UNSUPPORTED
        )
    with pytest.raises(ConfigException, match="cannot define transaction boundaries"):
        check_support(CONNECTOR, None, ConnectorTransactionBoundaries.UNSUPPORTED)
    check_support(required, ExactlyOnceSupport.SUPPORTED, ConnectorTransactionBoundaries.SUPPORTED)
    check_support(CONNECTOR, None, ConnectorTransactionBoundaries.SUPPORTED)
