"""The suite's hang watchdog (``tests/conftest.py``): a run that hangs ends, with every thread's
stack written down and nothing it started left running, though its services run in sessions of
their own. Tried on a process of its own that hangs, with a child in a new session that would
outlive it."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import psutil
import pytest

from tests.conftest import HANG_AFTER_S, LAST_RESORT_S, hang_after_s
from tests.support import wait_for

HANGING = textwrap.dedent(
    """
    import subprocess, sys, threading, time
    from tests.conftest import end_hung_run

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"],
                             start_new_session=True)
    print(child.pid, flush=True)
    with open(sys.argv[1], "w") as report:
        watchdog_args = (report, threading.Event(), 0.5, "t::hung")
        threading.Thread(target=end_hung_run, args=watchdog_args).start()
        time.sleep(300)  # the hang
    """
)


def test_a_hung_run_ends_says_where_and_stops_what_it_started(tmp_path: Path) -> None:
    report = tmp_path / "hang.txt"
    run = subprocess.Popen(
        [sys.executable, "-c", HANGING, str(report)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).parents[2],
    )
    try:
        assert run.stdout is not None
        child = int(run.stdout.readline())
        assert run.wait(timeout=60) == 1
    finally:
        run.kill()
        if run.stdout is not None:
            run.stdout.close()
    said = report.read_text()
    hang_line = HANGING.splitlines().index("    time.sleep(300)  # the hang") + 1
    assert f'File "<string>", line {hang_line} in <module>' in said  # where the run hung
    assert "stopped the session's 1 processes" in said and str(child) in said
    tail = said.splitlines()[-4:]  # what a CI log that keeps only the end still shows
    assert tail[-1] == "t::hung ran past 0s"
    assert f'  File "<string>", line {hang_line}, in <module>' in tail
    wait_for("the child gone", lambda: is_gone(child))


def is_gone(pid: int) -> bool:
    """Exited (a zombie until its parent, killed too, is reaped: gone all the same)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


@pytest.mark.timeout(1500)
def test_a_test_given_a_longer_timeout_than_the_hang_limit_is_waited_for_past_it(
    request: pytest.FixtureRequest,
) -> None:
    assert hang_after_s(request.node) == 1500 + LAST_RESORT_S


def test_any_other_test_is_waited_for_the_hang_limit(request: pytest.FixtureRequest) -> None:
    assert hang_after_s(request.node) == HANG_AFTER_S
