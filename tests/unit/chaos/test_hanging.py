"""The operator's remedy for a hanging transaction reads Kafka's own tool's table."""

from __future__ import annotations

from pathlib import Path

from tests.chaos.cluster import ENDED_MEANWHILE, Cluster, Hanging, hanging

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


class Broker:
    """Kafka's transactions tool as the broker of seed 307's run answered it."""

    def __init__(self, listed: str, ended: set[str]) -> None:
        self.listed, self.ended = listed, ended
        self.aborts: list[str] = []

    def transactions(self, *args: str) -> str:
        if args[0] == "find-hanging":
            return self.listed
        where = f"{args[2]}-{args[4]}"
        if where in self.ended:
            raise RuntimeError(f"{ENDED_MEANWHILE} starting at offset {args[6]} on {where}")
        self.aborts.append(where)
        return ""


def test_the_offsets_topic_is_aborted_last_and_one_ended_meanwhile_is_passed(
    tmp_path: Path,
) -> None:
    cluster = Cluster(tmp_path)
    broker = Broker(
        LISTED
        + "chaos-feed   \t0        \t8 \t3 \t0 \t4258 \t1795882466971\t18 \t\n"
        + "chaos-feed   \t1        \t8 \t3 \t0 \t4353 \t1795882466971\t18 \t\n",
        ended={"chaos-feed-1"},
    )
    cluster.broker = broker  # type: ignore[assignment]
    aborted = cluster.abort_hanging("chaos-offsets")
    assert broker.aborts == ["chaos-feed-2", "chaos-feed-0", "chaos-offsets-0"]
    assert [(t.topic, t.partition) for t in aborted] == [
        ("chaos-feed", 2),
        ("chaos-feed", 0),
        ("chaos-offsets", 0),
    ]
