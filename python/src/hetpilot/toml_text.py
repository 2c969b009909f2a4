"""The TOML text of a value as the CLI writes it (Rust's ``toml`` crate, whose writer is
``toml_writer``): an application file's ``params`` value that is not a string (a number,
a boolean, a date or time, an array, a table) becomes its TOML text, so Python gives the
task the very text ``hetpilot submit FILE`` gives it. Strings pick the first encoding
that holds them as they are (basic, literal, multi-line basic, multi-line literal),
floats are written in full without an exponent, and tables list their keys in order."""

from __future__ import annotations

import datetime
import math
from decimal import Decimal
from typing import Any


def _bare(c: str) -> bool:
    """A character of an unquoted key: ``A-Z a-z 0-9 - _``."""
    return c.isascii() and (c.isalnum() or c in "-_")


def _control(c: str) -> bool:
    """An ASCII control character other than tab (these need an escape)."""
    o = ord(c)
    return (o <= 0x1F and c != "\t") or o == 0x7F


def _longest_run(s: str, quote: str) -> int:
    longest = run = 0
    for c in s:
        run = run + 1 if c == quote else 0
        longest = max(longest, run)
    return longest


def _escaped(s: str, multi_line: bool) -> str:
    """``s`` inside a basic string: at most two quotes in a row in a multi-line one."""
    most_quotes = 2 if multi_line else 0
    out = []
    quotes = 0
    named = {"\b": "\\b", "\t": "\\t", "\f": "\\f", "\r": "\\r", "\\": "\\\\"}
    for c in s:
        if c == '"':
            quotes += 1
            if quotes > most_quotes:
                out.append('\\"')
                quotes = 0
                continue
        else:
            quotes = 0
        if c in named:
            out.append(named[c])
        elif c == "\n" and not multi_line:
            out.append("\\n")
        elif c != "\n" and _control(c):
            out.append(f"\\u{ord(c):04X}")
        else:
            out.append(c)
    return "".join(out)


def string(s: str) -> str:
    """A string value's TOML text."""
    if all(_bare(c) or c in "./ :" for c in s):
        return f'"{s}"'
    singles, doubles = _longest_run(s, "'"), _longest_run(s, '"')
    controls = any(_control(c) and c != "\n" for c in s)
    backslash, newline = "\\" in s, "\n" in s
    if not (controls or backslash or doubles or newline):
        return f'"{_escaped(s, False)}"'
    if not (controls or singles or newline):
        return f"'{s}'"
    lead = "\n" if newline else ""
    if not (controls or backslash or doubles > 2):
        return f'"""{lead}{_escaped(s, True)}"""'
    if not (controls or singles > 2):
        return f"'''{lead}{s}'''"
    if newline:
        return f'"""{lead}{_escaped(s, True)}"""'
    return f'"{_escaped(s, False)}"'


def key(k: str) -> str:
    """A table key's TOML text: bare when it can be."""
    if k and all(_bare(c) for c in k):
        return k
    controls = any(_control(c) for c in k)
    if not (controls or "\\" in k or '"' in k):
        return f'"{_escaped(k, False)}"'
    if not (controls or "'" in k):
        return f"'{k}'"
    return f'"{_escaped(k, False)}"'


def _float(x: float) -> str:
    if math.isnan(x):
        return "nan"
    if x == 0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    # The shortest digits that read back as x (Python's repr and Rust's Display agree on
    # them), written out in full.
    text = format(Decimal(repr(x)), "f")
    if x % 1.0 == 0.0:
        return text.split(".")[0] + ".0"
    return text


def _time(t: datetime.time) -> str:
    fraction = f".{t.microsecond:06d}".rstrip("0") if t.microsecond else ""
    return f"{t.hour:02d}:{t.minute:02d}:{t.second:02d}{fraction}"


def _date(d: datetime.date) -> str:
    return f"{d.year:04d}-{d.month:02d}-{d.day:02d}"


def _offset(d: datetime.datetime) -> str:
    offset = d.utcoffset()
    if offset is None:
        return ""
    minutes = int(offset.total_seconds()) // 60
    if minutes == 0:
        return "Z"
    sign = "+" if minutes > 0 else "-"
    return f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def value(v: Any) -> str:
    """The TOML text of ``v``, a value as :mod:`tomllib` reads it."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return _float(v)
    if isinstance(v, str):
        return string(v)
    if isinstance(v, datetime.datetime):
        return f"{_date(v)}T{_time(v.timetz())}{_offset(v)}"
    if isinstance(v, datetime.date):
        return _date(v)
    if isinstance(v, datetime.time):
        return _time(v)
    if isinstance(v, list):
        return "[" + ", ".join(value(x) for x in v) + "]"
    if isinstance(v, dict):
        if not v:
            return "{}"
        return "{ " + ", ".join(f"{key(k)} = {value(v[k])}" for k in sorted(v)) + " }"
    raise ValueError(f"a TOML value cannot be {type(v).__name__}")
