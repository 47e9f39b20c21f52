"""Java properties files, as Kafka Connect reads its worker and connector configs and the
``file`` config provider reads its files. Pure."""

from __future__ import annotations

import re

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


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
