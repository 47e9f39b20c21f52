"""Confining a plugin process to the files its plugin may touch, with Linux's Landlock.

A plugin process runs third-party code as its worker's user. Without a confinement it could
read whatever that user can: the tokens file, the worker's TLS key, ``/proc/<worker>/environ``
with the worker's credentials. Before the plugin is imported, the plugin host restricts itself
(:func:`confine`) to a list of folders and files (:func:`plugin_paths`): what Python, its
libraries and the plugin version need to read and run, and the folders its connectors may write
(the file roots, its socket's folder, a temporary folder of its own). Everything else fails with
EACCES, for the plugin and for whatever it starts. The restriction cannot be lifted, and a
process it confines cannot trace or signal one outside it (Landlock's domains).

Landlock needs Linux 5.13 and an unprivileged process; the mode (``HEADRACE_PLUGIN_SANDBOX``)
says what to do without it: ``auto`` runs unconfined and says so, ``required`` refuses to run
the plugin, ``off`` never confines (for a platform that confines plugins otherwise).
"""

from __future__ import annotations

import ctypes
import errno
import os
import site
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from headrace.core.settings import Settings

_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446  # the same on x86-64 and arm64
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38

EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_MAKE_AND_REMOVE = sum(1 << bit for bit in range(4, 13))  # remove, make char/dir/reg/sock/...
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1
BIND_TCP, CONNECT_TCP = 1 << 0, 1 << 1  # Landlock's network rights (ABI 4)

READ = READ_FILE | READ_DIR
RUN = READ | EXECUTE
WRITE = READ | WRITE_FILE | _MAKE_AND_REMOVE | REFER | TRUNCATE
_FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV


class SandboxError(RuntimeError):
    """The process could not be confined; the message says why."""


class _RulesetAttr(ctypes.Structure):
    _fields_ = (
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    )


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = (("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32))


_libc = ctypes.CDLL(None, use_errno=True)


def abi_version() -> int:
    """The Landlock ABI the kernel speaks; 0 when it has none (or it is turned off)."""
    if not sys.platform.startswith("linux"):
        return 0
    found = _libc.syscall(_CREATE_RULESET, None, ctypes.c_size_t(0), _CREATE_RULESET_VERSION)
    return max(int(found), 0)


def _handled(abi: int) -> int:
    rights = EXECUTE | WRITE_FILE | READ_FILE | READ_DIR | _MAKE_AND_REMOVE
    if abi >= 2:
        rights |= REFER
    if abi >= 3:
        rights |= TRUNCATE
    if abi >= 5:
        rights |= IOCTL_DEV
    return rights


@dataclass(frozen=True)
class Allowed:
    """What a confined process may do beneath each path: ``run`` (read and execute), ``read``,
    ``write`` (read, write, make and remove). A path that does not exist is left out."""

    run: tuple[Path, ...] = ()
    read: tuple[Path, ...] = ()
    write: tuple[Path, ...] = ()

    def each(self) -> Iterable[tuple[Path, int]]:
        for paths, rights in ((self.run, RUN), (self.read, READ), (self.write, WRITE)):
            yield from ((p, rights) for p in paths)


def _check(result: int, doing: str) -> int:
    if result < 0:
        code = ctypes.get_errno()
        raise SandboxError(f"{doing}: {os.strerror(code)} ({errno.errorcode.get(code, code)})")
    return result


def confine(allowed: Allowed) -> int:
    """Restricts this process, for good, to ``allowed``; the Landlock ABI it used. SandboxError
    when the kernel has no Landlock or refuses a rule."""
    abi = abi_version()
    if abi < 1:
        raise SandboxError("this kernel has no Landlock (Linux 5.13 or later, turned on)")
    handled = _handled(abi)
    # No TCP listener (ABI 4 and later): a plugin serves nothing. Connecting stays open, port by
    # port being all Landlock can tell apart, and a connector's ports are its config's.
    net = BIND_TCP if abi >= 4 else 0
    attr = _RulesetAttr(handled, net, SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0)
    size = ctypes.sizeof(attr) if abi >= 6 else (16 if abi >= 4 else 8)
    ruleset = _check(
        _libc.syscall(_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), 0),
        "creating the Landlock ruleset",
    )
    try:
        for path, rights in allowed.each():
            _add(ruleset, path, rights & handled)
        _check(_libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "setting no_new_privs")
        _check(_libc.syscall(_RESTRICT_SELF, ruleset, 0), "restricting the process")
    finally:
        os.close(ruleset)
    return abi


def _add(ruleset: int, path: Path, rights: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except FileNotFoundError:
        return  # nothing there to allow
    try:
        if not os.path.isdir(path):
            rights &= _FILE_RIGHTS
        beneath = _PathBeneathAttr(rights, fd)
        _check(
            _libc.syscall(_ADD_RULE, ruleset, _RULE_PATH_BENEATH, ctypes.byref(beneath), 0),
            f"allowing {path}",
        )
    finally:
        os.close(fd)


# What every Python process reads of the system: libraries, certificates, name resolution, time
# zones, and the kernel's own descriptions of the machine (never another process's).
_SYSTEM_RUN = ("/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin")
_SYSTEM_READ = (
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/pki",
    "/etc/crypto-policies",
    "/etc/resolv.conf",
    "/etc/hosts",
    "/etc/nsswitch.conf",
    "/etc/gai.conf",
    "/etc/host.conf",
    "/etc/localtime",
    "/etc/passwd",
    "/etc/group",
    "/etc/os-release",
    "/etc/ld.so.cache",
    "/dev/urandom",
    "/dev/random",
    "/proc/cpuinfo",
    "/proc/meminfo",
    "/proc/stat",
    "/sys/devices/system/cpu",
    "/sys/fs/cgroup",
)
_SYSTEM_WRITE = ("/dev/null", "/dev/zero", "/dev/shm")


def system_paths(
    run: Iterable[Path] = (), read: Iterable[Path] = (), write: Iterable[Path] = ()
) -> Allowed:
    """What any confined process needs of the system (its libraries, certificates, name
    resolution, its own ``/proc`` entry, never another's), and ``run``, ``read`` and
    ``write`` besides."""
    return Allowed(
        run=(*(Path(p) for p in _SYSTEM_RUN), *run),
        read=(*(Path(p) for p in _SYSTEM_READ), Path(f"/proc/{os.getpid()}"), *read),
        write=(*(Path(p) for p in _SYSTEM_WRITE), *write),
    )


# What a process that runs third-party code takes of its owner's environment, besides what is
# made for it: what Python, Java, locales and TLS libraries read, never a credential.
PASSED_ENV = frozenset(
    {
        "PATH",
        "HOME",
        "USER",
        "LOGNAME",
        "LANG",
        "LANGUAGE",
        "TZ",
        "TMPDIR",
        "VIRTUAL_ENV",
        "JAVA_HOME",
        "PYTHONPATH",
        "PYTHONHASHSEED",
        "PYTHONUNBUFFERED",
        "PYTHONDONTWRITEBYTECODE",
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
        "PROMETHEUS_MULTIPROC_DIR",
        "HEADRACE_JVM_HEAP",  # a Java plugin's JVM's heap (headrace.runtime.host.jvm)
        "HEADRACE_JVM_OPTS",  # and more of its options
        "HEADRACE_JVM_HOST",  # and its jar, where it is not in a checkout (the image)
    }
)


def passed_env(environ: Mapping[str, str]) -> dict[str, str]:
    """What ``PASSED_ENV`` names of ``environ``, and its locale's ``LC_*``."""
    return {k: v for k, v in environ.items() if k in PASSED_ENV or k.startswith("LC_")}


def plugin_paths(
    settings: Settings, plugin_folders: Iterable[Path], writable: Iterable[Path]
) -> Allowed:
    """What a plugin process may touch: the system's libraries and this Python's, the plugin
    version's folders (and its environments'), what its TLS and Kafka settings name to read,
    the config providers' folders; to write, the file roots and ``writable`` (its socket's
    folder, its temporary folder). Its own ``/proc`` entry, never another's."""
    # Python's own folders and its packages', and PYTHONPATH's: not the rest of sys.path,
    # whose first entry is the folder the process was started in.
    python = {Path(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    python |= {Path(p) for p in (*site.getsitepackages(), site.getusersitepackages())}
    python |= {Path(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p}
    python.add(Path(sys.executable).resolve().parent)
    # headrace itself, wherever it is imported from (an editable install is on no sys.path).
    python.add(Path(__file__).resolve().parents[2])
    kafka = settings.kafka_security
    files = [
        settings.tls_ca,
        settings.tls_cert,
        settings.tls_key,
        *(str(p or "") for p in (kafka.ssl_cafile, kafka.ssl_certfile, kafka.ssl_keyfile)),
        str(kafka.sasl_password_file or ""),
    ]
    return system_paths(
        run=sorted(python),
        read=(
            *plugin_folders,
            *settings.plugin_path,
            settings.var_dir / "plugin-envs",
            *settings.config_provider_paths,
            *(Path(f) for f in files if f),
        ),
        write=(*settings.file_roots, *writable),
    )
