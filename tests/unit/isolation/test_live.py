"""The plugin path kept current: a plugin copied in by hand is found, one removed is gone, and
an installed version folder is taken as it is only with the digest the cluster recorded; on
temporary folders, with Python plugins (no JVM) and version folders laid out by hand (no Maven)."""

from __future__ import annotations

import asyncio
import hashlib
import shutil
from pathlib import Path

import pytest

from headrace.core.model.errors import PluginError
from headrace.core.model.plugins import PluginCatalog
from headrace.core.settings import BUILTIN_PLUGINS
from headrace.isolation import jvm
from headrace.isolation.live import LivePlugins, install_entry, listing

RECORDING = Path(__file__).parents[2] / "plugins" / "recording" / "1.0.0"
COORDINATE = "org.example:connect-thing:1.2.0"


def laid_out(entry: Path, content: bytes = b"jar bytes") -> tuple[Path, str]:
    """A version folder as an install lays it out, and its artifact jar's SHA-512."""
    folder = entry / "connect-thing" / "1.2.0"
    folder.mkdir(parents=True)
    (folder / "connect-thing-1.2.0.jar").write_bytes(content)
    (folder / "dependency-1.0.jar").write_bytes(b"other")
    return folder, hashlib.sha512(content).hexdigest()


def test_what_the_plugin_path_lists_changes_with_a_copied_plugin_and_not_with_a_lock(
    tmp_path: Path,
) -> None:
    (tmp_path / "thing").mkdir()
    before = listing([BUILTIN_PLUGINS, tmp_path])
    (tmp_path / ".install.lock").touch()
    (tmp_path / "thing" / ".thing-building").mkdir()
    (tmp_path / "thing" / ".thing-building" / "pom.xml").write_text("<project/>")
    assert listing([BUILTIN_PLUGINS, tmp_path]) == before
    shutil.copytree(RECORDING, tmp_path / "recording" / "1.0.0")
    assert listing([BUILTIN_PLUGINS, tmp_path]) != before


def test_installs_go_to_the_first_entry_that_is_not_the_built_in_plugins(tmp_path: Path) -> None:
    assert install_entry([BUILTIN_PLUGINS, tmp_path]) == tmp_path
    assert install_entry([BUILTIN_PLUGINS]) is None


async def test_a_plugin_copied_in_by_hand_is_found_and_one_removed_is_gone(
    tmp_path: Path,
) -> None:
    told: asyncio.Queue[PluginCatalog] = asyncio.Queue()
    live = LivePlugins([tmp_path], tmp_path / "cache")
    live.listen(told.put_nowait)
    assert not live.catalog.plugins
    watching = asyncio.create_task(live.watch(every_s=0.05))
    try:
        shutil.copytree(RECORDING, tmp_path / "recording" / "1.0.0")
        found = await asyncio.wait_for(told.get(), 10)
        assert [p.class_name for p in found.plugins] == ["recording_sink.RecordingSinkConnector"]
        assert live.catalog is found
        shutil.rmtree(tmp_path / "recording")
        assert not (await asyncio.wait_for(told.get(), 10)).plugins
    finally:
        watching.cancel()


def test_a_version_folder_there_already_is_taken_with_the_recorded_digest_only(
    tmp_path: Path,
) -> None:
    folder, digest = laid_out(tmp_path)
    assert jvm.ensure(COORDINATE, tmp_path, digest) == (folder, digest)
    assert jvm.ensure(COORDINATE, tmp_path) == (folder, digest)
    other = hashlib.sha512(b"something else").hexdigest()
    with pytest.raises(PluginError, match=f"SHA-512 {digest}, not the {other}"):
        jvm.ensure(COORDINATE, tmp_path, other)


def test_removing_an_install_takes_its_folder_and_an_emptied_artifact_folder(
    tmp_path: Path,
) -> None:
    folder, _ = laid_out(tmp_path)
    assert jvm.remove(COORDINATE, tmp_path)
    assert not folder.exists() and not folder.parent.exists()
    assert not jvm.remove(COORDINATE, tmp_path)


async def test_a_plugin_the_cluster_drops_is_removed_here_and_one_it_never_had_is_not(
    tmp_path: Path,
) -> None:
    folder, digest = laid_out(tmp_path)
    kept = tmp_path / "by-hand" / "2.0"
    kept.mkdir(parents=True)
    live = LivePlugins([tmp_path], tmp_path / ".cache", catalog=PluginCatalog(()))
    await live.want({COORDINATE: digest})  # there already: taken as it is
    assert folder.exists() and not live.failed
    await live.want({})
    assert not folder.exists()
    assert kept.exists()


async def test_a_plugin_whose_jar_differs_from_the_clusters_is_not_taken_and_says_why(
    tmp_path: Path,
) -> None:
    laid_out(tmp_path, b"tampered")
    live = LivePlugins([tmp_path], tmp_path / ".cache", catalog=PluginCatalog(()))
    await live.want({COORDINATE: hashlib.sha512(b"published").hexdigest()})
    assert "holds a jar with SHA-512" in live.failed[COORDINATE]
