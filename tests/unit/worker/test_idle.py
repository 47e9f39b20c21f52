"""When a worker, or the config service, stops a plugin process as idle: the rule alone,
without processes."""

from __future__ import annotations

import pytest

from headrace.core.settings import Settings
from headrace.isolation.supervisor import idle

AFTER_30S = Settings(plugin_idle_stop_s=30.0)


@pytest.mark.parametrize(
    ("in_use", "handed_out", "now", "stopped"),
    [
        (set(), None, 5.0, True),  # never asked for, and runs nothing
        (set(), 0.0, 30.0, True),  # asked for once, long enough ago
        (set(), 0.0, 29.9, False),  # a validation asked for it lately
        ({"other"}, 0.0, 30.0, True),  # another plugin's units do not keep it
        ({"p"}, None, 100.0, False),  # a unit runs in it
        ({"p"}, 0.0, 100.0, False),
    ],
)
def test_a_plugin_process_is_idle_when_it_runs_nothing_and_was_not_asked_for_lately(
    in_use: set[str], handed_out: float | None, now: float, stopped: bool
) -> None:
    assert idle("p", in_use, handed_out, now, AFTER_30S) is stopped
