"""Environments for the Python requirements a plugin version's manifest lists.

A manifest may list ``requirements`` (PEP 508: a name, extras, version specifiers, a marker). The
plugin host imports that version with a folder holding exactly them on ``sys.path``, right after
the version folder, so two versions of one plugin whose requirements conflict each run in their
own process with their own. The folder is built by ``pip install --target``, which installs
every requirement and its dependencies into the folder whatever the running venv holds already
(it never reuses, upgrades or removes what is installed there)::

    <envs_dir>/<key>/               what goes on sys.path: the installed distributions
    <envs_dir>/<key>/.complete      written last: what the environment was built from (JSON)
    <envs_dir>/<key>.lock           flock'ed by whoever checks for or builds <key>
    <envs_dir>/.<key>.<random>/     a build under way, renamed to <key> once complete

``key`` is a hash of the normalised requirements, the name and sha256 of each file in the
version folder's ``wheels/``, and the interpreter's tag: a set of requirements is built once per
interpreter, and versions that list the same set share one folder. A version with a ``wheels/``
folder is a self-contained bundle: pip installs from there alone (``--no-index``), with no
network. Without one, pip uses the index it is configured with (the operator's pip config and
``PIP_*`` variables), as ``pip install`` would. Requirements are names with versions only: a
direct reference (``name @ url``, a path) is refused, so a manifest never makes a worker fetch
from a location it chose. Only wheels are installed: building a source distribution would run
its build code in the worker's name, so a plugin that needs one ships it built, in ``wheels/``.

Processes that ask for one key at once build it once: each checks for the marker, then takes the
key's lock, checks again, and builds into a temporary sibling that it renames into place (an
atomic step), so a half-built folder is never seen under the key's name. A builder that died
leaves its temporary folder behind; the next one to build the key removes it.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.tags import sys_tags
from packaging.utils import canonicalize_name

from headrace.core.model.errors import PluginError
from headrace.core.model.plugins import PluginDescriptor
from headrace.core.observability import log
from headrace.core.settings import Settings

PIP_TIMEOUT_S = 300.0
"""How long one pip run may take before it is killed and the build fails."""
MARKER = ".complete"
WHEELS = "wheels"
OUTPUT_LINES = 20  # of pip's output, in the error of a failed build


def site_for(
    folder: Path,
    requirements: Sequence[str],
    envs_dir: Path,
    *,
    timeout: float = PIP_TIMEOUT_S,
) -> Path | None:
    """The folder to put on ``sys.path`` (right after the plugin's version folder) so the plugin
    imports its requirements; None when there are none. Built once per distinct set of
    requirements (and bundled wheels), reused afterwards, safe when several processes ask at once.

    Raises PluginError naming ``folder`` for a requirement that is not a plain PEP 508 one, and
    for a pip run that fails or outlasts ``timeout`` seconds (with the end of pip's output).
    """
    if not requirements:
        return None
    spec = _spec(folder, requirements)
    env = envs_dir / spec.key
    if _complete(env):
        return env
    envs_dir.mkdir(parents=True, exist_ok=True)
    with _locked(envs_dir / f"{spec.key}.lock"):
        if not _complete(env):  # nobody built it while this process waited for the lock
            _build(folder, spec, env, timeout)
    return env


def env_key(folder: Path, requirements: Sequence[str]) -> str:
    """The name of the folder under ``envs_dir`` that holds these requirements of the version in
    ``folder``; PluginError for a requirement ``site_for`` would refuse."""
    return _spec(folder, requirements).key


@dataclass(frozen=True)
class _Spec:
    """What one environment is built from; its marker file records it."""

    requirements: tuple[str, ...]  # normalised, sorted, each once
    wheels: Path | None  # the bundle's wheels folder; None: pip's configured index
    bundled: tuple[tuple[str, str], ...]  # (file name, sha256) of each file in ``wheels``
    interpreter: str  # the most specific tag this Python installs wheels for

    def describe(self) -> str:
        return json.dumps(
            {
                "requirements": self.requirements,
                "wheels": dict(self.bundled) if self.wheels is not None else None,
                "interpreter": self.interpreter,
            },
            sort_keys=True,
        )

    @property
    def key(self) -> str:
        return hashlib.sha256(self.describe().encode()).hexdigest()[:32]


def _spec(folder: Path, requirements: Sequence[str]) -> _Spec:
    normalised = sorted({_normalised(folder, r) for r in requirements})
    wheels = folder.resolve() / WHEELS  # pip reads it from where pip runs
    bundle = wheels if wheels.is_dir() else None
    bundled = () if bundle is None else tuple(_hashes(bundle))
    return _Spec(tuple(normalised), bundle, bundled, str(next(iter(sys_tags()))))


def _normalised(folder: Path, raw: str) -> str:
    """``raw`` as pip is given it: the canonical name and extras, sorted specifiers, marker."""
    try:
        req = Requirement(raw)
    except InvalidRequirement as exc:
        raise PluginError(
            f"{folder}: requirement {raw!r} is not a PEP 508 requirement: {exc}"
        ) from exc
    if req.url is not None:
        raise PluginError(
            f"{folder}: requirement {raw!r} names a location ({req.url}); a requirement is a "
            f"name with versions only, installed from pip's index or the version's {WHEELS}/"
        )
    extras = f"[{','.join(sorted(canonicalize_name(e) for e in req.extras))}]" if req.extras else ""
    marker = f"; {req.marker}" if req.marker is not None else ""
    return f"{canonicalize_name(req.name)}{extras}{req.specifier}{marker}"


def _hashes(wheels: Path) -> Iterator[tuple[str, str]]:
    # pip's --find-links reads the folder itself, not below it.
    for path in sorted(p for p in wheels.iterdir() if p.is_file()):
        with path.open("rb") as f:
            yield path.name, hashlib.file_digest(f, "sha256").hexdigest()


def _complete(env: Path) -> bool:
    return (env / MARKER).is_file()


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Holds an exclusive flock on ``path``: one per open file, so threads exclude each other as
    processes do. The file stays; removing it would let two holders lock two different files."""
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def _build(folder: Path, spec: _Spec, env: Path, timeout: float) -> None:
    """Installs ``spec`` into a temporary sibling of ``env`` and renames it to ``env``; the
    caller holds the key's lock."""
    for stale in env.parent.glob(f".{env.name}.*"):  # a builder that died left it
        shutil.rmtree(stale, ignore_errors=True)
    if env.exists():  # without its marker: something removed part of it
        shutil.rmtree(env)
    logger = log.get()
    logger.info("plugin_env_building", folder=str(folder), env=env.name)
    started = time.monotonic()
    building = Path(tempfile.mkdtemp(prefix=f".{env.name}.", dir=env.parent))
    try:
        _install(folder, spec, building, timeout)
        (building / MARKER).write_text(spec.describe())
        os.rename(building, env)
    finally:
        shutil.rmtree(building, ignore_errors=True)  # gone already once renamed
    logger.info(
        "plugin_env_built",
        folder=str(folder),
        env=env.name,
        requirements=list(spec.requirements),
        offline=spec.wheels is not None,
        seconds=round(time.monotonic() - started, 3),
    )


def _install(folder: Path, spec: _Spec, target: Path, timeout: float) -> None:
    wanted = ", ".join(spec.requirements)
    try:
        code, output = _run(_pip_command(spec, target), timeout)
    except subprocess.TimeoutExpired as exc:
        raise PluginError(
            f"{folder}: pip did not install {wanted} within {timeout:g} s and was stopped; "
            f"its last lines:\n{_tail(exc.output)}"
        ) from None
    if code != 0:
        raise PluginError(
            f"{folder}: pip could not install {wanted} (exit code {code}); its last lines:\n"
            f"{_tail(output)}"
        )


def _pip_command(spec: _Spec, target: Path) -> list[str]:
    source = [] if spec.wheels is None else ["--no-index", "--find-links", str(spec.wheels)]
    return [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--target",
        str(target),
        "--no-input",
        "--disable-pip-version-check",
        "--quiet",
        "--only-binary=:all:",  # a source distribution would run its build code here
        *source,
        *spec.requirements,
    ]


def _run(command: list[str], timeout: float) -> tuple[int, str]:
    """The exit code and output (stdout and stderr together) of ``command``. Past ``timeout``
    seconds its whole process group is killed (pip may have started build backends) and
    TimeoutExpired raised, holding the output so far."""
    with subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    ) as process:
        try:
            output, _ = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):  # the whole group ended just now
                os.killpg(process.pid, signal.SIGKILL)
            output, _ = process.communicate()
            raise subprocess.TimeoutExpired(command, timeout, output) from None
    return process.returncode, output


def _tail(output: str | bytes | None) -> str:
    if isinstance(output, bytes):
        output = output.decode(errors="replace")
    lines = (output or "").strip().splitlines()[-OUTPUT_LINES:]
    return "\n".join(lines) if lines else "(no output)"


def prepare_environments(plugin: PluginDescriptor, settings: Settings) -> list[Path]:
    """The folder of each environment the plugin version and its components need on
    ``sys.path`` (built when not there yet), in the order they are given."""
    envs_dir = settings.var_dir / "plugin-envs"
    sites = (site_for(p.folder, p.requirements, envs_dir) for p in (plugin, *plugin.components))
    return [site for site in sites if site is not None]
