"""Plugin discovery: what is installed on the plugin path, read from manifests, no code imported.

Layout: ``<plugin path entry>/<plugin>/<version folder>/``, one folder per version, holding a
``manifest.json`` and the plugin's Python module(s)::

    datagen/1.0.0/manifest.json         {"class": "headrace_datagen.DatagenSourceConnector",
                                         "version": "1.0.0", "type": "source"}
    datagen/1.0.0/headrace_datagen.py   class DatagenSourceConnector(SourceConnector): ...

``type`` is ``source`` or ``sink`` for a connector, or the kind of a component a connector config
names (KIP-891): ``converter``, ``header_converter``, ``transformation`` or ``predicate``.
``class`` is where the class really is: the module before the last dot (a file or a package in
the version folder), the class after it. ``requirements`` (optional) lists the Python
distributions the version needs, as pip reads them (``"requests>=2,<3"``); the plugin process
imports it with an environment of its own that holds them (``headrace.isolation.pluginenv``).
The module is imported with the version folder first on ``sys.path``, inside the plugin
process that hosts that one version, so two versions of one plugin never meet in one
interpreter. A plugin is named by its full class, its
simple class name, or for a connector that name without the ``Connector`` suffix (the aliases
Kafka Connect accepts).

A version is asked for as Connect 4.1 asks (``connector.plugin.version`` and the
``.plugin.version`` key of each component): ``latest`` or nothing for the latest installed, an
exact version, or a Maven range such as ``[1.0,2.0)`` (``VersionSpec``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from headrace.core.model.errors import PluginError
from headrace.core.model.plugins import (
    DELIVERIES,
    PLUGIN_TYPES,
    BrokenPlugin,
    JavaComponent,
    PluginCatalog,
    PluginDescriptor,
)
from headrace.core.observability import log
from headrace.isolation import jvm

JVM_PLUGINS = "jvm-plugins"
"""The folder under ``var_dir`` where Java plugin locations' scans are kept."""


def read_manifest(path: Path) -> PluginDescriptor:
    """Parses one manifest; raises PluginError naming the file and the problem."""
    try:
        raw = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise PluginError(f"{path}: unreadable manifest: {exc}") from exc
    missing = [k for k in ("class", "version", "type") if not raw.get(k)]
    if missing:
        raise PluginError(f"{path}: manifest lacks {', '.join(missing)}")
    if raw["type"] not in PLUGIN_TYPES:
        raise PluginError(f"{path}: type must be one of {PLUGIN_TYPES}, not {raw['type']!r}")
    if raw.get("runtime", "python") == "java":
        return _java_manifest(path, raw)
    module, _, attribute = str(raw["class"]).rpartition(".")
    if not module or not attribute:
        raise PluginError(f"{path}: class must be module.Class, not {raw['class']!r}")
    if not _module_exists(path.parent, module):
        raise PluginError(
            f"{path}: class {raw['class']} names module {module}, which is not in {path.parent}"
        )
    requirements = raw.get("requirements", [])
    if not isinstance(requirements, list) or not all(isinstance(r, str) for r in requirements):
        raise PluginError(f"{path}: requirements must be a list of strings, not {requirements!r}")
    delivery = raw.get("delivery", "")
    if delivery and (raw["type"] != "sink" or delivery not in DELIVERIES):
        raise PluginError(
            f"{path}: delivery is for sinks, one of {', '.join(DELIVERIES)}, not {delivery!r}"
        )
    executor = raw.get("executor", False)
    if not isinstance(executor, bool):
        raise PluginError(f"{path}: executor must be true or false, not {executor!r}")
    return PluginDescriptor(
        class_name=raw["class"],
        version=str(raw["version"]),
        type=raw["type"],
        module=module,
        attribute=attribute,
        folder=path.parent,
        requirements=tuple(requirements),
        delivery=delivery,
        uses_executor=executor,
    )


def _java_manifest(path: Path, raw: dict[str, object]) -> PluginDescriptor:
    """A Java plugin's manifest, as a scan of its location wrote it."""
    location = Path(str(raw.get("location") or ""))
    if not raw.get("location") or not location.exists():
        raise PluginError(f"{path}: location {str(location)!r} does not exist")
    module, _, attribute = str(raw["class"]).rpartition(".")
    return PluginDescriptor(
        class_name=str(raw["class"]),
        version=str(raw["version"]),
        type=str(raw["type"]),
        module=module,
        attribute=attribute,
        folder=location,
        runtime="java",
        manifest_file=path,
    )


def location_connectors(plugin: PluginDescriptor) -> list[PluginDescriptor]:
    """A Java connector version and every other connector of the same version that its
    location's scan found beside it, the one given first: what one JVM of that location runs.
    Just the one given for a Python plugin, or a scan that cannot be read (a rescan replaced it)."""
    if not plugin.is_java or plugin.manifest_file is None:
        return [plugin]
    found = [plugin]
    for manifest in sorted(plugin.manifest_file.parent.parent.glob("*/manifest.json")):
        try:
            other = read_manifest(manifest)
        except PluginError:
            continue
        if other.version == plugin.version and other.class_name != plugin.class_name:
            found.append(other)
    return found


def _module_exists(folder: Path, module: str) -> bool:
    """Whether ``module`` (dotted) is a file or a package under ``folder``, without importing it."""
    base = folder.joinpath(*module.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def discover(plugin_path: Iterable[Path], java_cache: Path | None = None) -> PluginCatalog:
    """Every plugin version under the plugin path entries, in a stable order. A manifest that
    cannot be read, or a second one for a class and version already found, makes a broken
    plugin with the reason, not an error: one bad folder must not keep a service from starting.
    With ``java_cache``, Java plugin locations too, scanned into it (``isolation.jvm``)."""
    found: dict[tuple[str, str], PluginDescriptor] = {}
    broken: list[BrokenPlugin] = []
    java_components: set[JavaComponent] = set()
    for entry in plugin_path:
        manifests = sorted(Path(entry).glob("*/*/manifest.json"))
        if java_cache is not None:
            manifests += _java_manifests(Path(entry), java_cache, broken, java_components)
        for manifest in manifests:
            try:
                plugin = read_manifest(manifest)
            except PluginError as exc:
                broken.append(BrokenPlugin(manifest.parent, str(exc)))
                continue
            first = found.setdefault((plugin.class_name, plugin.version), plugin)
            if first is not plugin:
                reason = f"{plugin.class_name} {plugin.version} is also in {first.folder}"
                broken.append(BrokenPlugin(plugin.folder, reason))
    return PluginCatalog(
        tuple(sorted(found.values())), tuple(sorted(broken)), tuple(sorted(java_components))
    )


def _java_manifests(
    entry: Path, cache: Path, broken: list[BrokenPlugin], components: set[JavaComponent]
) -> list[Path]:
    manifests: list[Path] = []
    for location in jvm.locations(entry):
        try:
            scanned = jvm.scan(location, cache)
        except PluginError as exc:
            broken.append(BrokenPlugin(location, str(exc)))
            continue
        manifests += scanned.manifests
        components.update(
            JavaComponent(name, kind, version, location.resolve())
            for kind, name, version in scanned.components
        )
    return manifests


def installed(plugin_path: Iterable[Path], java_cache: Path | None = None) -> PluginCatalog:
    """:func:`discover`, logging each broken plugin once, as a service starts."""
    catalog = discover(plugin_path, java_cache)
    for plugin in catalog.broken:
        log.get().warning("plugin_broken", folder=str(plugin.folder), reason=plugin.reason)
    for alias, taken_by, built_in in catalog.taken_aliases():
        log.get().warning("plugin_alias_taken", alias=alias, names=taken_by, built_in=built_in)
    return catalog
