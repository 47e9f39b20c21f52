"""The config providers, resolving references where connectors and tasks start: here, in the
plugin process, and nowhere else (``headrace.core.security.references`` says what a reference is).

- ``file``: ``${file:/abs/path.properties:key}``, a key of a Java properties file (Connect's
  ``FileConfigProvider``);
- ``dir``: ``${dir:/abs/folder:name}``, the whole content of the file ``name`` in the folder
  (Connect's ``DirectoryConfigProvider``, as Kubernetes mounts secrets);
- ``env``: ``${env:NAME}``, an environment variable of the worker (Connect's
  ``EnvVarConfigProvider``; its ``allowlist.pattern`` is
  ``HEADRACE_CONFIG_PROVIDER_ENV_PATTERN`` here).

Every reference is checked against the operator's policy first, then its path resolved through
``headrace.sdk.paths`` (symlinks followed, the target inside ``HEADRACE_CONFIG_PROVIDER_PATHS``).
A reference that cannot be resolved raises ``BadReference`` naming the key and the reference,
never a value: the unit then fails with that as its trace. Every resolved value is registered
with ``headrace.core.security.secrets``, so this process's logs and traces never show it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from headrace.core.model.properties import parse_properties
from headrace.core.security import secrets
from headrace.core.security.references import BadReference, ProviderPolicy, Reference, find, holds
from headrace.core.settings import Settings
from headrace.sdk.errors import ConfigException
from headrace.sdk.paths import Paths

MAX_FILE_BYTES = 1 << 20  # a secrets file is small; a larger one is a wrong path


@dataclass(frozen=True)
class Resolved:
    """A config with its references resolved, and what each key that held one became."""

    config: dict[str, str]
    changed: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Providers:
    """The providers as the operator enabled them, over this process's files and environment."""

    policy: ProviderPolicy
    paths: Paths
    environ: Mapping[str, str]

    @classmethod
    def of(cls, settings: Settings, environ: Mapping[str, str] | None = None) -> Providers:
        return cls(
            settings.provider_policy(),
            Paths(settings.config_provider_paths, "HEADRACE_CONFIG_PROVIDER_PATHS"),
            os.environ if environ is None else environ,
        )

    def resolve(self, config: Mapping[str, str]) -> Resolved:
        """``config`` with every reference replaced by its value; BadReference otherwise."""
        out = dict(config)
        changed = {}
        for key, value in config.items():
            if not holds(value):
                continue
            references = find(value)
            if not references:
                raise BadReference(
                    f"{key}: a reference is not closed: write ${{provider:path:key}}"
                )
            for reference in references:
                self.policy.check(key, reference)
                resolved = self._value(key, reference)
                secrets.register([resolved])
                value = value.replace(reference.text, resolved)
            out[key] = changed[key] = value
        return Resolved(out, changed)

    def _value(self, key: str, reference: Reference) -> str:
        where = f"{key}: {reference.text}"
        if reference.provider == "env":
            found = self.environ.get(reference.key)
            if found is None:
                raise BadReference(f"{where}: the worker has no environment variable of that name")
            return found
        if reference.provider == "dir":
            return _read(self._path(where, f"{reference.path}/{reference.key}"), where)
        properties = parse_properties(_read(self._path(where, reference.path), where))
        if reference.key not in properties:
            raise BadReference(f"{where}: the file has no key {reference.key!r}")
        return properties[reference.key]

    def _path(self, where: str, raw: str) -> Path:
        try:
            return self.paths.resolve(raw, where)
        except ConfigException as exc:
            raise BadReference(str(exc)) from None


def _read(path: Path, where: str) -> str:
    try:
        # No final symlink is followed: one made since the path was resolved cannot lead out.
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as file:
            data = file.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise BadReference(f"{where}: cannot read {path}: {exc.strerror}") from None
    if len(data) > MAX_FILE_BYTES:
        raise BadReference(f"{where}: {path} is larger than {MAX_FILE_BYTES} bytes")
    try:
        return data.decode()
    except UnicodeDecodeError:
        raise BadReference(f"{where}: {path} is not UTF-8 text") from None
