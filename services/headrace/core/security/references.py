"""Config provider references in connector configs (KIP-297, KIP-421), read without resolving.

A value may hold references, each replaced by what a config provider gives for it when the
connector or task starts, in the plugin process only (``headrace.runtime.host.providers``)::

    ${file:/etc/secrets/db.properties:password}   a key of a Java properties file
    ${dir:/etc/secrets:db-password}                 the content of a file in a folder
    ${env:DB_PASSWORD}                              an environment variable

The providers are the worker's, never a connector's (``config.providers`` in a connector config
is refused: CVE-2024-31141), and none is enabled unless the operator names it in
``HEADRACE_CONFIG_PROVIDERS``: a reference reads the worker's files or environment, which the
operator must mean to share. ``file`` and ``dir`` read only absolute paths inside the folders of
``HEADRACE_CONFIG_PROVIDER_PATHS`` (no ``..``; symlinks leading out are refused when resolving);
``env`` reads only the variables whose whole name matches ``HEADRACE_CONFIG_PROVIDER_ENV_PATTERN``.

This module is pure: the config service checks a config's references with it (syntax, provider,
path and name, by their text) and stores the config as written; the plugin process resolves them.
``${name}`` without a provider (a topic format's ``${topic}``, a regex group) is no reference.
Task configs a connector makes are put back into references (``reverse``) before they leave the
plugin process, so no resolved value reaches a topic.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from headrace.sdk.errors import ConfigException

PROVIDERS = ("file", "env", "dir")
"""The providers headrace has; ``HEADRACE_CONFIG_PROVIDERS`` enables some of them."""

# A reference, in Kafka's own grammar (``ConfigTransformer``): ``${`` provider ``:`` body ``}``,
# the provider anything up to the first ``:`` (``${_e:PATH}`` is one, for a provider named
# ``_e``). An opening with no closing brace is malformed; ``${word}`` (no colon) is left alone,
# as Connect leaves it.
_REFERENCE = re.compile(r"\$\{([^}:]*):([^}]*)\}")
_OPENED = re.compile(r"\$\{[^}:]*:")

FRAMEWORK_TYPE_KEYS = (".type", ".plugin.version")
"""Ends of the keys naming a component or its version (``transforms.<alias>.type``...): the
worker reads them to choose what to load, so they never hold a reference."""


@dataclass(frozen=True)
class Reference:
    """One ``${provider:path:key}`` (``path`` empty for ``env``) as written in a value."""

    text: str
    provider: str
    path: str
    key: str


class BadReference(ConfigException):
    """A reference that cannot be read, or that the operator's policy refuses; the message
    names the config key and the reference, never a resolved value."""


def find(value: str) -> list[Reference]:
    """Every reference in ``value``, in order. The body splits at its first ``:`` into path and
    key (Connect's reading), except for ``env``, whose body is the variable's name."""
    found = []
    for match in _REFERENCE.finditer(value):
        provider, body = match.group(1), match.group(2)
        path, sep, key = body.partition(":")
        if provider == "env" or not sep:
            path, key = "", body
        found.append(Reference(match.group(0), provider, path, key))
    return found


def holds(value: str) -> bool:
    """Whether ``value`` holds a reference, well formed or not."""
    return _OPENED.search(value) is not None


def only_references(value: str) -> bool:
    """Whether ``value`` is made of references alone (and holds one): nothing of it is a
    secret written in the config itself."""
    return bool(find(value)) and not _REFERENCE.sub("", value).strip()


@dataclass(frozen=True)
class ProviderPolicy:
    """What the operator lets references read."""

    enabled: tuple[str, ...] = ()
    paths: tuple[PurePosixPath, ...] = ()
    env_pattern: str = ""

    def check(self, key: str, reference: Reference) -> None:
        """BadReference naming ``key`` when the reference is malformed, or names a provider,
        a path or a variable the policy does not allow; by its text only (no file is read)."""
        where = f"{key}: {reference.text}"
        if reference.provider not in PROVIDERS:
            raise BadReference(
                f"{where}: no config provider {reference.provider!r}; "
                f"there are {', '.join(PROVIDERS)}"
            )
        if reference.provider not in self.enabled:
            enabled = ", ".join(self.enabled) or "none"
            raise BadReference(
                f"{where}: the config provider {reference.provider!r} is not enabled on the "
                f"workers (HEADRACE_CONFIG_PROVIDERS: {enabled})"
            )
        if not reference.key.strip():
            raise BadReference(f"{where}: names no key (${{provider:path:key}})")
        if reference.provider == "env":
            self._check_env(where, reference.key)
        else:
            self._check_path(where, reference)

    def _check_env(self, where: str, name: str) -> None:
        if not self.env_pattern:
            raise BadReference(
                f"{where}: no environment variable may be read "
                "(HEADRACE_CONFIG_PROVIDER_ENV_PATTERN is empty)"
            )
        if re.fullmatch(self.env_pattern, name) is None:
            raise BadReference(
                f"{where}: {name!r} does not match HEADRACE_CONFIG_PROVIDER_ENV_PATTERN "
                f"({self.env_pattern})"
            )

    def _check_path(self, where: str, reference: Reference) -> None:
        if not reference.path:
            raise BadReference(f"{where}: names no path (${{{reference.provider}:path:key}})")
        path = PurePosixPath(reference.path)
        if not path.is_absolute() or ".." in path.parts:
            raise BadReference(f"{where}: the path must be absolute, without '..'")
        if reference.provider == "dir" and ("/" in reference.key or reference.key in (".", "..")):
            raise BadReference(f"{where}: the file in the folder is a name, not a path")
        if not any(path.is_relative_to(root) for root in self.paths):
            allowed = ", ".join(str(r) for r in self.paths) or "none"
            raise BadReference(
                f"{where}: {path} is outside the folders config providers may read "
                f"({allowed}; HEADRACE_CONFIG_PROVIDER_PATHS)"
            )


def is_framework_key(key: str, framework_keys: Sequence[str]) -> bool:
    """Whether ``key`` is one the framework reads to choose what runs, where no reference is
    taken: they are read by services that never resolve one."""
    return key in framework_keys or (
        key.startswith(("transforms.", "predicates.")) and key.endswith(FRAMEWORK_TYPE_KEYS)
    )


def problems(
    config: Mapping[str, str], policy: ProviderPolicy, framework_keys: Sequence[str] = ()
) -> dict[str, list[str]]:
    """Per key holding a reference, what is wrong with its references (empty when nothing)."""
    found: dict[str, list[str]] = {}
    for key, value in sorted(config.items()):
        if not holds(value):
            continue
        errors = found.setdefault(key, [])
        if is_framework_key(key, framework_keys):
            errors.append(
                f"{key}: takes no config provider reference: the framework reads it to choose "
                "what runs, where no reference is resolved"
            )
            continue
        references = find(value)
        if len(references) != len(_OPENED.findall(value)):
            errors.append(f"{key}: a reference is not closed: write ${{provider:path:key}}")
        for reference in references:
            try:
                policy.check(key, reference)
            except BadReference as exc:
                errors.append(str(exc))
    return found


MIN_MATCHED = 4
"""Shorter resolved values are put back, or found inside another value, only under their own
key: a value like ``1`` or ``on`` is everywhere, and is no secret to guard."""


def reverse(
    task_configs: Sequence[Mapping[str, str]],
    raw: Mapping[str, str],
    resolved: Mapping[str, str],
) -> list[dict[str, str]]:
    """Task configs with resolved values put back as the references they came from (Connect's
    reverse transform): a value equal to the resolved value of a connector key that held a
    reference becomes that key's raw value, the same key's first. BadReference when a task
    config still carries a resolved value (inside a longer text), which would reach a topic."""
    referenced = {k: resolved[k] for k, v in raw.items() if holds(v) and k in resolved}
    by_value: dict[str, str] = {}
    for key, value in referenced.items():
        if len(value) >= MIN_MATCHED:
            by_value.setdefault(value, raw[key])
    out = []
    for task in task_configs:
        config = {}
        for key, value in task.items():
            if key in referenced and value == referenced[key]:
                config[key] = raw[key]
            elif value in by_value:
                config[key] = by_value[value]
            else:
                leaked = [k for k, v in referenced.items() if len(v) >= MIN_MATCHED and v in value]
                if leaked:
                    raise BadReference(
                        f"{key}: a task config carries the resolved value of {leaked[0]} "
                        f"({raw[leaked[0]]}) inside a longer value; it cannot be stored as "
                        "the reference, and a resolved value is never stored"
                    )
                config[key] = value
        out.append(config)
    return out
