"""Java ``SimpleDateFormat`` patterns, as TimestampConverter and TimestampRouter use them, in UTC.

Supported pattern letters (English names, as Java's ROOT locale writes them):

| letter | meaning | formatted |
| --- | --- | --- |
| ``y`` | year | ``yy`` two digits, otherwise at least as many digits as letters |
| ``M`` | month | one or two letters a number; ``MMM`` ``Jan``; ``MMMM`` ``January`` |
| ``d`` | day of month | number |
| ``H`` / ``h`` | hour 0-23 / 1-12 | number |
| ``m`` ``s`` | minute, second | number |
| ``S`` | millisecond | number (``SSS``: ``007``) |
| ``E`` | day of week | ``EEE`` ``Mon``; ``EEEE`` ``Monday`` |
| ``a`` | AM/PM marker | ``AM`` or ``PM`` |
| ``z`` | time zone | ``UTC``; ``zzzz`` ``Coordinated Universal Time`` |
| ``Z`` / ``X`` | zone offset | ``+0000`` / ``Z`` (always UTC) |

Text between single quotes is literal (``''`` is a quote); other non-letters are literal. Any
other letter is refused, so that a pattern never formats something other than it says.

Parsing is Java's: a number takes all the digits it can unless the next field is a number too
(``yyyyMMdd``), names are matched without regard to case, text after the pattern is ignored, and
fields out of range roll over (lenient: month 13 is January of the next year). Two-digit years
fall in the 100 years starting 80 years before ``pivot_year``; Java anchors that window at the
time the format was created, which the caller decides.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from headrace.components.java.temporal import timestamp_from_millis, to_millis
from headrace.sdk.data import described

MONTHS: tuple[str, ...] = ("January", "February", "March", "April", "May", "June", "July")
MONTHS += ("August", "September", "October", "November", "December")
DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")

_SUPPORTED = "yMdHhmsSEazZX"
_JAVA_LETTERS = "GyYMLwWDdFEuaHkKhmsSzZX"
_NUMERIC = "ydHhmsS"


@dataclass(frozen=True)
class _Field:
    letter: str
    count: int

    @property
    def numeric(self) -> bool:
        return self.letter in _NUMERIC or (self.letter == "M" and self.count < 3)


_Token = str | _Field


@dataclass(frozen=True)
class DatePattern:
    """A compiled pattern: ``format`` an instant, ``parse`` text back to one."""

    pattern: str
    tokens: tuple[_Token, ...]
    pivot_year: int
    regex: re.Pattern[str]

    def format(self, millis: int) -> str:
        """The instant ``millis`` (since the epoch) written in UTC."""
        moment = timestamp_from_millis(millis)
        return "".join(t if isinstance(t, str) else _format_field(t, moment) for t in self.tokens)

    def parse(self, text: str) -> int:
        """Milliseconds since the epoch of the instant ``text`` writes; ValueError if it does
        not match the pattern."""
        match = self.regex.match(text)
        if match is None:
            raise ValueError(f"{described(text)} does not match pattern {self.pattern!r}")
        fields = [t for t in self.tokens if isinstance(t, _Field)]
        return _resolve(list(zip(fields, match.groups(), strict=True)), self.pivot_year)


def compile_pattern(pattern: str, pivot_year: int = 2000) -> DatePattern:
    """``pattern`` tokenised; ValueError naming a letter it does not support."""
    tokens: list[_Token] = []
    literal: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "'":
            end, text = _quoted(pattern, i)
            literal.append(text)
            i = end
        elif c.isascii() and c.isalpha():
            count = len(pattern) - i - len(pattern[i:].lstrip(c))
            _check_letter(c, count)
            if literal:
                tokens.append("".join(literal))
                literal = []
            tokens.append(_Field(c, count))
            i += count
        else:
            literal.append(c)
            i += 1
    if literal:
        tokens.append("".join(literal))
    return DatePattern(pattern, tuple(tokens), pivot_year, _parser(tokens))


def _parser(tokens: list[_Token]) -> re.Pattern[str]:
    """A regex with one group per field; a number abutting another takes its letter count."""
    parts: list[str] = []
    for i, token in enumerate(tokens):
        if isinstance(token, str):
            parts.append(re.escape(token))
            continue
        following = tokens[i + 1] if i + 1 < len(tokens) else None
        abutting = isinstance(following, _Field) and following.numeric
        parts.append(f"({_field_regex(token, abutting)})")
    return re.compile("".join(parts))


def _quoted(pattern: str, start: int) -> tuple[int, str]:
    """The end of the quoted text at ``start`` and that text (``''`` is one quote)."""
    if pattern.startswith("''", start):
        return start + 2, "'"
    text: list[str] = []
    i = start + 1
    while i < len(pattern):
        if pattern[i] == "'":
            if pattern.startswith("''", i):
                text.append("'")
                i += 2
                continue
            return i + 1, "".join(text)
        text.append(pattern[i])
        i += 1
    raise ValueError(f"unterminated quote at position {start}")


def _check_letter(letter: str, count: int) -> None:
    if letter not in _JAVA_LETTERS:
        raise ValueError(f"illegal pattern character {letter!r}")
    if letter not in _SUPPORTED:
        raise ValueError(
            f"pattern letter {letter!r} is not supported (supported: {', '.join(_SUPPORTED)})"
        )
    if letter == "X" and count > 3:
        raise ValueError("pattern letter 'X' takes at most 3 letters")


def _format_field(field: _Field, moment: datetime) -> str:
    letter, count = field.letter, field.count
    if letter == "y":
        return f"{moment.year % 100:02d}" if count == 2 else f"{moment.year:0{count}d}"
    if letter == "M" and count >= 3:
        name = MONTHS[moment.month - 1]
        return name if count >= 4 else name[:3]
    if letter == "E":
        name = DAYS[moment.weekday()]
        return name if count >= 4 else name[:3]
    if letter == "a":
        return "AM" if moment.hour < 12 else "PM"
    if letter == "z":
        return "Coordinated Universal Time" if count >= 4 else "UTC"
    if letter == "Z":
        return "+0000"
    if letter == "X":
        return "Z"
    number = {
        "M": moment.month,
        "d": moment.day,
        "H": moment.hour,
        "h": moment.hour % 12 or 12,
        "m": moment.minute,
        "s": moment.second,
        "S": moment.microsecond // 1000,
    }[letter]
    return f"{number:0{count}d}"


def _field_regex(field: _Field, abutting: bool) -> str:
    if field.numeric:
        return rf"\d{{{field.count}}}" if abutting else r"\d+"
    if field.letter == "M":
        return "(?i:" + "|".join(sorted({*MONTHS, *(m[:3] for m in MONTHS)}, key=len)[::-1]) + ")"
    if field.letter == "E":
        return "(?i:" + "|".join(sorted({*DAYS, *(d[:3] for d in DAYS)}, key=len)[::-1]) + ")"
    if field.letter == "a":
        return "(?i:AM|PM)"
    if field.letter in "zZ":
        # Java reads either form of zone for either letter: names, GMT+hh:mm, RFC 822 +hhmm.
        return r"(?i:Coordinated Universal Time|UTC|GMT(?:[+-]\d{1,2}(?::?\d{2})?)?)|[+-]\d{4}"
    return r"Z|[+-]\d{2}(?::?\d{2})?"


def _resolve(values: list[tuple[_Field, str]], pivot_year: int) -> int:
    """The instant the parsed fields name, computed leniently (out-of-range values roll over)."""
    parts = {"y": 1970, "M": 1, "d": 1, "H": 0, "m": 0, "s": 0, "S": 0}
    twelve_hour: int | None = None
    pm = False
    offset_minutes = 0
    for field, text in values:
        letter = field.letter
        if letter == "y":
            parts["y"] = _year(text, field.count, pivot_year)
        elif letter == "M":
            parts["M"] = int(text) if field.numeric else _month(text)
        elif letter == "h":
            twelve_hour = int(text)
        elif letter == "a":
            pm = text.upper() == "PM"
        elif letter in "zZX":
            offset_minutes = _offset_minutes(text)
        elif letter in parts:
            parts[letter] = int(text)
    hour = parts["H"] if twelve_hour is None else twelve_hour % 12 + (12 if pm else 0)
    year, month = divmod(parts["y"] * 12 + parts["M"] - 1, 12)
    try:
        start = datetime(year, month + 1, 1, tzinfo=UTC)
        moment = start + timedelta(
            days=parts["d"] - 1,
            hours=hour,
            minutes=parts["m"] - offset_minutes,
            seconds=parts["s"],
            milliseconds=parts["S"],
        )
    except (ValueError, OverflowError):
        raise ValueError("the date is outside years 1 to 9999") from None
    return to_millis(moment)


def _year(text: str, count: int, pivot_year: int) -> int:
    if count <= 2 and len(text) == 2:
        start = pivot_year - 80
        year = start - start % 100 + int(text)
        return year + 100 if year < start else year
    return int(text)


def _month(text: str) -> int:
    lowered = text.lower()
    return next(i + 1 for i, m in enumerate(MONTHS) if m.lower().startswith(lowered[:3]))


def _offset_minutes(text: str) -> int:
    """Minutes east of UTC of a parsed zone: a name (UTC, GMT) or an offset."""
    offset = text.upper().removeprefix("GMT")
    if not offset or offset[0] not in "+-":
        return 0
    hours, _, minutes = offset[1:].partition(":")
    if not minutes and len(hours) > 2:
        hours, minutes = hours[:-2], hours[-2:]
    total = int(hours) * 60 + int(minutes or 0)
    return -total if offset[0] == "-" else total
