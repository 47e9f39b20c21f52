"""The coordinator's metrics (besides ``headrace.core.observability.metrics``'s, which it shares).

| name | type | labels | what |
| --- | --- | --- | --- |
| ``headrace_coordinator_leader`` | gauge | | 1 while this replica leads, else 0 |
| ``headrace_coordinator_generation`` | gauge | | the last generation recorded, as it knows it |
| ``headrace_coordinator_rebalances_total`` | counter | | generations this replica recorded |
| ``headrace_coordinator_members`` | gauge | | workers in the group, while this replica leads |

A replica that stands by keeps the generation it last knew; its leader gauge says it is not the
one to believe. The replay of the assignments and configs topics on taking the lead is timed by
``headrace_replay_seconds``.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge

LEADER = Gauge("headrace_coordinator_leader", "1 while this coordinator replica leads, else 0.")
GENERATION = Gauge(
    "headrace_coordinator_generation", "The last generation of assignments recorded."
)
REBALANCES = Counter(
    "headrace_coordinator_rebalances", "Generations (rebalances) this replica recorded."
)
MEMBERS = Gauge("headrace_coordinator_members", "Workers in the group, while this replica leads.")
