"""Finding Java plugin locations on a plugin path, and naming their versions
(``headrace.isolation.jvm``), without a JVM: the scan's manifests are written by hand."""

from __future__ import annotations

import io
import json
import subprocess
import tarfile
from pathlib import Path

import pytest

from headrace.core.model.errors import PluginError
from headrace.core.model.plugins import PluginCatalog
from headrace.core.settings import BUILTIN_PLUGINS
from headrace.isolation import jvm
from headrace.isolation.plugins import read_manifest


def jar(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"PK\x05\x06" + bytes(18))  # an empty zip
    return path


def test_locations_are_uber_jars_folders_of_jars_and_version_folders(tmp_path: Path) -> None:
    uber = jar(tmp_path / "debezium-all.jar")
    connect_style = tmp_path / "my-connector"
    jar(connect_style / "lib" / "dep.jar")
    jar(connect_style / "my-connector.jar")
    jar(tmp_path / "connect-file" / "3.9.1" / "connect-file-3.9.1.jar")
    jar(tmp_path / "connect-file" / "4.3.0" / "connect-file-4.3.0.jar")
    python = tmp_path / "datagen" / "1.0.0"
    python.mkdir(parents=True)
    (python / "manifest.json").write_text("{}")
    (tmp_path / "notes.txt").write_text("not a plugin")

    assert list(jvm.locations(tmp_path)) == [
        tmp_path / "connect-file" / "3.9.1",
        tmp_path / "connect-file" / "4.3.0",
        uber,
        connect_style,
    ]
    assert list(jvm.locations(tmp_path / "missing")) == []


def test_an_installed_artifacts_own_connectors_take_its_version(tmp_path: Path) -> None:
    folder = tmp_path / "connect-file" / "3.9.1"
    # Kafka's connectors report the runtime's Kafka version, whatever their jar's.
    assert jvm._version(folder, "4.3.0", "connect-file-3.9.1.jar") == "3.9.1"
    # A connector from another jar in the folder, or a hand-copied folder, says its own.
    assert jvm._version(folder, "2.1.0", "other-2.1.0.jar") == "2.1.0"
    assert jvm._version(tmp_path / "my-connector", "1.4", "my-connector.jar") == "1.4"


def test_a_fingerprint_changes_with_the_jars_and_not_otherwise(tmp_path: Path) -> None:
    location = tmp_path / "plugin"
    jar(location / "a.jar")
    first = jvm.fingerprint(location)
    assert jvm.fingerprint(location) == first
    (location / "b.jar").write_bytes(b"more")
    assert jvm.fingerprint(location) != first


def test_a_scan_manifest_reads_as_a_java_plugin_at_its_location(tmp_path: Path) -> None:
    location = jar(tmp_path / "connector.jar")
    manifest = tmp_path / "scan" / "source-x" / "manifest.json"
    manifest.parent.mkdir(parents=True)
    raw = {"class": "com.example.XSourceConnector", "version": "1.0", "type": "source"}
    manifest.write_text(json.dumps({**raw, "runtime": "java", "location": str(location)}))

    plugin = read_manifest(manifest)
    assert (plugin.class_name, plugin.version, plugin.is_java) == (
        "com.example.XSourceConnector",
        "1.0",
        True,
    )
    assert (plugin.folder, plugin.manifest) == (location, manifest)
    assert plugin.aliases == ("XSourceConnector", "XSource")

    manifest.write_text(json.dumps({**raw, "runtime": "java", "location": str(tmp_path / "gone")}))
    with pytest.raises(PluginError, match="does not exist"):
        read_manifest(manifest)


@pytest.mark.parametrize(
    "coordinate",
    ["connect-file", "a:b", "a:b:c:d", "a:b:1.0; rm -rf /", "../x:y:1", "g:..:1", "g:a:.."],
)
def test_install_refuses_what_is_not_a_maven_coordinate(tmp_path: Path, coordinate: str) -> None:
    with pytest.raises(PluginError, match="not a Maven coordinate"):
        jvm.install(coordinate, tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_an_alias_two_plugins_share_is_refused_and_their_full_names_resolve(
    tmp_path: Path,
) -> None:
    location = jar(tmp_path / "connect-file.jar")
    cache = tmp_path / "scan"
    for i, (cls, version) in enumerate(
        [
            ("org.apache.kafka.connect.file.FileStreamSourceConnector", "4.3.0"),
            ("headrace_file_source.FileStreamSourceConnector", "1.0.0"),
        ]
    ):
        manifest = cache / str(i) / "manifest.json"
        manifest.parent.mkdir(parents=True)
        raw = {"class": cls, "version": version, "type": "source"}
        manifest.write_text(json.dumps({**raw, "runtime": "java", "location": str(location)}))
    catalog = PluginCatalog(tuple(read_manifest(m) for m in sorted(cache.glob("*/manifest.json"))))

    with pytest.raises(PluginError, match="'FileStreamSource' is ambiguous: it names"):
        catalog.resolve("FileStreamSource")
    java = catalog.resolve("org.apache.kafka.connect.file.FileStreamSourceConnector")
    assert (java.version, java.is_java) == ("4.3.0", True)


def test_an_alias_a_builtin_shares_with_an_installed_plugin_names_the_installed_one(
    tmp_path: Path,
) -> None:
    """Kafka's quickstart puts connect-file's jar on plugin.path and says FileStreamSource:
    it means Kafka's connector, not the built-in of the same name."""
    location = jar(tmp_path / "connect-file.jar")
    manifest = tmp_path / "scan" / "manifest.json"
    manifest.parent.mkdir()
    java = "org.apache.kafka.connect.file.FileStreamSourceConnector"
    manifest.write_text(
        json.dumps(
            {
                "class": java,
                "version": "4.3.0",
                "type": "source",
                "runtime": "java",
                "location": str(location),
            }
        )
    )
    builtin = read_manifest(BUILTIN_PLUGINS / "file-source" / "1.0.0" / "manifest.json")
    catalog = PluginCatalog((builtin, read_manifest(manifest)))

    assert catalog.resolve("FileStreamSource").class_name == java
    assert catalog.resolve("FileStreamSourceConnector").class_name == java
    assert catalog.resolve(builtin.class_name) == builtin  # its full name still names it
    # Never silently: what each alias a built-in had names now is said (logged as a service
    # reads the plugin path, printed by `plugins install`).
    assert catalog.taken_aliases() == [
        ("FileStreamSource", java, builtin.class_name),
        ("FileStreamSourceConnector", java, builtin.class_name),
    ]
    assert PluginCatalog((builtin,)).taken_aliases() == []


PG = "io.debezium.connector.postgresql.PostgresConnector"


def test_a_jvms_heap_is_its_versions_else_its_connectors_else_everyones() -> None:
    setting = f"384m, {PG}=512m, {PG}@3.6.1.Final=1g"
    assert jvm.heap(PG, "3.6.1.Final", setting) == "1g"
    assert jvm.heap(PG, "3.5.0.Final", setting) == "512m"
    assert jvm.heap("org.example.Other", "1.0", setting) == "384m"
    assert jvm.heap("org.example.Other", "1.0", None) == jvm.DEFAULT_HEAP
    assert jvm.heap(PG, "3.6.1.Final", f"{PG}=2G") == "2G"


def test_a_jvm_of_several_connectors_takes_the_largest_heap_any_of_them_is_given() -> None:
    source, sink = "org.example.Source", "org.example.Sink"
    setting = f"384m, {sink}=1g, {source}=2048k"
    assert jvm.location_heap([(source, "1.0"), (sink, "1.0")], setting) == "1g"
    assert jvm.location_heap([(source, "1.0")], setting) == "2048k"
    assert jvm.location_heap([(source, "1.0"), (sink, "1.0")], None) == jvm.DEFAULT_HEAP


@pytest.mark.parametrize("setting", ["lots", f"{PG}=", "256m,=", f"{PG}=512 m", "a=b=1g", "0m"])
def test_a_heap_setting_that_is_not_a_size_is_refused_naming_the_variable(setting: str) -> None:
    with pytest.raises(PluginError, match="HEADRACE_JVM_HEAP"):
        jvm.heap(PG, "1", setting)


def test_more_jvm_options_are_split_as_words_and_the_heap_is_not_among_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HEADRACE_JVM_HOST", str(jar(tmp_path / "host.jar")))
    words = jvm.options("-XX:+UseStringDeduplication -Dname='a b'")
    assert words == ["-XX:+UseStringDeduplication", "-Dname=a b"]
    assert jvm.options(None) == []
    with pytest.raises(PluginError, match="HEADRACE_JVM_HEAP"):
        jvm.options("-Xmx4g")
    with pytest.raises(PluginError, match="not a JVM option"):
        jvm.options("-Dx=1 rm")
    command = jvm.command(Path("/loc"), "300m", tmp_path, more=words)
    assert command.index("-Dname=a b") < command.index("-jar")
    assert "-Xmx300m" in command


@pytest.mark.parametrize("version", ["LATEST", "release", "1.0-SNAPSHOT", "2.1.0-snapshot"])
def test_install_refuses_a_version_that_moves(tmp_path: Path, version: str) -> None:
    """Found by the second perimeter review: LATEST, RELEASE and SNAPSHOT versions were taken,
    so the same command installed whatever the repository held that day."""
    with pytest.raises(PluginError, match="is not one release"):
        jvm.install(f"org.example:c:{version}", tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_install_refuses_a_digest_that_is_no_sha512_before_resolving(tmp_path: Path) -> None:
    for digest in ("abc", "z" * 128, "a" * 127):
        with pytest.raises(PluginError, match="is not a SHA-512 in hex"):
            jvm.install("org.example:c:1.0", tmp_path, sha512=digest)
    assert list(tmp_path.iterdir()) == []


def test_maven_checks_every_checksum_with_a_pinned_plugin(tmp_path: Path) -> None:
    command = jvm.maven_command("mvn", tmp_path / "pom.xml", tmp_path / "jars")
    assert "-C" in command  # a checksum that does not match fails the install
    assert f"{jvm.DEPENDENCY_PLUGIN}:copy-dependencies" in command
    assert jvm.DEPENDENCY_PLUGIN.count(":") == 2  # group:artifact:version, a release


def test_a_plugin_jvm_bounds_what_its_heap_does_not_count_and_makes_no_config_provider(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HEADRACE_JVM_HOST", str(jar(tmp_path / "host.jar")))
    more = ["-XX:MaxMetaspaceSize=512m", "-Dorg.apache.kafka.automatic.config.providers=all"]
    command = jvm.command(Path("/loc"), "300m", tmp_path, more=more)
    bounds = ["-XX:MaxMetaspaceSize=256m", "-XX:MaxDirectMemorySize=256m"]
    assert all(b in command for b in [*bounds, f"-Dheadrace.max.threads={jvm.MAX_THREADS}"])
    # The operator's options come after the bounds (the last one wins: theirs may raise them),
    # and before the refusal of config providers (which theirs cannot turn back on).
    assert command.index(bounds[0]) < command.index(more[0]) < command.index(more[1])
    assert command.index(more[1]) < command.index(
        "-Dorg.apache.kafka.automatic.config.providers=none"
    )


class Repository:
    """Stands in for Maven: serves the plugin archive it holds, or none, as ``copy`` would."""

    def __init__(self, archive: dict[str, bytes] | None) -> None:
        self.archive = archive  # member name -> content; None: no archive published
        self.asked: list[list[str]] = []

    def __call__(
        self, args: list[str], *_: object, **__: object
    ) -> subprocess.CompletedProcess[str]:
        self.asked.append(args)
        if self.archive is None or not any(a.endswith(":copy") for a in args):
            return subprocess.CompletedProcess(args, 1, "", "[ERROR] not found")
        out = Path(next(a for a in args if a.startswith("-DoutputDirectory=")).split("=", 1)[1])
        out.mkdir(parents=True)
        with tarfile.open(out / "c-1.0-plugin.tar.gz", "w:gz") as tar:
            for name, content in self.archive.items():
                member = tarfile.TarInfo(name)
                member.size = len(content)
                tar.addfile(member, io.BytesIO(content))
        return subprocess.CompletedProcess(args, 0, "", "")


def test_a_published_plugin_archive_is_laid_out_as_its_makers_ship_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jvm.shutil, "which", lambda _: "mvn")
    maven = Repository({"c/c-1.0.jar": b"jar", "c/lib-2.0.jar": b"lib", "c/README.md": b"hi"})
    monkeypatch.setattr(jvm, "_run", maven)
    folder = jvm.install("org.example:c:1.0", tmp_path)
    assert folder == tmp_path / "c" / "1.0"
    assert sorted(p.name for p in folder.iterdir()) == ["README.md", "c-1.0.jar", "lib-2.0.jar"]
    assert len(maven.asked) == 1  # no Maven resolve of its dependencies


def test_a_plugin_archive_that_reaches_outside_its_folder_installs_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jvm.shutil, "which", lambda _: "mvn")
    entry = tmp_path / "plugins"
    entry.mkdir()
    monkeypatch.setattr(jvm, "_run", Repository({"c/c-1.0.jar": b"jar", "../../evil.jar": b"x"}))
    with pytest.raises(PluginError, match="its plugin archive could not be unpacked"):
        jvm.install("org.example:c:1.0", entry)
    assert list(entry.iterdir()) == [] and not (tmp_path / "evil.jar").exists()
