"""Which hosted plugin a call is for, in a process of several (a Java location's connectors):
by the class its config names, and for a stop, by who started the unit."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from headrace.core.model.plugins import PluginDescriptor
from headrace.core.model.structs import State, UnitStateChanged, WorkUnit
from headrace.core.settings import Settings
from headrace.isolation.plugins import location_connectors
from headrace.runtime.host.events import EventBus
from headrace.runtime.host.hosted import HostedPlugin, no_stored_offsets
from headrace.runtime.host.plugins import HostedPlugins
from headrace.sdk.errors import ConfigException
from tests.unit.runtime.host.test_units import Connector

SOURCE = PluginDescriptor("org.example.FileSourceConnector", "1.0", "source", "", "", Path("."))
SINK = dataclasses.replace(SOURCE, class_name="org.example.FileSinkConnector", type="sink")


def hosted(*connectors: PluginDescriptor) -> tuple[HostedPlugins, list[str]]:
    made: list[str] = []

    def make(descriptor: PluginDescriptor, bus: EventBus) -> HostedPlugin:
        made.append(descriptor.class_name)
        settings = Settings(bootstrap_servers="unused:1")
        return HostedPlugin(descriptor, Connector, settings, 1.0, no_stored_offsets, bus=bus)

    return HostedPlugins(connectors, make), made


async def test_each_connector_class_is_made_once_when_first_named_and_takes_its_stops() -> None:
    plugins, made = hosted(SOURCE, SINK)
    assert made == []
    sink = plugins.for_unit("out", {"connector.class": "FileSink", "count": "1"})
    assert made == [SINK.class_name] and sink.descriptor == SINK
    await sink.start_connector("out", {"connector.class": "FileSink", "count": "1"})
    source = plugins.for_unit("in", {"connector.class": SOURCE.class_name, "count": "1"})
    await source.start_connector("in", {"connector.class": SOURCE.class_name, "count": "1"})
    assert made == [SINK.class_name, SOURCE.class_name]
    assert plugins.of_connector("out") is sink and plugins.of_connector("in") is source
    assert plugins.of_connector("never") is None
    assert plugins.for_config({"connector.class": "FileSinkConnector"}) is sink
    await plugins.shutdown()


def test_a_definition_asked_of_no_config_goes_to_the_class_the_caller_resolved() -> None:
    """The config service asks for a plugin's definition with an empty config (to know its
    secret keys): found answered by no class once a location's connectors shared a process,
    and every value of a FileStream connector's config was hidden."""
    plugins, made = hosted(SOURCE, SINK)
    assert plugins.for_call(SINK.class_name, {}).descriptor == SINK
    assert plugins.for_call("", {"connector.class": "FileSource"}).descriptor == SOURCE
    assert made == [SINK.class_name, SOURCE.class_name]
    with pytest.raises(ConfigException):
        plugins.for_call("", {})


def test_a_class_the_process_does_not_run_is_refused_naming_it() -> None:
    plugins, _ = hosted(SOURCE, SINK)
    with pytest.raises(ConfigException, match=r"'org\.example\.Other' is not run by this"):
        plugins.for_config({"connector.class": "org.example.Other"})


async def test_every_plugin_reports_on_the_one_bus_the_worker_watches() -> None:
    plugins, _ = hosted(SOURCE, SINK)
    events = plugins.bus.subscribe()
    config = {"connector.class": SINK.class_name, "count": "1"}
    await plugins.for_unit("out", config).start_connector("out", config)
    assert await anext(events) == UnitStateChanged(WorkUnit.of("out"), State.RUNNING)
    await plugins.shutdown()
    assert await anext(events) == UnitStateChanged(WorkUnit.of("out"), State.STOPPED)
    with pytest.raises(StopAsyncIteration):  # closed once every plugin has stopped
        await anext(events)


def test_a_java_connector_s_process_runs_its_location_s_connectors_of_its_version(
    tmp_path: Path,
) -> None:
    location = tmp_path / "connect-file" / "3.9.1"
    location.mkdir(parents=True)
    scan = tmp_path / "scan"
    for kind, name, version in [
        ("source", "org.example.FileSourceConnector", "3.9.1"),
        ("sink", "org.example.FileSinkConnector", "3.9.1"),
        ("sink", "org.example.OldSinkConnector", "2.0"),
    ]:
        (scan / f"{kind}-{name}").mkdir(parents=True)
        manifest = {"class": name, "version": version, "type": kind, "runtime": "java"}
        (scan / f"{kind}-{name}" / "manifest.json").write_text(
            json.dumps({**manifest, "location": str(location)})
        )
    sink = PluginDescriptor(
        "org.example.FileSinkConnector",
        "3.9.1",
        "sink",
        "org.example",
        "FileSinkConnector",
        location,
        runtime="java",
        manifest_file=scan / "sink-org.example.FileSinkConnector" / "manifest.json",
    )
    found = location_connectors(sink)
    assert [d.class_name for d in found] == [
        "org.example.FileSinkConnector",
        "org.example.FileSourceConnector",
    ]
    python = dataclasses.replace(sink, runtime="python", manifest_file=None)
    assert location_connectors(python) == [python]
