"""Java plugins: Kafka Connect's connectors, converters and transformations, on the plugin path.

A Java plugin location is laid out as Connect's ``plugin.path`` takes it, or as ``headrace
plugins install`` lays it out::

    <plugin path entry>/debezium-connector-postgres.jar        an uber-jar
    <plugin path entry>/my-connector/*.jar                     a folder of jars
    <plugin path entry>/connect-file/4.3.0/*.jar               one folder per version

Each location is one class loader, as on Connect, and each of its plugins one plugin version
(run in a JVM plugin host of its own: ``headrace.runtime.host.jvm``). What a location holds is
found by the JVM host's scan, as Connect finds it (service manifests, then class scanning where
a jar has none), and kept under ``<var>/jvm-plugins/<fingerprint>/``, one manifest per connector
(``"runtime": "java"``, ``"location"``), so that a location is scanned again only when its jars
change. A location whose scan fails is a broken plugin, with the JVM's reason.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from headrace.core.model.errors import PluginError
from headrace.core.settings import project_home
from headrace.isolation import confined, sandbox

HOST_JAR = Path("services") / "jvm" / "host" / "target" / "headrace-jvm-host.jar"
"""Where ``make`` builds the JVM host, under the project's home."""
SCAN_TIMEOUT_S = 120.0
DEFAULT_HEAP = "256m"
"""A JVM plugin host's maximum heap unless ``HEADRACE_JVM_HEAP`` says otherwise (``heap``)."""
SCAN_HEAP = "256m"
_MANIFEST = "manifest.json"


def host_jar() -> Path:
    """The JVM host's jar (``HEADRACE_JVM_HOST``, else where ``make`` builds it); PluginError
    saying how to build it when it is missing."""
    configured = os.environ.get("HEADRACE_JVM_HOST")
    jar = Path(configured) if configured else project_home() / HOST_JAR
    if not jar.is_file():
        raise PluginError(f"the JVM plugin host is not built ({jar} is missing): run make")
    return jar


_SIZE = re.compile(r"^[1-9][0-9]*[kKmMgG]?$")


def heap(class_name: str, version: str, setting: str | None) -> str:
    """The maximum heap of the JVM of one connector version, from ``HEADRACE_JVM_HEAP``:
    comma-separated, a bare size is every JVM's, ``<class>=<size>`` one connector's (all its
    versions) and ``<class>@<version>=<size>`` one version's, the most specific winning:
    ``256m,io.debezium.connector.postgresql.PostgresConnector=512m``. PluginError naming the
    variable and the item for an item that is not one of those."""
    chosen = {"": DEFAULT_HEAP}
    for item in (i.strip() for i in (setting or "").split(",")):
        if not item:
            continue
        target, _, size = item.rpartition("=")
        if not _SIZE.match(size) or "=" in target:
            raise PluginError(
                f"HEADRACE_JVM_HEAP: {item!r} is not a heap size such as 512m, nor "
                "<connector class>[@<version>]=<size>"
            )
        chosen[target.strip()] = size
    for target in (f"{class_name}@{version}", class_name, ""):
        if target in chosen:
            return chosen[target]
    raise AssertionError("the default is always chosen")


_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


def _bytes(size: str) -> int:
    unit = size[-1].lower() if size[-1].isalpha() else ""
    return int(size.removesuffix(size[-1]) if unit else size) * _UNITS[unit]


def location_heap(connectors: Iterable[tuple[str, str]], setting: str | None) -> str:
    """The maximum heap of a JVM that runs several connector versions of one location, given
    as (class, version): the largest :func:`heap` among them."""
    return max((heap(c, v, setting) for c, v in connectors), key=_bytes, default=DEFAULT_HEAP)


def options(setting: str | None) -> list[str]:
    """More options for every plugin JVM, from ``HEADRACE_JVM_OPTS`` (split as a shell splits
    words); PluginError for one that is not an option, or that would set the heap, which
    ``HEADRACE_JVM_HEAP`` does."""
    words = shlex.split(setting or "")
    for word in words:
        if not word.startswith("-"):
            raise PluginError(f"HEADRACE_JVM_OPTS: {word!r} is not a JVM option")
        if word.startswith(("-Xmx", "-XX:MaxHeapSize")):
            raise PluginError(f"HEADRACE_JVM_OPTS: {word!r}: set the heap with HEADRACE_JVM_HEAP")
    return words


def java() -> str:
    """The ``java`` to run: ``$JAVA_HOME/bin/java`` when set, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").is_file():
        return str(Path(home) / "bin" / "java")
    found = shutil.which("java")
    if found is None:
        raise PluginError("no java found (set JAVA_HOME, or put java on PATH)")
    return found


def java_home() -> Path:
    """The Java installation's folder (what a confined JVM must read and run)."""
    return Path(java()).resolve().parents[1]


MAX_METASPACE = "256m"
MAX_DIRECT_MEMORY = "256m"
MAX_THREADS = 1024


def command(
    location: Path, heap: str, temp: Path, *args: str, more: Sequence[str] = ()
) -> list[str]:
    """The command line of a JVM host for ``location``; ``more`` options before the jar."""
    return [
        java(),
        f"-Xmx{heap}",
        "-XX:+UseSerialGC",
        # The heap starts at 48 MiB, not the machine's 1/64th, and gives back what it stops
        # using: a JVM per connector version costs what its connectors use. Smaller than that,
        # a batch of ten thousand records in flight outgrew the young generation, and the JVM
        # ran a full collection every few batches (about 100 in a minute's load, 24 ms each).
        "-Xms48m",
        # Out of heap, the JVM exits, and with it its plugin process: the worker fails that
        # process's units only, as for any crash, rather than tasks living on half-broken.
        "-XX:+ExitOnOutOfMemoryError",
        # The memory the heap's bound does not count, bounded too, so that no plugin makes its
        # JVM grow without end: its classes' (metaspace), its direct buffers, and its threads
        # (the host ends itself past that many; each holds a stack). HEADRACE_JVM_OPTS, after
        # these, may raise them.
        f"-XX:MaxMetaspaceSize={MAX_METASPACE}",
        f"-XX:MaxDirectMemorySize={MAX_DIRECT_MEMORY}",
        f"-Dheadrace.max.threads={MAX_THREADS}",
        *(["-XX:TieredStopAtLevel=1"] if "--scan" in args else []),  # short-lived: no C2
        f"-Djava.io.tmpdir={temp}",
        # Its logging (in the host's jar), and one logger context for the host and every
        # plugin class loader, so that the cluster's log levels reach connectors' loggers too.
        "-Dlog4j2.configurationFile=headrace-jvm-log4j2.properties",
        "-Dlog4j2.contextSelector=org.apache.logging.log4j.core.selector.BasicContextSelector",
        *more,
        # No config provider is made from a config by Kafka's own classes (CVE-2024-31141):
        # a connector, converter or embedded client configured with ``config.providers`` would
        # otherwise read the JVM's files and environment. After the operator's options: theirs
        # cannot turn it back on.
        "-Dorg.apache.kafka.automatic.config.providers=none",
        "-jar",
        str(host_jar()),
        "--location",
        str(location),
        *args,
    ]


def _has_jars(folder: Path) -> bool:
    return any(p.suffix in (".jar", ".zip") for p in folder.iterdir() if p.is_file())


def locations(entry: Path) -> Iterator[Path]:
    """The Java plugin locations in one plugin path entry: its jars, its folders that hold jars,
    and the version folders (with jars and no Python manifest) of its other folders. An entry
    that is a jar is one location, as Connect takes one (its quickstart names
    ``libs/connect-file-<version>.jar``)."""
    if entry.is_file() and entry.suffix == ".jar":
        yield entry
        return
    if not entry.is_dir():
        return
    for child in sorted(entry.iterdir()):
        if child.is_file() and child.suffix == ".jar":
            yield child
        elif child.is_dir() and not (child / _MANIFEST).exists():
            if _has_jars(child):
                yield child
                continue
            for version in sorted(p for p in child.iterdir() if p.is_dir()):
                if not (version / _MANIFEST).exists() and _has_jars(version):
                    yield version


SCAN_FORMAT = "2"
"""Changes when what a scan writes does (2: its components too), so an older scan is redone."""


def fingerprint(location: Path) -> str:
    """What identifies a location's content: its path and each jar's name, size and time."""
    real = location.resolve()
    jars = [real] if real.is_file() else sorted(p for p in real.rglob("*") if p.is_file())
    digest = hashlib.sha256(f"{SCAN_FORMAT}\n{real}".encode())
    for jar in jars:
        stat = jar.stat()
        digest.update(f"\n{jar}\t{stat.st_size}\t{stat.st_mtime_ns}".encode())
    return digest.hexdigest()[:24]


Scanned = tuple[str, str, str]
"""(type, class, version) of a plugin a location holds."""

COMPONENT_TYPES = ("converter", "header_converter", "transformation", "predicate")
_COMPONENTS = "components.json"


class Scan(NamedTuple):
    """What a location holds: a manifest per connector, and its converters, header converters,
    transformations and predicates, which its Java connectors may name."""

    manifests: list[Path]
    components: list[Scanned]


def scan(location: Path, cache: Path) -> Scan:
    """What ``location`` holds, scanned by the JVM host unless its content was scanned before;
    PluginError with the JVM's reason when it cannot be."""
    folder = cache / fingerprint(location)
    if not folder.is_dir():
        _write_scan(location, folder, _run_scan(location, cache))
    listed = json.loads((folder / _COMPONENTS).read_text())
    return Scan(sorted(folder.glob(f"*/{_MANIFEST}")), [(k, n, v) for k, n, v in listed])


def _run_scan(location: Path, cache: Path) -> list[Scanned]:
    """(type, class, version) of each plugin the location holds, scanned by the JVM.

    Connect's scanner makes an instance of every plugin class it finds: third-party code, run
    here as it would be in a plugin process, confined to the location, the Java installation
    and a temporary folder of its own (removed after), in a fresh environment without the
    service's credentials (``isolation.confined``)."""
    cache.mkdir(parents=True, exist_ok=True)
    temp = Path(tempfile.mkdtemp(prefix=".scan-", dir=cache))
    try:
        scanning = confined.command(
            command(location, SCAN_HEAP, temp, "--scan"),
            run=[java_home()],
            read=[location, *readable()],
            write=[temp],
        )
        done = _run(scanning, SCAN_TIMEOUT_S, f"{location}: the JVM scan", scan_env(os.environ))
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    if done.returncode != 0:
        reason = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise PluginError(f"{location}: the JVM scan failed ({done.returncode}): {reason}")
    rows = [line.split("\t") for line in done.stdout.splitlines() if line.strip()]
    if any(len(row) != 4 for row in rows):
        raise PluginError(f"{location}: the JVM scan answered {done.stdout[:200]!r}")
    found = [
        (kind, class_name, _version(location, version, jar))
        for kind, class_name, version, jar in rows
        if kind in ("source", "sink", *COMPONENT_TYPES)
    ]
    if not found:
        raise PluginError(f"{location}: holds no Kafka Connect connector or component")
    return found


def scan_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment of a scan: what a plugin process takes of its owner's, and the sandbox's
    mode; none of the service's settings or credentials."""
    return {**sandbox.passed_env(environ), **_mode(environ)}


def _mode(environ: Mapping[str, str]) -> dict[str, str]:
    mode = environ.get(confined.MODE_ENV)
    return {} if mode is None else {confined.MODE_ENV: mode}


def _run(
    args: list[str],
    timeout_s: float,
    what: str,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """Runs a command to its end, its output kept; PluginError if it takes over ``timeout_s``."""
    try:
        return subprocess.run(
            args, capture_output=True, text=True, timeout=timeout_s, check=False, env=env, cwd=cwd
        )
    except subprocess.TimeoutExpired as exc:
        raise PluginError(f"{what} took over {timeout_s:.0f}s") from exc


def _version(location: Path, reported: str, jar: str) -> str:
    """A connector's version: what its ``version()`` says, except for a connector in the jar of
    the artifact a version folder was installed from (``<artifact>/<version>/<artifact>-<version>
    .jar``), which is that version. Kafka's own connectors (FileStream, MirrorMaker) report the
    runtime's Kafka version whatever their jar's: so two installed versions stay apart."""
    artifact, version = location.parent.name, location.name
    return version if jar == f"{artifact}-{version}.jar" else reported


def _write_scan(location: Path, folder: Path, found: Sequence[Scanned]) -> None:
    """Writes the scan's manifests (a connector's each) and its components in a folder of their
    own, renamed into place whole: services that scan a location at once each find a complete
    scan, whichever wrote it."""
    building = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    listed = [list(plugin) for plugin in found if plugin[0] in COMPONENT_TYPES]
    (building / _COMPONENTS).write_text(json.dumps(listed, indent=2) + "\n")
    for kind, class_name, version in found:
        if kind in COMPONENT_TYPES:
            continue
        where = building / f"{kind}-{class_name}"
        where.mkdir()
        manifest = {
            "class": class_name,
            "version": version,
            "type": kind,
            "runtime": "java",
            "location": str(location.resolve()),
        }
        (where / _MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    try:
        building.rename(folder)
    except OSError:  # another process's scan of the same content came first
        shutil.rmtree(building, ignore_errors=True)


def readable() -> list[Path]:
    """What a confined JVM host must read besides its plugin's location: the Java installation
    (with the folders its configuration links to, such as Debian's ``/etc/java-17-openjdk``) and
    the host's jars."""
    home = java_home()
    linked = {p.resolve().parent for p in (home / "conf").rglob("*") if p.is_symlink()}
    return sorted({home, *linked, host_jar().parent})


_PART = r"[A-Za-z0-9][A-Za-z0-9_.\-+]*"
_COORDINATE = re.compile(rf"^{_PART}:{_PART}:{_PART}$")
"""group:artifact:version, each starting with a letter or digit: never a path's ``..``."""
INSTALL_TIMEOUT_S = 900.0
_POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>headrace.install</groupId>
  <artifactId>plugin</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>{group}</groupId>
      <artifactId>{artifact}</artifactId>
      <version>{version}</version>
      <exclusions>{exclusions}
      </exclusions>
    </dependency>
  </dependencies>
</project>
"""


PROVIDED = (
    ("org.apache.kafka", "kafka-clients"),
    ("org.apache.kafka", "connect-api"),
    ("org.apache.kafka", "connect-runtime"),
    ("org.slf4j", "*"),
)
"""What a connector's dependencies may bring that the JVM host provides, and that Connect's
isolation loads from the host whatever a plugin location holds (Kafka's clients, Connect's API
and runtime, the logging facade): not installed, nor anything only they need."""


DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1"
"""The Maven plugin that resolves an install, pinned: the same code lays out every install."""


def install(coordinate: str, entry: Path, sha512: str | None = None) -> Path:
    """Resolves a connector's Maven coordinate (``group:artifact:version``) and its runtime
    dependencies with Maven, and lays them out as the version folder
    ``<entry>/<artifact>/<version>/``: a plugin location, as Connect's plugin.path takes one,
    without what the host provides (``PROVIDED``).

    A version is one release: ``LATEST``, ``RELEASE``, a SNAPSHOT or a range would install
    whatever the repository holds that day. Maven checks every file's checksum and fails on a
    mismatch; with ``sha512`` (hex), the artifact's own jar must have that digest too.
    The folder is written beside and renamed into place, so a failed install leaves nothing.
    PluginError naming the coordinate and Maven's reason when it cannot be."""
    target = version_folder(coordinate, entry)
    expected = _sha512(coordinate, sha512)
    if target.exists():
        raise PluginError(f"{coordinate} is already installed in {target}")
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        _resolve(coordinate, target, expected)
    finally:
        with contextlib.suppress(OSError):
            target.parent.rmdir()  # only when empty: the artifact's first version failed
    return target


def version_folder(coordinate: str, entry: Path) -> Path:
    """Where ``coordinate`` is installed in the plugin path entry: ``<entry>/<artifact>/
    <version>``, resolved (Maven takes a relative folder as its pom's, not the caller's);
    PluginError for a coordinate that is not one release."""
    if not _COORDINATE.match(coordinate):
        raise PluginError(f"{coordinate!r} is not a Maven coordinate such as group:artifact:1.0")
    _, artifact, version = coordinate.split(":")
    if version.upper() in ("LATEST", "RELEASE") or version.upper().endswith("-SNAPSHOT"):
        raise PluginError(
            f"{coordinate}: {version} is not one release: name the version to install, which "
            "stays what it is"
        )
    return entry.resolve() / artifact / version


def ensure(coordinate: str, entry: Path, sha512: str | None = None) -> tuple[Path, str]:
    """:func:`install`, unless the version folder is there already; the folder and the SHA-512
    of the artifact's jar in it, which must be ``sha512`` when given (PluginError saying both
    otherwise). Under a lock on the entry: services that share one plugin path (a volume every
    worker mounts) install it once, and none reads a half-made folder."""
    target = version_folder(coordinate, entry)
    expected = _sha512(coordinate, sha512)
    target.parent.parent.mkdir(parents=True, exist_ok=True)
    with _locked(target.parent.parent):
        if not target.exists():
            install(coordinate, entry, expected)
        found = artifact_digest(coordinate, target)
    if expected is not None and found != expected:
        raise PluginError(
            f"{coordinate}: {target} holds a jar with SHA-512 {found}, not the {expected} the "
            "cluster installed: remove the folder to have it installed again"
        )
    return target, found


def remove(coordinate: str, entry: Path) -> bool:
    """Removes the version folder of ``coordinate`` from the plugin path entry, under the
    entry's lock; whether there was one."""
    target = version_folder(coordinate, entry)
    if not target.parent.parent.is_dir():
        return False
    with _locked(target.parent.parent):
        if not target.exists():
            return False
        shutil.rmtree(target)
        with contextlib.suppress(OSError):
            target.parent.rmdir()  # its last version
    return True


def artifact_digest(coordinate: str, target: Path) -> str:
    """The SHA-512 (hex) of the artifact's own jar in its version folder ``target``."""
    _, artifact, version = coordinate.split(":")
    jar = target / f"{artifact}-{version}.jar"
    if not jar.is_file():
        raise PluginError(f"{coordinate}: {target} holds no {jar.name}")
    with jar.open("rb") as opened:
        return hashlib.file_digest(opened, "sha512").hexdigest()


@contextlib.contextmanager
def _locked(entry: Path) -> Iterator[None]:
    """An exclusive lock on the plugin path entry (its ``.install.lock``), between processes."""
    with (entry / ".install.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _resolve(coordinate: str, target: Path, expected: str | None) -> None:
    group, artifact, version = coordinate.split(":")
    mvn = shutil.which("mvn")
    if mvn is None:
        raise PluginError("installing a Java plugin needs Maven (mvn) on PATH")
    with tempfile.TemporaryDirectory(prefix=f".{artifact}-", dir=target.parent) as work:
        jars = Path(work) / "jars"
        if not _plugin_archive(mvn, coordinate, Path(work), jars):
            pom = Path(work) / "pom.xml"
            exclusions = "".join(
                f"\n        <exclusion><groupId>{g}</groupId><artifactId>{a}</artifactId>"
                "</exclusion>"
                for g, a in PROVIDED
            )
            pom.write_text(
                _POM.format(group=group, artifact=artifact, version=version, exclusions=exclusions)
            )
            done = _run(maven_command(mvn, pom, jars), INSTALL_TIMEOUT_S, f"{coordinate}: Maven")
            if done.returncode != 0 or not jars.is_dir():
                said = [line.strip() for line in (done.stdout + done.stderr).splitlines()]
                errors = [line for line in said if "ERROR" in line]
                reason = (errors or [line for line in said if line] or ["no output"])[0]
                raise PluginError(f"{coordinate}: Maven could not resolve it: {reason}")
        if expected is not None:
            _check_digest(coordinate, jars / f"{artifact}-{version}.jar", expected)
        jars.rename(target)


PLUGIN_ARCHIVE = "tar.gz:plugin"
"""The type and classifier of a connector's own Connect plugin archive, as Debezium publishes
each of its connectors (``<artifact>-<version>-plugin.tar.gz``)."""


def _plugin_archive(mvn: str, coordinate: str, work: Path, jars: Path) -> bool:
    """Lays out in ``jars`` the connector's own Connect plugin archive, when the repository has
    one: the jars its makers ship for Connect's plugin.path, which leave out what Connect's
    runtime brings in their own way (Debezium's, all of Jackson: its JDBC sink, laid out from
    its Maven dependencies, failed on Connect's own worker too, a Jackson module of the runtime
    "not a subtype" of the location's Jackson). Whether there was one."""
    fetched = work / "archive"
    command = [
        mvn,
        "-q",
        "-B",
        "-C",  # without -U: a release's archive, there or not, does not change; Maven keeps
        "-Dstyle.color=never",  # that it is not, and a second install asks no repository
        f"{DEPENDENCY_PLUGIN}:copy",
        f"-Dartifact={coordinate}:{PLUGIN_ARCHIVE}",
        f"-DoutputDirectory={fetched}",
    ]
    done = _run(command, INSTALL_TIMEOUT_S, f"{coordinate}: Maven", cwd=work)
    archives = sorted(fetched.glob("*.tar.gz")) if fetched.is_dir() else []
    if done.returncode != 0 or len(archives) != 1:
        return False  # none published: its Maven dependencies make the location
    unpacked = work / "unpacked"
    try:
        with tarfile.open(archives[0]) as archive:
            archive.extractall(unpacked, filter="data")  # nothing outside it, no device files
    except (tarfile.TarError, OSError) as exc:
        raise PluginError(f"{coordinate}: its plugin archive could not be unpacked: {exc}") from exc
    top = list(unpacked.iterdir())
    root = top[0] if len(top) == 1 and top[0].is_dir() else unpacked  # <artifact>/ in Debezium's
    root.rename(jars)
    return True


def maven_command(mvn: str, pom: Path, jars: Path) -> list[str]:
    """Maven's command line for an install: checksums strict (``-C``: a file whose checksum
    does not match fails the install, where Maven would only warn), the plugin pinned."""
    return [
        mvn,
        "-q",
        "-B",
        "-C",
        "-U",  # a version not found before is looked for again: a retry after an outage works
        "-Dstyle.color=never",  # its reasons, as they are quoted, without terminal escapes
        "-f",
        str(pom),
        f"{DEPENDENCY_PLUGIN}:copy-dependencies",
        "-DincludeScope=runtime",
        f"-DoutputDirectory={jars}",
    ]


def _sha512(coordinate: str, given: str | None) -> str | None:
    """The expected digest, in lower-case hex; PluginError for one that is not a SHA-512."""
    if given is None:
        return None
    digest = given.strip().lower()
    if not re.fullmatch(r"[0-9a-f]{128}", digest):
        raise PluginError(f"{coordinate}: --sha512: {given[:40]!r} is not a SHA-512 in hex")
    return digest


def _check_digest(coordinate: str, jar: Path, expected: str) -> None:
    if not jar.is_file():
        raise PluginError(f"{coordinate}: no {jar.name} was resolved to check --sha512 against")
    found = artifact_digest(coordinate, jar.parent)
    if found != expected:
        raise PluginError(
            f"{coordinate}: {jar.name} has SHA-512 {found}, not the {expected} expected: "
            "nothing was installed"
        )
