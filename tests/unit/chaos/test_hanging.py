"""The operator's remedy for a hanging transaction reads Kafka's own tool's table."""

from __future__ import annotations

from tests.chaos.cluster import Hanging, hanging

# find-hanging's output in a run (seed 307) where the broker got SIGTERM as a source committed.
LISTED = (
    "Topic        \tPartition\tProducerId\tProducerEpoch\tCoordinatorEpoch\tStartOffset\t"
    "LastTimestamp\tDuration(min)\t\n"
    "chaos-feed   \t2        \t8         \t3            \t0               \t4394       \t"
    "1795882466971\t18           \t\n"
    "chaos-offsets\t0        \t8         \t3            \t0               \t1678       \t"
    "1795882466972\t18           \t\n"
)


def test_each_row_is_a_transaction_to_abort_where_it_starts() -> None:
    assert hanging(LISTED) == [
        Hanging("chaos-feed", 2, 8, 4394),
        Hanging("chaos-offsets", 0, 8, 1678),
    ]


def test_a_table_with_no_row_has_nothing_to_abort() -> None:
    assert hanging(LISTED.splitlines()[0] + "\n") == []
    assert hanging("") == []
