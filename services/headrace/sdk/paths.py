"""The folders a plugin may touch: ``context.paths.resolve(raw, key)``.

A rule of headrace: a name or path from a config never reaches outside the folders an operator
allowed (``HEADRACE_FILE_ROOTS``). A plugin that reads or writes files named in its config
resolves each one through its context before using it::

    self.path = self.context.paths.resolve(config["file"], "file")

A relative path is taken relative to the first root; symlinks and ``..`` are followed
(``Path.resolve``), and the result must lie inside one of the roots, or ``resolve`` raises a
``ConfigException`` naming the key, the path and the allowed roots. A context the runtime did
not make (a unit test's) allows no folder at all unless one is passed (``paths=Paths((dir,))``).

Resolving checks the path as it is now. A plugin that opens a file later (once it exists) should
resolve it again just before opening it, and open the result without following a final symlink
(``os.O_NOFOLLOW``), so a symlink made in the meantime cannot lead it out.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from headrace.sdk.config import ConfigValue
from headrace.sdk.errors import ConfigException


@dataclass(frozen=True)
class Paths:
    """The operator's allowed folders (relative ones are taken against the working directory),
    and the check every config-named path goes through."""

    roots: tuple[Path, ...] = ()
    setting: str = "HEADRACE_FILE_ROOTS"  # the operator's setting that names the roots

    def resolve(self, raw: str, key: str) -> Path:
        """The absolute, symlink-free path ``raw`` names; ConfigException naming ``key`` when
        it is empty, cannot be resolved, or lies outside every allowed root.

        Touches the filesystem (a few ``lstat`` calls): cheap on a local disk.
        """
        if not raw or not raw.strip():
            raise ConfigException(f"Invalid value for configuration {key}: must name a path")
        if not self.roots:
            raise ConfigException(
                f"Invalid value {raw} for configuration {key}: no folder is allowed for files "
                "(this context was not made by the headrace runtime, or the operator allowed "
                f"none; the runtime allows the folders in {self.setting})"
            )
        roots = [_resolved(root, key, raw) for root in self.roots]
        # Joining keeps an absolute raw as it is, and puts a relative one under the first root.
        target = _resolved(roots[0] / raw, key, raw)
        if not any(target.is_relative_to(root) for root in roots):
            allowed = ", ".join(str(r) for r in roots)
            raise ConfigException(
                f"Invalid value {raw} for configuration {key}: {target} is outside the allowed "
                f"folders ({allowed}; set by {self.setting})"
            )
        return target

    def check(self, results: list[ConfigValue], key: str) -> list[ConfigValue]:
        """``results`` of a ``validate()``, with what ``resolve`` says of ``key``'s value added
        to its errors, when it has a value and no error yet: a connector's ``validate`` then
        refuses a path that its ``start`` would (``self.context.paths.check(results, "file")``)."""
        for result in results:
            if result.name == key and result.value and not result.errors:
                try:
                    self.resolve(str(result.value), key)
                except ConfigException as exc:
                    result.errors.append(str(exc))
        return results


def _resolved(path: Path, key: str, raw: str) -> Path:
    try:
        return path.resolve()
    # ValueError: a NUL byte; RuntimeError (3.11, 3.12) or OSError: a symlink loop.
    except (OSError, RuntimeError, ValueError) as exc:
        raise ConfigException(
            f"Invalid value {raw} for configuration {key}: cannot resolve {path}: {exc}"
        ) from None
