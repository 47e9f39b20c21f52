"""Which component versions a connector config names (KIP-891): its converters, header
converter, transformations and predicates, each by a key and pinned by the key beside it.

| names the class | pins the version | kind |
| --- | --- | --- |
| ``key.converter``, ``value.converter`` | ``<key>.plugin.version`` | converter |
| ``header.converter`` | ``header.converter.plugin.version`` | header_converter |
| ``transforms.<alias>.type`` | ``transforms.<alias>.plugin.version`` | transformation |
| ``predicates.<alias>.type`` | ``predicates.<alias>.plugin.version`` | predicate |

A name may be one of headrace's built-ins, which carry headrace's version, or a plugin's on the
plugin path, of which several versions may be installed; a version key is a ``VersionSpec``, and
the latest version it allows wins, built-in or not. ``resolve`` settles every name at once, for
the config service (to refuse what cannot run) and the worker (to start the connector's plugin
process with the component versions it loads: ``PluginDescriptor.components``). One config
uses one version of a class, since its process can hold only one.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass

from headrace.components.converters import (
    CONVERTERS,
    HEADER_CONVERTERS,
    converter_for,
    header_converter_for,
)
from headrace.components.transforms.chain import (
    PREDICATES,
    TRANSFORMS,
    configured_aliases,
    parse_chain,
)
from headrace.components.transforms.registry import PREDICATES as BUILTIN_PREDICATES
from headrace.components.transforms.registry import TRANSFORMS as BUILTIN_TRANSFORMS
from headrace.core.model.configinfo import key_of
from headrace.core.model.errors import PluginError
from headrace.core.model.plugins import (
    COMPONENT_TYPES,
    VERSION_KEY,
    PluginCatalog,
    PluginDescriptor,
    VersionSpec,
    builtin_version,
    version_key,
)
from headrace.sdk.errors import ConfigException

VERSION_SUFFIX = "." + VERSION_KEY

BUILTINS: Mapping[str, Collection[str]] = {
    "converter": CONVERTERS,
    "header_converter": HEADER_CONVERTERS,
    "transformation": BUILTIN_TRANSFORMS,
    "predicate": BUILTIN_PREDICATES,
}
"""Every name a built-in of each kind answers to."""


@dataclass(frozen=True)
class Named:
    """One component a config names: of which kind, under which key, pinned by which key."""

    kind: str
    key: str
    name: str
    version_key: str


@dataclass(frozen=True)
class Resolution:
    """The plugin-path versions a config's components resolve to, and the problems by key."""

    components: tuple[PluginDescriptor, ...] = ()
    problems: tuple[tuple[str, str], ...] = ()

    def raise_problems(self) -> None:
        """PluginError listing every problem, each message starting with its key."""
        if self.problems:
            raise PluginError("; ".join(message for _, message in self.problems))


def named(config: Mapping[str, str]) -> list[Named]:
    """Every component the config names, in the order of its keys' table above."""
    found = []
    for prefix, kind in (
        ("key.converter", "converter"),
        ("value.converter", "converter"),
        ("header.converter", "header_converter"),
    ):
        name = config.get(prefix, "").strip()
        if name:
            found.append(Named(kind, prefix, name, prefix + VERSION_SUFFIX))
    for namespace, kind in ((TRANSFORMS, "transformation"), (PREDICATES, "predicate")):
        for alias in configured_aliases(config, namespace):
            name = config.get(f"{namespace}.{alias}.type", "").strip()
            if name:
                base = f"{namespace}.{alias}"
                found.append(Named(kind, base + ".type", name, base + VERSION_SUFFIX))
    return found


def stray_version_keys(config: Mapping[str, str]) -> list[str]:
    """Version keys of components the config does not name (``key.converter.plugin.version``
    with no ``key.converter``): honoured by nothing, so refused."""
    pinned = {n.version_key for n in named(config)}
    return sorted(
        k
        for k in config
        if k.endswith(VERSION_SUFFIX)
        and k != "connector" + VERSION_SUFFIX
        and k.split(".", 1)[0] in ("key", "value", "header", TRANSFORMS, PREDICATES)
        and k not in pinned
    )


def resolve(config: Mapping[str, str], catalog: PluginCatalog) -> Resolution:
    """The component versions the config's names and version keys select.

    A problem (by key) for: a version key that is not a version or range, a version no
    installed copy has, a version key beside no name, and one class asked for in two
    versions, or two classes from one module name (they cannot share a process). A name
    nothing answers to is left to the checks that configure it, which list what exists."""
    problems: list[tuple[str, str]] = [
        (
            key,
            f"{key}: sets the version of no component: {key.removesuffix(VERSION_SUFFIX)} "
            "is not set",
        )
        for key in stray_version_keys(config)
    ]
    chosen: dict[str, tuple[str, PluginDescriptor | None]] = {}  # class -> (key, version)
    for use in named(config):
        try:
            picked = pick(use, config, catalog)
        except PluginError as exc:
            problems.append((use.version_key, str(exc)))
            continue
        if picked is UNKNOWN:
            continue
        plugin = picked if isinstance(picked, PluginDescriptor) else None
        class_name = plugin.class_name if plugin else use.name
        earlier = chosen.setdefault(class_name, (use.key, plugin))
        if earlier[1] != plugin:
            problems.append(
                (
                    use.version_key,
                    f"{use.version_key}: {use.key} names {class_name} in version "
                    f"{_version_of(plugin)}, but {earlier[0]} names it in version "
                    f"{_version_of(earlier[1])}; a connector uses one version of a class",
                )
            )
    keyed = {p: key for key, p in chosen.values() if p is not None}
    problems += _module_clashes(keyed)
    return Resolution(tuple(sorted(keyed)), tuple(problems))


class Unknown:
    """What ``pick`` gives for a name no installed component, nor a built-in, answers to."""


UNKNOWN = Unknown()


def pick(
    use: Named, config: Mapping[str, str], catalog: PluginCatalog
) -> PluginDescriptor | Unknown | None:
    """The plugin-path version chosen for one use, None for the built-in, or UNKNOWN;
    PluginError naming the version key when its version cannot be had."""
    spec = VersionSpec.parse(config.get(use.version_key), use.version_key)
    candidates: list[tuple[str, PluginDescriptor | None]] = [
        (p.version, p) for p in catalog.versions_of(use.name, (use.kind,))
    ]
    if use.name in BUILTINS[use.kind]:
        candidates.append((builtin_version(), None))
    if not candidates:
        if spec.is_latest:
            return UNKNOWN
        raise PluginError(
            f"{use.version_key}: no {use.kind} named {use.name!r} is installed, in any version"
        )
    allowed = sorted((c for c in candidates if spec.allows(c[0])), key=lambda c: version_key(c[0]))
    if not allowed:
        installed = ", ".join(v for v, _ in sorted(candidates, key=lambda c: version_key(c[0])))
        raise PluginError(
            f"{use.version_key}: {use.kind} {use.name} has no version {str(spec)!r} "
            f"(installed: {installed})"
        )
    return allowed[-1][1]


def _version_of(plugin: PluginDescriptor | None) -> str:
    return plugin.version if plugin else f"{builtin_version()} (built in)"


def _module_clashes(keyed: Mapping[PluginDescriptor, str]) -> list[tuple[str, str]]:
    """Two plugin folders whose modules share a top-level name: one process imports one."""
    by_module: dict[str, PluginDescriptor] = {}
    problems = []
    for plugin in sorted(keyed):
        top = plugin.module.split(".", 1)[0]
        first = by_module.setdefault(top, plugin)
        if first.folder != plugin.folder:
            key = keyed[plugin]
            problems.append(
                (
                    key,
                    f"{key}: {plugin.class_name} {plugin.version} and {first.class_name} "
                    f"{first.version} are both module {top!r}, from different folders; they "
                    "cannot run in one process",
                )
            )
    return problems


def checks(config: Mapping[str, str]) -> list[tuple[str, Callable[[], object]]]:
    """Configuring each component the config names, as its units will, by the key each check
    is about: run where every class named can be loaded (the config service for built-ins, the
    connector's plugin process when the plugin path provides some)."""
    return [
        ("key.converter", lambda: converter_for(config, "key")),
        ("value.converter", lambda: converter_for(config, "value")),
        ("header.converter", lambda: header_converter_for(config)),
        ("transforms", lambda: parse_chain(config).close()),
    ]


def problems(config: Mapping[str, str]) -> list[tuple[str, str]]:
    """What ``checks`` find, each as (key, message), filed under the key a message starts
    with (``"transforms.a.field: ..."``), else the check's own."""
    found = []
    for key, run in checks(config):
        try:
            run()
        except ConfigException as exc:
            found.append((key_of(str(exc), key, config), str(exc)))
    return found


def listed() -> list[tuple[str, str, str]]:
    """Every built-in component as (class name, kind, version), by Connect's class names."""
    return [
        (name, kind, builtin_version())
        for kind in COMPONENT_TYPES
        for name in sorted(BUILTINS[kind])
        if name.startswith("org.apache.kafka.")
    ]
