"""Environments for plugin versions' requirements (``headrace.isolation.pluginenv``), built by
a real pip from wheels the versions bundle: offline, no broker."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from headrace.core.model.errors import PluginError
from headrace.isolation import pluginenv
from headrace.isolation.pluginenv import env_key, site_for
from tests.support import wait_for
from tests.wheels import build_wheel

PROCESS_DEADLINE_S = 120.0


def pinned(root: Path, version: str, bundled: Sequence[str]) -> Path:
    """A version folder of the plugin ``pinned`` whose ``wheels/`` holds ``hr-pin`` at each of
    ``bundled``."""
    folder = root / "pinned" / version
    for pin in bundled:
        build_wheel(folder / "wheels", "hr-pin", pin, f'VERSION = "{pin}"\n')
    return folder


def imported_version(site: Path) -> str:
    """What ``hr_pin.VERSION`` is in a fresh interpreter with ``site`` on its path."""
    code = "import sys; sys.path.insert(0, sys.argv[1]); import hr_pin; print(hr_pin.VERSION)"
    done = subprocess.run(
        [sys.executable, "-I", "-c", code, str(site)],
        capture_output=True,
        text=True,
        timeout=PROCESS_DEADLINE_S,
        check=True,
    )
    return done.stdout.strip()


@pytest.fixture
def pip_runs(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The commands pluginenv runs (pip's), each still run for real."""
    runs: list[list[str]] = []
    real = pluginenv._run

    def counted(command: list[str], timeout: float) -> tuple[int, str]:
        runs.append(command)
        return real(command, timeout)

    monkeypatch.setattr(pluginenv, "_run", counted)
    return runs


def test_conflicting_requirements_get_environments_of_their_own(
    tmp_path: Path, pip_runs: list[list[str]]
) -> None:
    envs = tmp_path / "envs"
    one = site_for(pinned(tmp_path, "1.0.0", ["1.0"]), ["hr-pin==1.0"], envs)
    two = site_for(pinned(tmp_path, "2.0.0", ["2.0"]), ["hr-pin==2.0"], envs)

    assert one is not None and two is not None
    assert one != two and one.parent == two.parent == envs
    assert (imported_version(one), imported_version(two)) == ("1.0", "2.0")
    assert all("--no-index" in command for command in pip_runs)
    assert sorted(p.name for p in envs.iterdir() if not p.name.endswith(".lock")) == sorted(
        [one.name, two.name]
    )


def test_an_environment_is_built_once_and_found_afterwards(
    tmp_path: Path, pip_runs: list[list[str]]
) -> None:
    envs = tmp_path / "envs"
    folder = pinned(tmp_path, "1.0.0", ["1.0"])
    built = site_for(folder, ["hr-pin==1.0"], envs)
    assert built is not None and len(pip_runs) == 1
    marker = (built / pluginenv.MARKER).stat()

    again = site_for(folder, ["hr-pin==1.0"], envs)
    # The same set written otherwise, and the same bundle in another version folder.
    respelled = site_for(folder, ["HR_Pin == 1.0", "hr-pin==1.0"], envs)
    copy = tmp_path / "pinned" / "1.0.1"
    shutil.copytree(folder, copy)
    bundled_alike = site_for(copy, ["hr-pin==1.0"], envs)

    assert again == respelled == bundled_alike == built
    assert len(pip_runs) == 1
    after = (built / pluginenv.MARKER).stat()
    assert (after.st_ino, after.st_mtime_ns) == (marker.st_ino, marker.st_mtime_ns)


def test_a_folder_without_its_marker_is_built_again(
    tmp_path: Path, pip_runs: list[list[str]]
) -> None:
    envs = tmp_path / "envs"
    folder = pinned(tmp_path, "1.0.0", ["1.0"])
    built = site_for(folder, ["hr-pin==1.0"], envs)
    assert built is not None
    (built / pluginenv.MARKER).unlink()
    stale = envs / f".{built.name}.left-by-a-builder-that-died"
    stale.mkdir()

    assert site_for(folder, ["hr-pin==1.0"], envs) == built
    assert len(pip_runs) == 2
    assert (built / pluginenv.MARKER).is_file() and not stale.exists()
    assert imported_version(built) == "1.0"


def test_without_a_bundle_pip_uses_the_index_it_is_configured_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    commands: list[list[str]] = []

    def offline(command: list[str], timeout: float) -> tuple[int, str]:
        commands.append(command)  # what pip would be asked, without reaching any index
        return 0, ""

    monkeypatch.setattr(pluginenv, "_run", offline)
    folder = tmp_path / "pinned" / "1.0.0"
    folder.mkdir(parents=True)

    site = site_for(folder, ["hr-pin==1.0"], tmp_path / "envs")

    assert site is not None and (site / pluginenv.MARKER).is_file()
    [command] = commands
    assert command[:4] == [sys.executable, "-m", "pip", "install"]
    assert command[-1] == "hr-pin==1.0"
    assert not [a for a in command if "index" in a or "find-links" in a]


def test_no_requirements_need_no_environment(tmp_path: Path) -> None:
    assert site_for(pinned(tmp_path, "1.0.0", ["1.0"]), [], tmp_path / "envs") is None
    assert not (tmp_path / "envs").exists()


@pytest.mark.parametrize(
    ("requirement", "problem"),
    [
        ("hr-pin=>1.0", "is not a PEP 508 requirement"),
        ("--find-links=/tmp", "is not a PEP 508 requirement"),
        ("./wheels/hr_pin-1.0-py3-none-any.whl", "is not a PEP 508 requirement"),
        ("hr-pin @ file:///etc/hr_pin-1.0-py3-none-any.whl", "names a location"),
        ("hr-pin @ file:wheels/hr_pin-1.0-py3-none-any.whl", "names a location"),
    ],
)
def test_a_requirement_that_is_not_a_name_with_versions_is_refused(
    tmp_path: Path, pip_runs: list[list[str]], requirement: str, problem: str
) -> None:
    folder = pinned(tmp_path, "1.0.0", ["1.0"])
    with pytest.raises(PluginError) as refused:
        site_for(folder, ["hr-pin==1.0", requirement], tmp_path / "envs")
    message = str(refused.value)
    assert str(folder) in message and repr(requirement) in message and problem in message
    assert pip_runs == [] and not (tmp_path / "envs").exists()


def test_an_unsatisfiable_requirement_fails_with_what_pip_said(tmp_path: Path) -> None:
    envs = tmp_path / "envs"
    folder = pinned(tmp_path, "1.0.0", ["1.0"])
    with pytest.raises(PluginError) as failed:
        site_for(folder, ["hr-pin==9.9"], envs)
    message = str(failed.value)
    assert str(folder) in message and "hr-pin==9.9" in message
    assert "No matching distribution found for hr-pin==9.9" in message
    assert [p.name for p in envs.iterdir()] == [f"{env_key(folder, ['hr-pin==9.9'])}.lock"]


def test_a_pip_run_past_the_timeout_is_killed_with_what_it_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A "pip" that starts a process of its own (as pip starts build backends), says so, and
    # hangs; both carry the token among their arguments (the child's are the grandchild's).
    token = f"hung-{tmp_path.name}"
    hang = (
        "import subprocess, sys, time; subprocess.Popen([sys.executable, *sys.argv[1:]]); "
        "print('started a process', flush=True); time.sleep(600)"
    )
    command = [sys.executable, "-c", hang, "-c", "import time; time.sleep(600)", token]
    monkeypatch.setattr(pluginenv, "_pip_command", lambda spec, target: command)
    envs = tmp_path / "envs"
    folder = pinned(tmp_path, "1.0.0", ["1.0"])

    with pytest.raises(PluginError, match=r"did not install hr-pin==1\.0 within 2 s") as failed:
        site_for(folder, ["hr-pin==1.0"], envs, timeout=2.0)

    assert "started a process" in str(failed.value)  # what it printed before it was killed

    wait_for("the hung run's processes to be gone", lambda: not _running(token), timeout=30)
    assert [p.name for p in envs.iterdir()] == [f"{env_key(folder, ['hr-pin==1.0'])}.lock"]


ASK = """
import sys
from pathlib import Path
from headrace.core.observability import log
from headrace.isolation.pluginenv import site_for
log.configure("test", stream=sys.stderr)
print(site_for(Path(sys.argv[1]), sys.argv[3:], Path(sys.argv[2])))
"""


def test_processes_asking_at_once_build_once(tmp_path: Path) -> None:
    envs = tmp_path / "envs"
    folder = pinned(tmp_path, "1.0.0", ["1.0"])
    envs.mkdir()
    lock = envs / f"{env_key(folder, ['hr-pin==1.0'])}.lock"
    # Holding the key's lock until both wait for it: each has found no environment yet.
    held = os.open(lock, os.O_CREAT | os.O_RDWR)
    try:
        fcntl.flock(held, fcntl.LOCK_EX)
        askers = [
            subprocess.Popen(
                [sys.executable, "-c", ASK, str(folder), str(envs), "hr-pin==1.0"],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(2)
        ]
        wait_for("both processes to wait for the lock", _waiters(lock, 2), PROCESS_DEADLINE_S)
    finally:
        os.close(held)
    answers = [asker.communicate(timeout=PROCESS_DEADLINE_S) for asker in askers]

    assert [asker.returncode for asker in askers] == [0, 0], answers
    sites = {Path(out.strip()) for out, _ in answers}
    assert sites == {envs / lock.stem}
    assert sum(err.count('"plugin_env_built"') for _, err in answers) == 1
    assert imported_version(envs / lock.stem) == "1.0"


def _waiters(lock: Path, count: int) -> Callable[[], bool]:
    """Whether ``count`` processes are blocked on the flock of ``lock`` (Linux's /proc/locks
    lists each waiter after ``->``)."""
    inode = f":{lock.stat().st_ino} "

    def check() -> bool:
        lines = Path("/proc/locks").read_text().splitlines()
        return sum("->" in line and inode in line for line in lines) >= count

    return check


def _running(token: str) -> bool:
    """Whether a live process has ``token`` among its arguments."""
    for proc in Path("/proc").iterdir():
        try:
            arguments = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:  # not a process, or one that has just ended
            continue
        if token.encode() in arguments:
            return True
    return False
