"""The plugin vocabulary every part of headrace speaks: an installed plugin version
(``PluginDescriptor``), the catalog of them with KIP-891's name and version rules
(``PluginCatalog``, ``VersionSpec``), and the kinds of plugin there are. Finding them on the
plugin path is ``headrace.isolation.plugins``'s; nothing here reads a folder.

A version is asked for as Connect 4.1 asks (``connector.plugin.version`` and the
``.plugin.version`` key of each component): ``latest`` or nothing for the latest installed, an
exact version, or a Maven range such as ``[1.0,2.0)`` (``VersionSpec``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as distribution_version
from pathlib import Path

from headrace.core.model.errors import PluginError
from headrace.core.settings import BUILTIN_PLUGINS

CONNECTOR_TYPES = ("source", "sink")


COMPONENT_TYPES = ("converter", "header_converter", "transformation", "predicate")


PLUGIN_TYPES = CONNECTOR_TYPES + COMPONENT_TYPES


# What a sink may promise of the records it is given, in its manifest's "delivery".
DELIVERIES = ("exactly-once", "at-least-once")


@dataclass(frozen=True)
class PluginInfo:
    """A plugin as the plugin list shows it (Connect's ``/connector-plugins``)."""

    class_name: str
    type: str  # source, sink, converter, header_converter, transformation, predicate
    version: str
    error: str = ""  # why it cannot be used; empty when it can
    aliases: tuple[str, ...] = ()


VERSION_KEY = "plugin.version"
"""The key beside a plugin's name that pins its version: ``<name key's prefix>.plugin.version``
(``connector.plugin.version``, ``transforms.<alias>.plugin.version``...)."""


@cache
def builtin_version() -> str:
    """The version of what ships inside headrace (its converters, transformations...): its own,
    as Connect's built-in plugins carry Kafka's."""
    try:
        return distribution_version("headrace")
    except PackageNotFoundError:  # run from a checkout that is not installed
        return "unknown"


@dataclass(frozen=True, order=True)
class PluginDescriptor:
    """One installed version of one plugin."""

    class_name: str
    version: str
    type: str
    module: str
    attribute: str
    folder: Path
    requirements: tuple[str, ...] = ()
    delivery: str = ""
    """What a sink promises of the records it is given: ``exactly-once`` (written once even
    after crashes and retries) or ``at-least-once``; empty when its manifest does not say."""
    components: tuple[PluginDescriptor, ...] = ()
    """For a connector's process: the component versions from the plugin path that its
    config names, loaded beside it (a process per connector version and component set)."""
    runtime: str = "python"
    """``python``, or ``java`` for a Kafka Connect plugin (``headrace.isolation.jvm``): then
    ``folder`` is its location (a jar, or a folder of jars) and ``manifest_file`` says where
    its scan's manifest is."""
    manifest_file: Path | None = None
    uses_executor: bool = False
    """Whether its tasks write through the Spark executor (its manifest's ``"executor": true``):
    standalone mode starts the executor before the first such plugin process."""

    @property
    def aliases(self) -> tuple[str, ...]:
        simple = self.class_name.rsplit(".", 1)[-1]
        short = simple.removesuffix("Connector") if self.is_connector else simple
        return tuple(dict.fromkeys(a for a in (simple, short) if a and a != self.class_name))

    @property
    def is_connector(self) -> bool:
        return self.type in CONNECTOR_TYPES

    def named(self, name: str) -> bool:
        """Whether ``name`` is this plugin's class name or one of its aliases."""
        return name == self.class_name or name in self.aliases

    @property
    def manifest(self) -> Path:
        return self.manifest_file or self.folder / "manifest.json"

    @property
    def is_java(self) -> bool:
        return self.runtime == "java"

    @property
    def ships_with_headrace(self) -> bool:
        """One of headrace's built-in plugins."""
        return self.folder.is_relative_to(BUILTIN_PLUGINS)


def version_key(version: str) -> tuple[tuple[int, str], ...]:
    """Orders versions like 1.10.0 after 1.9.0; non-numeric parts compare as text."""
    parts = version.replace("-", ".").split(".")
    return tuple((int(p), "") if p.isdecimal() else (-1, p) for p in parts)


@dataclass(frozen=True, order=True)
class BrokenPlugin:
    """A plugin version that cannot be used, and why: listed, refused, never run."""

    folder: Path
    reason: str


@dataclass(frozen=True, order=True)
class JavaComponent:
    """A converter, header converter, transformation or predicate of a Java plugin location:
    listed with the plugins, and used by the Java connectors that name it, in their JVM; not
    offered to Python connectors."""

    class_name: str
    type: str
    version: str
    location: Path


@dataclass(frozen=True)
class PluginCatalog:
    """The installed plugins, with the name and version rules of KIP-891."""

    plugins: tuple[PluginDescriptor, ...]
    broken: tuple[BrokenPlugin, ...] = ()
    java_components: tuple[JavaComponent, ...] = ()

    def versions_of(
        self, name: str, types: Sequence[str] = CONNECTOR_TYPES
    ) -> list[PluginDescriptor]:
        """The installed versions of the plugin named by class or alias, of one of ``types``
        (connectors unless said), oldest first."""
        if name not in self._by_name:
            return []  # not kept: a name from a config need not be any plugin's
        key = (name, tuple(types))
        if key not in self._versions:
            self._versions[key] = self._versions_of(name, types)
        return list(self._versions[key])

    @functools.cached_property
    def _versions(self) -> dict[tuple[str, tuple[str, ...]], list[PluginDescriptor]]:
        """``versions_of``'s answers so far: the catalog does not change, and each config
        answered asks for its connector's versions."""
        return {}

    def _versions_of(self, name: str, types: Sequence[str]) -> list[PluginDescriptor]:
        matches = [p for p in self._by_name.get(name, ()) if p.type in types]
        installed = [p for p in matches if not p.ships_with_headrace]
        if len({p.class_name for p in matches}) > 1 and len({p.class_name for p in installed}) == 1:
            # An alias a built-in shares with one plugin the operator installed names that one:
            # FileStreamSource is Kafka's own connector once its jar is on the plugin path.
            matches = installed
        return sorted(matches, key=lambda p: version_key(p.version))

    @functools.cached_property
    def _by_name(self) -> dict[str, list[PluginDescriptor]]:
        """The plugins each class name and alias names, in the catalog's order: a lookup per
        config answered, where a scan of every plugin's aliases was a quarter of listing
        10,000 connectors with their status."""
        by_name: dict[str, list[PluginDescriptor]] = {}
        for plugin in self.plugins:
            for name in (plugin.class_name, *plugin.aliases):
                by_name.setdefault(name, []).append(plugin)
        return by_name

    def taken_aliases(self) -> list[tuple[str, str, str]]:
        """(alias, the installed class it names, the built-in class it named before) for each
        alias of a built-in connector that an installed plugin took (``_versions_of``): said
        where the catalog is made and where a plugin is installed, never silently."""
        taken = []
        for name, plugins in sorted(self._by_name.items()):
            built_in = sorted({p.class_name for p in plugins if p.ships_with_headrace})
            named = self.versions_of(name)
            if built_in and named and not named[-1].ships_with_headrace and name not in built_in:
                taken.append((name, named[-1].class_name, built_in[0]))
        return taken

    def resolve(self, connector_class: str, version: str | None = None) -> PluginDescriptor:
        """The connector version to run: the latest installed that ``version`` (a
        ``VersionSpec``) allows."""
        versions = self.versions_of(connector_class)
        if not versions:
            known = sorted({p.class_name for p in self.plugins if p.is_connector})
            unusable = f"; broken, see the plugin list: {len(self.broken)}" if self.broken else ""
            raise PluginError(
                f"connector.class: no plugin named {connector_class!r} is installed "
                f"(installed: {', '.join(known) or 'none'}{unusable})"
            )
        classes = sorted({p.class_name for p in versions})
        if len(classes) > 1:  # as on Connect, an alias two plugins share names neither
            raise PluginError(
                f"connector.class: {connector_class!r} is ambiguous: it names "
                f"{' and '.join(classes)}; give the full class name"
            )
        key = "connector.plugin.version"
        spec = VersionSpec.parse(version, key)
        allowed = [p for p in versions if spec.allows(p.version)]
        if not allowed:
            raise PluginError(
                f"{key}: {connector_class} has no version {str(spec)!r} "
                f"(installed: {', '.join(p.version for p in versions)})"
            )
        return allowed[-1]


_BOUND = re.compile(r"([\[(])([^\[\]()]*)([\])])")


@dataclass(frozen=True)
class VersionSpec:
    """The versions a ``.plugin.version`` key allows, read as Kafka Connect 4.1 reads it:
    empty or ``latest`` (any), an exact version (``1.2.0``: that one), or Maven ranges, such
    as ``[1.0,2.0)`` (1.0 up to, not including, 2.0), ``[1.5,)`` or ``[1.0,1.2],[1.4,)``.
    Versions compare as ``version_key`` orders them."""

    text: str = ""
    ranges: tuple[tuple[str | None, bool, str | None, bool], ...] = ()
    """(lower bound, inclusive, upper bound, inclusive); None is unbounded."""

    @classmethod
    def parse(cls, raw: str | None, key: str) -> VersionSpec:
        """The spec; PluginError naming ``key`` when ``raw`` is not one."""
        text = (raw or "").strip()
        if text in ("", "latest"):
            return cls(text)
        if text[0] not in "[(":
            if any(c in text for c in "[](),"):
                raise PluginError(f"{key}: {text!r} is neither a version nor a version range")
            return cls(text, ((text, True, text, True),))
        ranges = []
        rest = text
        while rest:
            found = _BOUND.match(rest)
            if found is None:
                raise PluginError(f"{key}: {text!r} is not a version range such as [1.0,2.0)")
            opening, inside, closing = found.groups()
            ranges.append(cls._range(text, key, opening, inside, closing))
            rest = rest[found.end() :].strip()
            if rest.startswith(","):
                rest = rest[1:].strip()
                if not rest:
                    raise PluginError(f"{key}: {text!r} ends with a comma")
        return cls(text, tuple(ranges))

    @staticmethod
    def _range(
        text: str, key: str, opening: str, inside: str, closing: str
    ) -> tuple[str | None, bool, str | None, bool]:
        parts = [p.strip() for p in inside.split(",")]
        if len(parts) == 1:  # [1.0] is exactly 1.0; (1.0) means nothing
            if opening != "[" or closing != "]" or not parts[0]:
                raise PluginError(f"{key}: {text!r}: a single version is written [1.0]")
            return (parts[0], True, parts[0], True)
        if len(parts) != 2:
            raise PluginError(f"{key}: {text!r}: a range has two bounds, [low,high)")
        low, high = parts[0] or None, parts[1] or None
        if low is not None and high is not None and version_key(low) > version_key(high):
            raise PluginError(f"{key}: {text!r}: the lower bound is above the upper one")
        if (low is None and opening == "[") or (high is None and closing == "]"):
            raise PluginError(f"{key}: {text!r}: an open bound takes ( or ), not [ or ]")
        return (low, opening == "[", high, closing == "]")

    @property
    def is_latest(self) -> bool:
        return not self.ranges

    def allows(self, version: str) -> bool:
        if not self.ranges:
            return True
        at = version_key(version)
        return any(_within(at, r) for r in self.ranges)

    def __str__(self) -> str:
        return self.text or "latest"


Bounds = tuple[str | None, bool, str | None, bool]


def _within(at: tuple[tuple[int, str], ...], bounds: Bounds) -> bool:
    low, low_in, high, high_in = bounds
    if low is not None and (at < version_key(low) or (at == version_key(low) and not low_in)):
        return False
    return not (
        high is not None and (at > version_key(high) or (at == version_key(high) and not high_in))
    )
