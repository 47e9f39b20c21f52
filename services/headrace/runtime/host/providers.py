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
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from headrace.core.security import secrets
from headrace.core.security.references import BadReference, ProviderPolicy, Reference, find, holds
from headrace.core.settings import Settings
from headrace.sdk.errors import ConfigException
from headrace.sdk.paths import Paths

MAX_FILE_BYTES = 1 << 20  # a secrets file is small; a larger one is a wrong path
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


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
            ProviderPolicy.of(settings),
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


def _logical_lines(text: str) -> list[str]:
    """A properties file's lines, continuations joined (a line ending in an odd number of
    backslashes goes on, the next line's leading spaces dropped), comments and blanks gone."""
    lines: list[str] = []
    pending = ""
    for physical in text.splitlines():
        line = physical.lstrip()  # a continued line's leading spaces go too
        if not pending and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2:
            pending += line[:-1]
            continue
        lines.append(pending + line)
        pending = ""
    if pending:
        lines.append(pending)
    return lines


_SEPARATOR = re.compile(r"(?<!\\)(?:\\\\)*(\s*[=:]\s*|\s+)")


def parse_properties(text: str) -> dict[str, str]:
    """A Java properties file's keys and values (``key=value``, ``key: value``, ``key value``;
    ``#`` and ``!`` comments; backslash continuations and escapes, ``\\uXXXX`` included)."""
    out = {}
    for line in _logical_lines(text):
        key, value = line, ""
        for match in _SEPARATOR.finditer(line):
            end_of_key = match.start(1)
            key, value = line[:end_of_key], line[match.end(1) :]
            break
        out[_unescape(key)] = _unescape(value)
    return out


def _unescape(text: str) -> str:
    out = []
    i = 0
    while i < len(text):
        char = text[i]
        if char != "\\" or i + 1 >= len(text):
            out.append(char)
            i += 1
            continue
        following = text[i + 1]
        if following == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", text[i + 2 : i + 6]):
            out.append(chr(int(text[i + 2 : i + 6], 16)))
            i += 6
            continue
        out.append(_ESCAPES.get(following, following))
        i += 2
    return "".join(out)
