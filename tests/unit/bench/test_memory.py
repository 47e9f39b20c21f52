"""The benchmarks' resident memory of a process tree: a child that runs in its parent's memory
(a JVM's child before it runs the command it was made for) counts once, with the parent; every
other child counts, however alike."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from collections import namedtuple
from typing import cast

import psutil

from bench.memory import MIB, _same_memory, pss, tree_pss, tree_rss

Memory = namedtuple("Memory", "rss vms")
NO_SUCH_PIDS = itertools.count(10**8)  # above any pid_max: the kernel cannot be asked of them


class Process:
    """What the tree's sum reads of a process: its pid, memory and children."""

    def __init__(
        self, rss_mib: int, vms_mib: int, *children: Process, exe: str = "/usr/bin/python3"
    ) -> None:
        self.pid = next(NO_SUCH_PIDS)
        self.memory = Memory(rss_mib * MIB, vms_mib * MIB)
        self._children = list(children)
        self._exe = exe

    def name(self) -> str:
        return self._exe.rsplit("/", 1)[-1]

    def exe(self) -> str:
        return self._exe

    def memory_info(self) -> Memory:
        return self.memory

    def children(self) -> list[Process]:
        return self._children


def test_a_child_reading_as_its_parent_to_the_byte_counts_once_and_others_each() -> None:
    """Where the kernel cannot say which memory a process runs in, a child that reads as its
    parent to the byte (resident and virtual) is taken to run in it."""
    in_parent = Process(900, 4000)
    command = Process(3, 10)
    alike = Process(900, 4100)  # as resident as the JVM, in memory of its own
    jvm = Process(900, 4000, in_parent, command, alike)
    executor = Process(170, 900, jvm)
    root = cast(psutil.Process, executor)
    assert tree_rss([(root, None)]) == (170 + 900 + 3 + 900) * MIB


def test_a_jvm_s_child_counts_once_it_runs_its_command() -> None:
    """A JVM never forks to go on running Java: a child still on the JVM's executable is the
    JVM's copy before it runs the command it was started for."""
    java = "/usr/lib/jvm/java-17/bin/java"
    copy = Process(880, 3900, exe=java)
    chmod = Process(1, 5, exe="/usr/bin/chmod")
    jvm = Process(882, 4000, copy, chmod, exe=java)
    assert tree_rss([(cast(psutil.Process, jvm), None)]) == (882 + 1) * MIB


def test_the_kernel_tells_a_process_in_its_own_memory_from_a_child_in_another() -> None:
    me = psutil.Process()
    holding = "import sys, time; held = bytearray(64 << 20); print(flush=True); time.sleep(30)"
    child = subprocess.Popen([sys.executable, "-c", holding], stdout=subprocess.PIPE)
    try:
        assert child.stdout is not None and child.stdout.readline() == b"\n"  # 64 MiB held
        assert _same_memory(me, psutil.Process(os.getpid()))
        assert not _same_memory(me, psutil.Process(child.pid))
        assert tree_rss([(me, None)]) - me.memory_info().rss >= 60 * MIB  # the child's counted
    finally:
        child.kill()
        child.wait()
        if child.stdout is not None:
            child.stdout.close()


def test_a_process_s_proportional_set_is_read_and_never_above_its_resident_set() -> None:
    """PSS divides each shared page among the processes that map it: this process shares its
    interpreter's and libraries' pages, so it is below its resident set, and above nothing."""
    me = psutil.Process(os.getpid())
    proportional, resident = tree_pss([(me, None)]), tree_rss([(me, None)])
    assert 0 < proportional <= resident
    assert pss(10**8) == 0  # gone, or never there
