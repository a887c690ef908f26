"""``to_char`` of integers and numerics with PostgreSQL's plainest number patterns (a function of the gateway's
DuckDB; :mod:`lakegate.gateway.dialect_formats` calls it).

The patterns taken: an optional ``FM``, digit groups of ``9`` and ``0`` separated by single ``,``, and an optional
``.`` followed by ``9``/``0`` digits (``'999'``, ``'0000'``, ``'FM999,999.00'``, ``'9990.00'``). They are
computed as PostgreSQL's ``numeric_to_char`` does: the value rounded half away from zero to the pattern's
decimals; a sign position before the number (a space, or ``-`` just before the first character shown); ``9`` a
digit or a space before the number begins, ``0`` and every position after the first ``0`` a digit; a ``,`` shown
once a digit is; a zero integer part not shown before the point (unless a ``0`` asks for it), shown alone for a
pattern without a point; ``#`` in every digit position when the integer part has more digits than the pattern;
``FM`` dropping the padding and the trailing zeros of ``9`` decimals (``0.`` when nothing is left). Compared with
PostgreSQL 18 on about 300 such patterns x 730 values (0 differences) before the differential corpus. Floats
take the same patterns through :func:`float_to_char` (compared with PostgreSQL 18 on 17 patterns x 800 float4 and
float8 values). Other patterns (``S``, ``MI``, ``PR``, ``D``, ``G``, ``EEEE``, ``V``, ``RN``, ``TH``, a ``.``
without decimals, a leading or doubled ``,``) are refused by the gateway. Written by hand: no library formats
numbers as PostgreSQL does.
"""

from __future__ import annotations

import math
import re
import struct
from decimal import ROUND_HALF_UP, Decimal

import duckdb
import pyarrow as pa

PATTERN = re.compile(r"(FM)?([90]+(?:,[90]+)*)(?:\.([90]+))?")


def to_char(value: str, pattern: str, negative: bool | None = None) -> str:
    """``to_char(value, pattern)`` for a number's exact text and a :data:`PATTERN` (``negative``: the sign
    shown, where not the rounded value's: a float's text keeps the sign of ``-0``)."""
    found = PATTERN.fullmatch(pattern)
    if not found:
        raise ValueError(f"the to_char pattern {pattern!r} is not one the lake route computes")
    fill, before, after = bool(found.group(1)), found.group(2), found.group(3) or ""
    pre, post = sum(1 for c in before if c in "90"), len(after)
    number = Decimal(value).quantize(Decimal(1).scaleb(-post), rounding=ROUND_HALF_UP)
    negative = number < 0 if negative is None else negative
    whole, _, fraction = format(abs(number), "f").partition(".")
    whole = "" if whole == "0" else whole
    if len(whole) > pre:
        shown = "".join("#" if c in "90" else c for c in before) + ("." + "#" * post if post else "")
        return ("-" if negative else "" if fill else " ") + shown
    chars, started = _whole(before, whole, fill)
    decimals = list(fraction.ljust(post, "0"))
    if fill:
        while decimals and decimals[-1] == "0" and after[len(decimals) - 1] == "9":
            decimals.pop()
    if not started:
        if not post:
            chars[-1] = "0"
        elif fill and not decimals:
            chars.append("0")
    shown = "".join(chars) + ("." + "".join(decimals) if post else "")
    if fill:
        return ("-" if negative else "") + shown
    if not negative:
        return " " + shown
    lead = len(shown) - len(shown.lstrip(" "))
    return " " * lead + "-" + shown[lead:]


def float_to_char(text: str, pattern: str, single: bool) -> str:
    """``to_char(value, pattern)`` of a float8 (float4 when ``single``) DuckDB wrote as ``text``, as
    ``float8_to_char`` computes it: C's ``%.*f`` of the value (correctly rounded from its binary value, half to
    even), with the pattern's decimals cut so that at most 15 (float4: 6) significant digits are written
    (none and no point when the integer part has as many), then the number pattern's layout."""
    value = float(text)
    if single:
        value = struct.unpack("f", struct.pack("f", value))[0]
    found = PATTERN.fullmatch(pattern)
    if not found:
        raise ValueError(f"the to_char pattern {pattern!r} is not one the lake route computes")
    if not math.isfinite(value):
        raise ValueError(
            f"to_char() of {text}: PostgreSQL writes NaN and the infinities through the pattern's digit "
            "positions; the lake route does not (filter them out, or run the query on a PostgreSQL source)"
        )
    fill, before, after = found.group(1) or "", found.group(2), found.group(3) or ""
    limit = 6 if single else 15
    whole = len(f"{abs(value):.0f}")
    post = 0 if whole >= limit else min(len(after), limit - whole)
    digits = f"{value:.{post}f}"
    if post < len(after) and whole > sum(1 for c in before if c in "90"):
        raise ValueError(
            f"to_char() of {text} with the pattern {pattern!r}: more integer digits than the pattern has, with "
            "decimals PostgreSQL cuts to the float's precision (its '#' layout then differs): not on the lake "
            "route; run the query on a PostgreSQL source"
        )
    cut = fill + before + ("." + after[:post] if post else "")
    return to_char(digits, cut, negative=digits.startswith("-"))


def _whole(before: str, whole: str, fill: bool) -> tuple[list[str], bool]:
    """The integer part's characters (blank positions as spaces, or nothing in fill mode), and whether any
    digit is shown."""
    digits = [i for i, c in enumerate(before) if c in "90"]
    zeros_from = before.find("0")
    first = len(digits) - len(whole)
    chars: list[str] = []
    started = False
    for at, c in enumerate(before):
        if c == ",":
            chars.append("," if started else "" if fill else " ")
            continue
        position = digits.index(at)
        if position >= first:
            chars.append(whole[position - first])
            started = True
        elif zeros_from >= 0 and at >= zeros_from:
            chars.append("0")
            started = True
        else:
            chars.append("" if fill else " ")
    return chars, started


def _udf(values: pa.Array, patterns: pa.Array) -> pa.Array:
    rows = zip(values.to_pylist(), patterns.to_pylist(), strict=True)
    return pa.array([None if v is None or p is None else to_char(v, p) for v, p in rows], type=pa.string())


def _float_udf(values: pa.Array, patterns: pa.Array, single: pa.Array) -> pa.Array:
    rows = zip(values.to_pylist(), patterns.to_pylist(), single.to_pylist(), strict=True)
    return pa.array(
        [None if v is None or p is None else float_to_char(v, p, bool(s)) for v, p, s in rows], type=pa.string()
    )


def register(con: duckdb.DuckDBPyConnection) -> None:
    """Create ``pg_to_char_number(text, pattern)`` and ``pg_to_char_float(text, pattern, single)`` in ``con``."""
    con.create_function(  # type: ignore[call-overload]
        "pg_to_char_number", _udf, ["VARCHAR", "VARCHAR"], "VARCHAR", type="arrow", null_handling="special"
    )
    con.create_function(  # type: ignore[call-overload]
        "pg_to_char_float",
        _float_udf,
        ["VARCHAR", "VARCHAR", "BOOLEAN"],
        "VARCHAR",
        type="arrow",
        null_handling="special",
    )
