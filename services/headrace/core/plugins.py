"""Plugin discovery: what is installed on the plugin path, read from manifests, no code imported.

Layout: ``<plugin path entry>/<plugin>/<version folder>/``, one folder per version, holding a
``manifest.json`` and the plugin's Python module(s)::

    datagen/1.0.0/manifest.json         {"class": "headrace_datagen.DatagenSourceConnector",
                                         "version": "1.0.0", "type": "source"}
    datagen/1.0.0/headrace_datagen.py   class DatagenSourceConnector(SourceConnector): ...

``class`` is where the connector class really is: the module before the last dot (a file or a
package in the version folder), the class after it. The module is imported with the version
folder first on ``sys.path``, inside the plugin process that hosts that one version, so two
versions of one plugin never meet in one interpreter. A connector is named by its full class, its
simple class name, or that name without the ``Connector`` suffix (the aliases Kafka Connect
accepts).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from headrace.core import log
from headrace.core.errors import PluginError

PLUGIN_TYPES = ("source", "sink")


@dataclass(frozen=True, order=True)
class PluginDescriptor:
    """One installed version of one plugin."""

    class_name: str
    version: str
    type: str
    module: str
    attribute: str
    folder: Path

    @property
    def aliases(self) -> tuple[str, ...]:
        simple = self.class_name.rsplit(".", 1)[-1]
        short = simple.removesuffix("Connector")
        return tuple(dict.fromkeys(a for a in (simple, short) if a and a != self.class_name))

    @property
    def manifest(self) -> Path:
        return self.folder / "manifest.json"


def version_key(version: str) -> tuple[tuple[int, str], ...]:
    """Orders versions like 1.10.0 after 1.9.0; non-numeric parts compare as text."""
    parts = version.replace("-", ".").split(".")
    return tuple((int(p), "") if p.isdigit() else (-1, p) for p in parts)


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
    module, _, attribute = str(raw["class"]).rpartition(".")
    if not module or not attribute:
        raise PluginError(f"{path}: class must be module.Class, not {raw['class']!r}")
    if not _module_exists(path.parent, module):
        raise PluginError(
            f"{path}: class {raw['class']} names module {module}, which is not in {path.parent}"
        )
    return PluginDescriptor(
        class_name=raw["class"],
        version=str(raw["version"]),
        type=raw["type"],
        module=module,
        attribute=attribute,
        folder=path.parent,
    )


def _module_exists(folder: Path, module: str) -> bool:
    """Whether ``module`` (dotted) is a file or a package under ``folder``, without importing it."""
    base = folder.joinpath(*module.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


@dataclass(frozen=True, order=True)
class BrokenPlugin:
    """A plugin version that cannot be used, and why: listed, refused, never run."""

    folder: Path
    reason: str


def discover(plugin_path: Iterable[Path]) -> PluginCatalog:
    """Every plugin version under the plugin path entries, in a stable order. A manifest that
    cannot be read, or a second one for a class and version already found, makes a broken
    plugin with the reason, not an error: one bad folder must not keep a service from starting."""
    found: dict[tuple[str, str], PluginDescriptor] = {}
    broken: list[BrokenPlugin] = []
    for entry in plugin_path:
        for manifest in sorted(Path(entry).glob("*/*/manifest.json")):
            try:
                plugin = read_manifest(manifest)
            except PluginError as exc:
                broken.append(BrokenPlugin(manifest.parent, str(exc)))
                continue
            first = found.setdefault((plugin.class_name, plugin.version), plugin)
            if first is not plugin:
                reason = f"{plugin.class_name} {plugin.version} is also in {first.folder}"
                broken.append(BrokenPlugin(plugin.folder, reason))
    return PluginCatalog(tuple(sorted(found.values())), tuple(sorted(broken)))


def installed(plugin_path: Iterable[Path]) -> PluginCatalog:
    """:func:`discover`, logging each broken plugin once, as a service starts."""
    catalog = discover(plugin_path)
    for plugin in catalog.broken:
        log.get().warning("plugin_broken", folder=str(plugin.folder), reason=plugin.reason)
    return catalog


@dataclass(frozen=True)
class PluginCatalog:
    """The installed plugins, with the name and version rules of KIP-891."""

    plugins: tuple[PluginDescriptor, ...]
    broken: tuple[BrokenPlugin, ...] = ()

    def versions_of(self, connector_class: str) -> list[PluginDescriptor]:
        """The installed versions of the plugin named by class or alias, oldest first."""
        matches = [
            p
            for p in self.plugins
            if connector_class == p.class_name or connector_class in p.aliases
        ]
        return sorted(matches, key=lambda p: version_key(p.version))

    def resolve(self, connector_class: str, version: str | None = None) -> PluginDescriptor:
        """The plugin version to run: the one asked for, or the latest installed."""
        versions = self.versions_of(connector_class)
        if not versions:
            known = sorted({p.class_name for p in self.plugins})
            unusable = f"; broken, see the plugin list: {len(self.broken)}" if self.broken else ""
            raise PluginError(
                f"connector.class: no plugin named {connector_class!r} is installed "
                f"(installed: {', '.join(known) or 'none'}{unusable})"
            )
        if not version:
            return versions[-1]
        for p in versions:
            if p.version == version:
                return p
        raise PluginError(
            f"connector.plugin.version: {connector_class} has no version {version!r} "
            f"(installed: {', '.join(p.version for p in versions)})"
        )
