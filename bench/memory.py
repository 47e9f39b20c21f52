"""Peak resident memory of process trees, sampled while a workload runs.

A process's own high-water mark (``VmHWM``) would leave out its children (a worker's plugin
processes, the executor's JVM and Spark's Python workers) and would carry over peaks from
earlier workloads, since headrace's services live for the whole run. So a thread samples, every
``interval`` seconds, the resident set of each tracked process and all its descendants, and keeps
the peak of each tree's sum over the time it watched. Pages shared by two processes of a tree
count once per process in the resident set (RSS), as ``ps`` and ``top`` count them, which weighs
on a system of many processes that share their libraries; so the proportional set size (PSS,
each shared page divided among the processes that map it, from ``/proc/<pid>/smaps_rollup``) is
sampled beside it, every ``PSS_EVERY``-th sample, as it costs the kernel a walk of each process's
page tables. A workload that measures the workers
keeps only the plugin processes of its own plugins (``plugin_processes``): an earlier workload's
may still be there, idle, until the worker stops them (``HEADRACE_PLUGIN_IDLE_STOP``).
"""

from __future__ import annotations

import ctypes
import platform
import threading
from collections.abc import Callable, Iterable
from types import TracebackType

import psutil

MIB = 2**20


Keep = Callable[[psutil.Process], bool]
"""Whether a descendant (and its own descendants) counts in its tree."""


PSS_EVERY = 10


def pss(pid: int) -> int:
    """``pid``'s proportional set size in bytes (0 once it is gone, or where the kernel has no
    ``smaps_rollup``)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as rollup:
            for line in rollup:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return 0
    return 0


def tree_rss(roots: Iterable[tuple[psutil.Process, Keep | None]]) -> int:
    """Bytes resident in ``roots`` and their descendants now (those each root's ``Keep``
    keeps, all without one); gone processes count zero. A JVM's child that has not yet become
    the command it was started for counts zero too: Spark's Hadoop file system starts ``chmod``
    and the like, and until the child runs its command it is the JVM's copy (or runs in the
    JVM's memory), and reads as large as the JVM, for less than a sampling interval. Counted,
    such a child put a peak of the ``delta`` workload's executor 900 MiB above every other
    sample (a child named after a Java thread, 882 MiB beside its 882 MiB parent)."""
    return sum(_resident(root, keep, None, lambda p: p.memory_info().rss) for root, keep in roots)


def tree_pss(roots: Iterable[tuple[psutil.Process, Keep | None]]) -> int:
    """Bytes of ``roots`` and their kept descendants now, as :func:`tree_rss` counts them, but
    by proportional set size: a page shared by several processes counts once in all."""
    return sum(_resident(root, keep, None, lambda p: pss(p.pid)) for root, keep in roots)


def _resident(
    process: psutil.Process,
    keep: Keep | None,
    parent: psutil.Process | None,
    size: Callable[[psutil.Process], int],
) -> int:
    """``process``'s bytes by ``size``, and its kept descendants'."""
    try:
        own = size(process)
        children = process.children()
    except psutil.NoSuchProcess:
        return 0
    total = 0 if parent is not None and _same_memory(parent, process) else own
    for child in children:
        if keep is None or keep(child):
            total += _resident(child, keep, process, size)
    return total


_KCMP = {"x86_64": 312, "aarch64": 272}.get(platform.machine())
_KCMP_VM = 1
_libc = ctypes.CDLL(None, use_errno=True)


def _same_memory(parent: psutil.Process, child: psutil.Process) -> bool:
    """Whether ``child`` is ``parent``'s memory rather than its own: it runs in it (Linux's
    ``kcmp`` says), or it is a JVM's copy that has not yet run its command (its executable is
    still the JVM's: a JVM never forks to go on running Java). Where the kernel cannot be
    asked, a child that reads as its parent to the byte is taken to run in its memory."""
    if _KCMP is not None:
        answer = _libc.syscall(_KCMP, parent.pid, child.pid, _KCMP_VM, 0, 0)
        if answer == 0:
            return True
    try:
        if parent.name() == "java" and child.exe() == parent.exe():
            return True
        if _KCMP is not None and answer > 0:
            return False
        mine, theirs = parent.memory_info(), child.memory_info()
    except psutil.Error:
        return False
    return (mine.rss, mine.vms) == (theirs.rss, theirs.vms)


def plugin_processes(*manifests: str) -> Keep:
    """Keeps a worker's plugin processes whose manifest path holds one of ``manifests`` (with
    their children: a Java plugin's JVM), and its other children: a workload's figure leaves
    out the idle plugin processes an earlier workload left behind."""

    def keep(process: psutil.Process) -> bool:
        try:
            command = process.cmdline()
        except psutil.Error:
            return False
        if "headrace.runtime.host" not in command:
            return True
        manifest = command[command.index("--manifest") + 1] if "--manifest" in command else ""
        return any(m in manifest for m in manifests)

    return keep


class PeakMemory:
    """``with PeakMemory() as peaks: peaks.track("Kafka Connect worker", pid) ...`` then
    :meth:`mib` gives each name's peak, in MiB, over the time inside the block. A name may
    stand for several trees (two workers and their plugins): their sum is what peaks."""

    def __init__(self, interval: float = 0.1) -> None:
        self._interval = interval
        self._trees: dict[str, list[tuple[psutil.Process, Keep | None]]] = {}
        self._peaks: dict[str, int] = {}
        self._pss_peaks: dict[str, int] = {}
        self._samples = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample_until_stopped, daemon=True)

    def track(self, name: str, pid: int | None, keep: Keep | None = None) -> None:
        """Adds the tree under ``pid`` (what ``keep`` keeps of it) to ``name``'s sum (a None
        pid is refused loudly: a process the workload meant to measure is not running)."""
        if pid is None:
            raise RuntimeError(f"no process to measure for {name}")
        with self._lock:
            self._trees.setdefault(name, []).append((psutil.Process(pid), keep))
            self._peaks.setdefault(name, 0)
            self._pss_peaks.setdefault(name, 0)
        self._sample(with_pss=True)

    def _sample(self, with_pss: bool = False) -> None:
        with self._lock:
            self._samples += 1
            with_pss = with_pss or self._samples % PSS_EVERY == 0
            for name, roots in self._trees.items():
                self._peaks[name] = max(self._peaks[name], tree_rss(roots))
                if with_pss:
                    self._pss_peaks[name] = max(self._pss_peaks[name], tree_pss(roots))

    def _sample_until_stopped(self) -> None:
        while not self._stop.wait(self._interval):
            self._sample()

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join()
        self._sample(with_pss=True)

    def mib(self) -> dict[str, float]:
        """Each name's peak resident set so far, in MiB."""
        with self._lock:
            return {name: peak / MIB for name, peak in self._peaks.items()}

    def pss_mib(self) -> dict[str, float]:
        """Each name's peak proportional set so far, in MiB."""
        with self._lock:
            return {name: peak / MIB for name, peak in self._pss_peaks.items()}
