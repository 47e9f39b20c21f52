"""Java regular expressions and replacement strings, as Connect's RegexRouter and TopicNameMatches
read them, matched with a bound on time.

The two dialects agree on most syntax. ``compile_java`` translates what differs and Python would
accept with another meaning or refuse: named groups ``(?<name>...)`` and ``\\k<name>``, quoting
``\\Q...\\E``, and the end anchors ``\\z`` and ``\\Z``. Java constructs Python has no equivalent
for (``\\p{Alpha}``, class intersections ``[a-z&&[^b]]``, nested classes) are refused with a
ValueError rather than matched differently.

Java's ``.`` and ``$`` also treat ``\\r``, ``\\u0085``, ``\\u2028`` and ``\\u2029`` as line
ends, Python's only ``\\n``; Kafka topic names (``[a-zA-Z0-9._-]``) hold none of them.

``Matcher.matches()`` takes a string only when the whole of it matches. ``fullmatch`` does the
same; ``whole_match_java`` is for callers that only call ``match``, which stops at a prefix.

Replacements follow ``java.util.regex.Matcher``: ``$n`` and ``${name}`` refer to groups, a
backslash takes the next character literally; they are checked against the pattern up front.

A pattern from a config may backtrack catastrophically: ``(a|a)+$`` against forty ``a`` and a
``-`` takes longer than the universe has. Patterns are compiled with the ``regex`` module (in
its ``re``-compatible mode) and every match is bounded by :data:`MATCH_TIMEOUT_S`: one that
runs past it raises :class:`RegexTimeout`, and its caller treats the record (or the topic) as
it treats any it cannot handle, instead of hanging its process and every connector in it.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass

import regex

from headrace.sdk.errors import DataError

MATCH_TIMEOUT_S = 0.1
"""The longest one match of a config's pattern may take; an honest pattern against a topic
name takes microseconds."""


class RegexTimeout(DataError):
    """A pattern took longer than :data:`MATCH_TIMEOUT_S` to match a text: for a transform, a
    record it cannot handle, as any other (``errors.tolerance`` decides)."""


class JavaRegex:
    """A compiled Java regex whose matches are bounded in time (see the module's docstring)."""

    def __init__(self, source: str, compiled: regex.Pattern[str]) -> None:
        self.source = source  # as the config gave it, in Java's dialect
        self._compiled = compiled

    @property
    def pattern(self) -> str:
        """The translated pattern, in the ``re`` dialect."""
        return str(self._compiled.pattern)

    @property
    def flags(self) -> int:
        return int(self._compiled.flags)

    @property
    def groupindex(self) -> dict[str, int]:
        return dict(self._compiled.groupindex)

    @property
    def groups(self) -> int:
        return int(self._compiled.groups)

    def _bounded(self, how: str, text: str) -> regex.Match[str] | None:
        match_with = self._compiled.fullmatch if how == "fullmatch" else self._compiled.search
        try:
            return match_with(text, timeout=MATCH_TIMEOUT_S)
        except TimeoutError:
            raise RegexTimeout(
                f"the regex {self.source!r} took over {MATCH_TIMEOUT_S * 1000:g} ms to match "
                f"{text[:80]!r}: it backtracks without end on such input"
            ) from None

    def fullmatch(self, text: str) -> regex.Match[str] | None:
        """Java's ``Matcher.matches()``: a match of the whole of ``text``, or None."""
        return self._bounded("fullmatch", text)

    def search(self, text: str) -> regex.Match[str] | None:
        """Java's ``Matcher.find()``: the first match anywhere in ``text``, or None."""
        return self._bounded("search", text)


_NAMED_GROUP = re.compile(r"\(\?<([A-Za-z][A-Za-z0-9]*)>")
_BACKREF = re.compile(r"\\k<([A-Za-z][A-Za-z0-9]*)>")
# Global flags must stay first in Python; in verbose mode whitespace and comments may come between.
_LEADING_FLAGS = re.compile(r"(?:\(\?[aiLmsux]+\))*")
_LEADING_FLAGS_VERBOSE = re.compile(r"(?:\(\?[aiLmsux]+\)|[ \t\n\r\v\f]+|#[^\n]*\n?)*")


def compile_java(pattern: str) -> JavaRegex:
    """``pattern`` compiled with Java's meaning; ValueError says why it cannot be."""
    translated = _translate(pattern)
    with warnings.catch_warnings():
        # Python warns (FutureWarning) where Java syntax would mean something else to it.
        warnings.simplefilter("error")
        try:
            re.compile(translated)  # what the re dialect refuses or reads otherwise, refused
            return JavaRegex(pattern, regex.compile(translated, regex.V0))
        except (re.error, regex.error) as exc:
            raise ValueError(str(exc)) from None
        except FutureWarning as exc:
            raise ValueError(f"uses Java syntax Python's re reads differently ({exc})") from None


def whole_match_java(pattern: str) -> str:
    """``pattern`` as Python source whose ``re.match`` takes a string only when Java's
    ``Pattern.compile(pattern).matcher(s).matches()`` would: the whole string, not a prefix of
    it. ValueError says why it cannot be, as for ``compile_java``.

    The translation goes in a group anchored at the end, so an alternation ``a|ab`` is anchored
    as a whole. Leading global flags such as ``(?i)`` stay in front, where Python requires them.
    """
    compiled = compile_java(pattern)
    verbose = bool(compiled.flags & re.VERBOSE)
    leading = (_LEADING_FLAGS_VERBOSE if verbose else _LEADING_FLAGS).match(compiled.pattern)
    flags = leading.group() if leading else ""
    body = compiled.pattern[len(flags) :]
    # In verbose mode a comment on the last line would swallow the closing parenthesis.
    end = "\n" if verbose else ""
    return f"{flags}(?:{body}{end})" + r"\Z"


def _translate(pattern: str) -> str:
    out: list[str] = []
    i, n, in_class = 0, len(pattern), False
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            nxt = pattern[i + 1]
            if nxt == "Q":
                end = pattern.find("\\E", i + 2)
                quoted = pattern[i + 2 :] if end < 0 else pattern[i + 2 : end]
                out.append(re.escape(quoted))
                i = n if end < 0 else end + 2
                continue
            backref = _BACKREF.match(pattern, i)
            if backref and not in_class:
                out.append(f"(?P={backref.group(1)})")
                i = backref.end()
                continue
            if not in_class and nxt == "z":
                out.append(r"\Z")
            elif not in_class and nxt == "Z":
                out.append(r"(?=\n?\Z)")
            else:
                out.append(pattern[i : i + 2])
            i += 2
            continue
        if in_class:
            in_class = c != "]" or out[-1] == "["
        elif c == "[":
            in_class = True
        elif (named := _NAMED_GROUP.match(pattern, i)) is not None:
            out.append(f"(?P<{named.group(1)}>")
            i = named.end()
            continue
        out.append(c)
        i += 1
    return "".join(out)


@dataclass(frozen=True)
class Replacement:
    """A parsed Java replacement string: literal text and group numbers, in order."""

    parts: tuple[str | int, ...]

    def expand(self, match: regex.Match[str]) -> str:
        """The replacement for one match (an unmatched group contributes nothing, as in Java)."""
        return "".join(p if isinstance(p, str) else (match.group(p) or "") for p in self.parts)

    def replace_first(self, pattern: JavaRegex, text: str) -> str:
        """Java's ``Matcher.replaceFirst``: the first match found, replaced."""
        match = pattern.search(text)
        if match is None:
            return text
        return text[: match.start()] + self.expand(match) + text[match.end() :]


def parse_replacement(replacement: str, pattern: JavaRegex) -> Replacement:
    """``replacement`` read as ``Matcher.appendReplacement`` reads it, against ``pattern``'s
    groups; ValueError for a dangling ``\\`` or ``$`` or a group the pattern does not have."""
    parts: list[str | int] = []
    literal: list[str] = []
    i, n = 0, len(replacement)
    while i < n:
        c = replacement[i]
        if c == "\\":
            if i + 1 >= n:
                raise ValueError("a trailing backslash escapes nothing")
            literal.append(replacement[i + 1])
            i += 2
        elif c == "$":
            group, i = _group_reference(replacement, i + 1, pattern)
            if literal:
                parts.append("".join(literal))
                literal = []
            parts.append(group)
        else:
            literal.append(c)
            i += 1
    if literal:
        parts.append("".join(literal))
    return Replacement(tuple(parts))


def _group_reference(text: str, i: int, pattern: JavaRegex) -> tuple[int, int]:
    """The group a ``$`` at ``i - 1`` refers to, and where the reference ends."""
    if i >= len(text):
        raise ValueError("'$' at the end refers to no group")
    if text[i] == "{":
        end = text.find("}", i)
        name = text[i + 1 : end] if end > 0 else ""
        if end < 0 or not re.fullmatch(r"[A-Za-z][A-Za-z0-9]*", name):
            raise ValueError(f"'${text[i:]}' is not a group reference: use ${{name}}")
        if name not in pattern.groupindex:
            raise ValueError(f"the regex has no group named {name!r}")
        return pattern.groupindex[name], end + 1
    if not text[i].isascii() or not text[i].isdigit():
        raise ValueError(f"'${text[i]}' is not a group reference: use $n or ${{name}}")
    # As in Java: further digits belong to the number only while such a group exists.
    number, i = int(text[i]), i + 1
    while i < len(text) and text[i].isascii() and text[i].isdigit():
        longer = number * 10 + int(text[i])
        if longer > pattern.groups:
            break
        number, i = longer, i + 1
    if number > pattern.groups:
        raise ValueError(f"the regex has no group {number}")
    return number, i
