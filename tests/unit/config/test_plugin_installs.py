"""Installs of Java plugins for the cluster, on the in-memory configs topic: recorded once with
the digest resolved, refused when the location holds nothing to run, and an uninstall refused
while a connector runs a version only that install holds. The plugin path is stood in for: the
install a real one makes is the e2e test's (``tests/e2e/test_live_install.py``)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import cast

import pytest

from headrace.config.grpc_api import ConfigCalls
from headrace.config.installs.installs import PluginInstalls
from headrace.config.validation import ConfigRejected, Problem
from headrace.core.model import configlog
from headrace.core.model.errors import PluginError
from headrace.core.model.plugins import BrokenPlugin, PluginCatalog, PluginDescriptor
from headrace.core.storage.topiclog import MemoryTopic
from headrace.isolation.live import LivePlugins
from headrace.v1 import config_pb2
from tests.unit.config.memory import GEN, memory_commands

COORDINATE = "org.apache.kafka:connect-file:3.9.1"
DIGEST = "ab" * 64


class PluginPath:
    """A plugin path whose installs lay out what ``holds`` says, or fail with ``refusal``."""

    def __init__(self, entry: Path, holds: tuple[str, ...] = ("FileStreamSourceConnector",)):
        self.entry = entry
        self.catalog = PluginCatalog((GEN,))
        self.holds = holds
        self.refusal: str | None = None
        self.broken: str | None = None
        self.removed: list[str] = []

    async def install(self, coordinate: str, sha512: str | None) -> tuple[Path, str]:
        if self.refusal is not None:
            raise PluginError(self.refusal)
        folder = self.entry / "connect-file" / "3.9.1"
        found = tuple(
            PluginDescriptor(
                f"org.apache.kafka.connect.file.{name}",
                "3.9.1",
                "source",
                "",
                name,
                folder,
                runtime="java",
            )
            for name in self.holds
        )
        broken = () if self.broken is None else (BrokenPlugin(folder, self.broken),)
        self.catalog = PluginCatalog((GEN, *found), broken)
        return folder, sha512 or DIGEST

    async def remove(self, coordinate: str) -> None:
        self.removed.append(coordinate)
        self.catalog = dataclasses.replace(self.catalog, plugins=(GEN,), broken=())


@pytest.fixture
def configs() -> MemoryTopic:
    return MemoryTopic("configs")


@pytest.fixture
def path(tmp_path: Path) -> PluginPath:
    return PluginPath(tmp_path)


class Coordinator:
    """The deletion stops the coordinator owes, as it would answer; None: none answers."""

    def __init__(self) -> None:
        self.owed: list[tuple[str, str, str]] | None = []

    async def __call__(self) -> list[tuple[str, str, str]]:
        if self.owed is None:
            raise ConfigRejected(Problem.UNAVAILABLE, "no coordinator answered")
        return self.owed


@pytest.fixture
def coordinator() -> Coordinator:
    return Coordinator()


@pytest.fixture
async def calls(configs: MemoryTopic, path: PluginPath, coordinator: Coordinator) -> ConfigCalls:
    commands = await memory_commands(configs)
    installs = PluginInstalls(commands, cast(LivePlugins, path), coordinator)
    commands.catalog = cast(LivePlugins, path).catalog
    return ConfigCalls(commands, installs)


def install(sha512: str = "") -> config_pb2.InstallPluginRequest:
    return config_pb2.InstallPluginRequest(coordinate=COORDINATE, sha512=sha512)


async def test_an_install_is_recorded_once_with_the_digest_its_jar_has(
    calls: ConfigCalls, configs: MemoryTopic
) -> None:
    done = await calls.InstallPlugin(install())
    assert done.sha512 == DIGEST
    assert [p.class_name for p in done.plugins] == [
        "org.apache.kafka.connect.file.FileStreamSourceConnector"
    ]
    assert [r.key for r in configs.records][-1] == f"{configlog.PLUGIN_PREFIX}{COORDINATE}"
    with pytest.raises(ConfigRejected) as again:
        await calls.InstallPlugin(install())
    assert again.value.problem is Problem.CONFLICT
    listed = await calls.ListInstalledPlugins(config_pb2.ListInstalledPluginsRequest())
    assert [(p.coordinate, p.sha512) for p in listed.plugins] == [(COORDINATE, DIGEST)]


@pytest.mark.parametrize(
    ("coordinate", "said"),
    [
        ("connect-file", "is not a Maven coordinate"),
        ("org.apache.kafka:connect-file:LATEST", "is not one release"),
        ("org.apache.kafka:connect-file:../../etc", "is not a Maven coordinate"),
    ],
)
async def test_what_is_not_one_release_s_coordinate_is_refused_and_nothing_recorded(
    calls: ConfigCalls, configs: MemoryTopic, coordinate: str, said: str
) -> None:
    before = len(configs.records)
    with pytest.raises(ConfigRejected, match=said) as refused:
        await calls.InstallPlugin(config_pb2.InstallPluginRequest(coordinate=coordinate))
    assert refused.value.problem is Problem.INVALID
    assert len(configs.records) == before


async def test_an_install_maven_refuses_or_that_holds_nothing_is_not_recorded(
    calls: ConfigCalls, configs: MemoryTopic, path: PluginPath
) -> None:
    before = len(configs.records)
    path.refusal = f"{COORDINATE}: Maven could not resolve it: not found"
    with pytest.raises(ConfigRejected, match="Maven could not resolve it: not found"):
        await calls.InstallPlugin(install())
    path.refusal, path.holds = None, ()
    with pytest.raises(ConfigRejected, match="no connector or component was found"):
        await calls.InstallPlugin(install())
    assert path.removed == [COORDINATE]  # what it laid out is taken away again
    path.holds, path.broken = ("X",), "the JVM scan failed (1): NoClassDefFoundError"
    with pytest.raises(ConfigRejected, match="NoClassDefFoundError"):
        await calls.InstallPlugin(install())
    assert len(configs.records) == before


async def test_an_uninstall_is_refused_while_a_connector_runs_it_and_not_after(
    calls: ConfigCalls, configs: MemoryTopic, path: PluginPath
) -> None:
    await calls.InstallPlugin(install())
    calls._commands.catalog = path.catalog  # what the live plugin path hands on
    config = {"connector.class": "FileStreamSource", "file": "/tmp/x", "topic": "t"}
    await calls.CreateConnector(config_pb2.CreateConnectorRequest(name="lines", config=config))
    with pytest.raises(ConfigRejected, match="connectors lines run a version only it") as used:
        await calls.UninstallPlugin(config_pb2.UninstallPluginRequest(coordinate=COORDINATE))
    assert used.value.problem is Problem.CONFLICT
    await calls.DeleteConnector(config_pb2.ConnectorRequest(name="lines"))
    await calls.UninstallPlugin(config_pb2.UninstallPluginRequest(coordinate=COORDINATE))
    assert configs.records[-1].key == f"{configlog.PLUGIN_PREFIX}{COORDINATE}"
    assert configs.records[-1].value is None
    assert path.removed == [COORDINATE]
    with pytest.raises(ConfigRejected, match="was not installed with plugins install") as gone:
        await calls.UninstallPlugin(config_pb2.UninstallPluginRequest(coordinate=COORDINATE))
    assert gone.value.problem is Problem.NOT_FOUND


async def test_an_uninstall_is_refused_while_a_deleted_connector_of_it_is_owed_its_deletion(
    calls: ConfigCalls, configs: MemoryTopic, path: PluginPath, coordinator: Coordinator
) -> None:
    """Its deletion stop runs in its plugin: removed, the connector would never be told."""
    await calls.InstallPlugin(install())
    calls._commands.catalog = path.catalog
    before = len(configs.records)
    uninstall = config_pb2.UninstallPluginRequest(coordinate=COORDINATE)
    coordinator.owed = [("lines", "FileStreamSource", ""), ("other", "Gen", "")]
    with pytest.raises(ConfigRejected, match="connectors lines were deleted and have not") as owed:
        await calls.UninstallPlugin(uninstall)
    assert owed.value.problem is Problem.CONFLICT
    coordinator.owed = None
    with pytest.raises(ConfigRejected, match="no coordinator answered") as unknown:
        await calls.UninstallPlugin(uninstall)
    assert unknown.value.problem is Problem.UNAVAILABLE
    assert len(configs.records) == before and path.removed == []
    coordinator.owed = [("other", "Gen", "")]
    await calls.UninstallPlugin(uninstall)
    assert path.removed == [COORDINATE]
