"""Java's text forms of values, where a transformation's output depends on them.

Cast to string gives ``Object.toString`` (``Double.toString`` for floats, ``true`` and ``false``
for booleans, ``BigDecimal.toString`` for decimals); HeaderFrom and InsertHeader give Connect's
``Values.convertToString``, which also writes arrays, maps and structs. Cast from string parses
as ``Long.parseLong`` and ``Double.parseDouble`` do; integers narrow as Java's casts do.
"""

from __future__ import annotations

import base64
import math
import re
from datetime import date, time
from decimal import Decimal
from typing import Any

from headrace.components.java.temporal import (
    MILLIS_PER_DAY,
    date_from_millis,
    time_from_millis,
    to_millis,
)
from headrace.sdk.data import Struct, described
from headrace.sdk.errors import DataError


def double_to_string(x: float) -> str:
    """Java's ``Double.toString``: the shortest digits that round-trip, in plain notation for
    magnitudes in [1e-3, 1e7) and as ``d.dddE<n>`` otherwise."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    sign, digits, exponent = Decimal(repr(x)).as_tuple()
    text = "".join(map(str, digits)).rstrip("0") or "0"
    assert isinstance(exponent, int)  # finite, checked above
    point = len(digits) + exponent  # digits before the decimal point
    prefix = "-" if sign else ""
    if 1e-3 <= abs(x) < 1e7:
        if point <= 0:
            return f"{prefix}0.{'0' * -point}{text}"
        whole, frac = text[:point].ljust(point, "0"), text[point:]
        return f"{prefix}{whole}.{frac or '0'}"
    return f"{prefix}{text[0]}.{text[1:] or '0'}E{point - 1}"


def to_text(value: Any) -> str | None:
    """Connect's ``Values.convertToString``: None stays None."""
    if value is None:
        return None
    out: list[str] = []
    _append(out, value, embedded=False)
    return "".join(out)


def _append(out: list[str], value: Any, embedded: bool) -> None:
    if value is None:
        out.append("null")
    elif isinstance(value, bool):
        out.append("true" if value else "false")
    elif isinstance(value, int):
        out.append(str(value))
    elif isinstance(value, float):
        out.append(double_to_string(value))
    elif isinstance(value, Decimal):
        out.append(str(value))
    elif isinstance(value, str):
        out.append(_quoted(value) if embedded else value)
    elif isinstance(value, bytes | bytearray):
        encoded = base64.b64encode(value).decode("ascii")
        out.append(f'"{encoded}"' if embedded else encoded)
    elif isinstance(value, list | tuple):
        _append_all(out, "[", [(item,) for item in value], "]")
    elif isinstance(value, dict):
        _append_all(out, "{", list(value.items()), "}")
    elif isinstance(value, Struct):
        _append_all(out, "{", [(f.name, value.get(f.name)) for f in value.schema.fields], "}")
    elif isinstance(value, date | time):
        out.append(date_text(to_millis(value)))
    else:
        raise DataError(f"cannot write {described(value)} as text")


def _append_all(out: list[str], opening: str, entries: list[tuple[Any, ...]], closing: str) -> None:
    out.append(opening)
    for i, entry in enumerate(entries):
        if i:
            out.append(",")
        _append(out, entry[0], embedded=True)
        if len(entry) == 2:
            out.append(":")
            _append(out, entry[1], embedded=True)
    out.append(closing)


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def date_text(millis: int) -> str:
    """Connect's ``Values.dateFormatFor``: an instant within the first day after the epoch (or
    before it) as a time, one at midnight as a date, any other as a full timestamp; in UTC."""
    day, clock = date_from_millis(millis), time_from_millis(millis)
    time_text = f"{clock:%H:%M:%S}.{clock.microsecond // 1000:03d}Z"
    if millis < MILLIS_PER_DAY:
        return time_text
    if millis % MILLIS_PER_DAY == 0:
        return f"{day:%Y-%m-%d}"
    return f"{day:%Y-%m-%d}T{time_text}"


_JAVA_INTEGER = re.compile(r"[+-]?[0-9]+")
_JAVA_DOUBLE = re.compile(
    r"[+-]?(?:NaN|Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)[fFdD]?"
)


def parse_integer(text: str, bits: int) -> int:
    """``Byte.parseByte``, ``Short.parseShort``, ``Integer.parseInt`` or ``Long.parseLong``;
    ValueError for text that is not a decimal integer in range."""
    if not _JAVA_INTEGER.fullmatch(text):
        raise ValueError(f"{described(text)} is not an integer")
    number = int(text)
    if not -(2 ** (bits - 1)) <= number < 2 ** (bits - 1):
        raise ValueError(f"{described(text)} is out of range for a {bits}-bit integer")
    return number


def parse_double(text: str) -> float:
    """``Double.parseDouble`` (decimal forms; surrounding whitespace ignored, as in Java)."""
    stripped = text.strip()
    if not _JAVA_DOUBLE.fullmatch(stripped):
        raise ValueError(f"{described(text)} is not a floating-point number")
    stripped = stripped.rstrip("fFdD").replace("Infinity", "inf")
    return float(stripped)


def wrap(number: int, bits: int) -> int:
    """Java's narrowing of an integer to ``bits`` bits: the low bits, two's complement."""
    half = 2 ** (bits - 1)
    return (number + half) % (2 * half) - half


def truncate_double(x: float, bits: int) -> int:
    """Java's cast of a double to an integer type: toward zero, saturating at int (long for 64
    bits), NaN as 0; then, for byte and short, the low bits of that int."""
    wide = 64 if bits == 64 else 32
    if math.isnan(x):
        return 0
    limit = 2 ** (wide - 1)
    whole = -limit if x <= -limit else limit - 1 if x >= limit else int(x)
    return whole if bits >= 32 else wrap(whole, bits)
