"""Where ``-f`` reads from: a file, every ``*.json`` file of a folder (in name order), or
standard input for ``-`` (kubectl's ``-f``). Each text comes with the name errors use for it."""

from __future__ import annotations

from pathlib import Path

import click

from headrace.cli.inputs import InputError

STDIN = "-"


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise InputError(f"{path}: cannot read it: {reason}") from None


def read_one(path: str) -> tuple[str, str]:
    """One file's (or stdin's) text, and its name."""
    if path == STDIN:
        return click.get_text_stream("stdin").read(), "<stdin>"
    return _read(Path(path)), path


def files_of(path: str) -> list[str]:
    """The files ``-f path`` names: itself, or a folder's ``*.json`` files."""
    if path == STDIN:
        return [STDIN]
    folder = Path(path)
    if not folder.is_dir():
        return [path]
    found = sorted(str(p) for p in folder.glob("*.json") if p.is_file())
    if not found:
        raise InputError(f"{path}: no *.json files in this folder")
    return found
