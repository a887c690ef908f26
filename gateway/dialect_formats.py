"""``to_char(date or timestamp, pattern)`` on the DuckDB route (a rule of :mod:`lakegate.gateway.dialect`): the
common template patterns of PostgreSQL translated to DuckDB's ``strftime``; a pattern with anything else is
refused with a 400 that names the part.

Written by hand (sqlglot's own translation loses ``FM``, the padding of ``Month``/``Day`` and ``AM``, so the
gateway's parser keeps ``to_char`` as written, see :mod:`lakegate.gateway.pgdialect`). Supported: ``YYYY YY MM
DD DDD HH24 HH12 HH MI SS MS US AM PM am pm``, ``Mon MON mon Month MONTH month Dy DY dy Day DAY day`` (``Month``
and ``Day`` blank-padded to 9 as PostgreSQL pads them), the ``FM`` prefix (no padding), double-quoted text and
punctuation. Of an infinite date or timestamp the result is NULL, as in PostgreSQL; a ``timestamptz`` is shown in
the session's time zone. ``to_char`` of an integer or a numeric with a plain number pattern (``9``, ``0``, ``,``,
``.``, ``FM``) is :mod:`lakegate.connectors.duckdb.pgnumformat`'s, of a float too (C's ``%.*f`` of the value
cut to the float's 15 or 6 significant digits, as ``float8_to_char``; NaN and the infinities are a run-time 400);
other number patterns are refused.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from sqlglot import exp

from lakegate.connectors.duckdb.pgnumformat import PATTERN
from lakegate.gateway.dialect import Rule, call, cast, refusal
from lakegate.gateway.pgtyping import Typer

#: pattern -> strftime (padded) and strftime without padding (FM)
_NUMERIC = {
    "YYYY": ("%Y", "%Y"),
    "HH24": ("%H", "%-H"),
    "HH12": ("%I", "%-I"),
    "DDD": ("%j", "%-j"),
    "YY": ("%y", "%y"),
    "MM": ("%m", "%-m"),
    "DD": ("%d", "%-d"),
    "HH": ("%I", "%-I"),
    "MI": ("%M", "%-M"),
    "SS": ("%S", "%-S"),
    "MS": ("%g", "%g"),
    "US": ("%f", "%f"),
}
#: names: pattern -> (strftime, case, padded width)
_NAMES = {
    "MONTH": ("%B", "upper", 9),
    "Month": ("%B", "", 9),
    "month": ("%B", "lower", 9),
    "MON": ("%b", "upper", 0),
    "Mon": ("%b", "", 0),
    "mon": ("%b", "lower", 0),
    "DAY": ("%A", "upper", 9),
    "Day": ("%A", "", 9),
    "day": ("%A", "lower", 9),
    "DY": ("%a", "upper", 0),
    "Dy": ("%a", "", 0),
    "dy": ("%a", "lower", 0),
}
_MERIDIEM = {"AM": "", "PM": "", "am": "lower", "pm": "lower"}
_TOKEN = re.compile(
    "|".join(sorted((re.escape(t) for t in [*_NUMERIC, *_NAMES, *_MERIDIEM]), key=len, reverse=True))
)


def _to_char(node: exp.Expr, types: Typer) -> exp.Expr | None:
    if not (isinstance(node, exp.Anonymous) and node.name.lower() == "to_char"):
        return None
    if len(node.expressions) != 2:
        raise refusal(node, "to_char() with this number of arguments")
    value, pattern = node.expressions
    source = types.of(value)
    if not (isinstance(pattern, exp.Literal) and pattern.is_string):
        raise refusal(node, "to_char() with a pattern that is not a literal")
    if (
        source is not None
        and source.is_("int2", "int4", "int8", "numeric")
        and PATTERN.fullmatch(pattern.this)
    ):
        return call("pg_to_char_number", cast(value, "VARCHAR"), pattern)  # exact: the value's own digits
    if source is not None and source.is_("float4", "float8") and PATTERN.fullmatch(pattern.this):
        single = exp.Boolean(this=source.is_("float4"))
        return call("pg_to_char_float", cast(value, "VARCHAR"), pattern, single)  # DuckDB's text reads back exactly
    if source is None or not source.is_("date", "timestamp", "timestamptz"):
        raise refusal(
            node,
            f"to_char() of {source.name if source else 'this value'} with the pattern {pattern.this!r} (the lake "
            "route computes 9, 0, ',' and '.' patterns of integers, numerics and floats, and date patterns)",
        )
    if source.is_("timestamptz") and types.zone != "UTC":
        value = call("timezone", exp.Literal.string(types.zone), value)
    parts = _translate(node, pattern.this, value)
    text: exp.Expr = parts[0] if len(parts) == 1 else call("concat", *parts)
    if not parts:
        text = exp.Literal.string("")
    return exp.Case(
        ifs=[
            exp.If(this=exp.Is(this=value.copy(), expression=exp.Null()), true=exp.Null()),
            exp.If(this=call("isinf", value.copy()), true=exp.Null()),
        ],
        default=text,
    )


def _translate(node: exp.Expr, pattern: str, value: exp.Expr) -> list[exp.Expr]:
    """The pattern as DuckDB expressions whose concatenation is PostgreSQL's text."""
    parts: list[exp.Expr] = []
    run: list[str] = []  # a strftime format being collected

    def flush() -> None:
        if run:
            parts.append(call("strftime", value.copy(), exp.Literal.string("".join(run))))
            run.clear()

    at, fill = 0, False
    while at < len(pattern):
        if pattern.startswith("FM", at):
            fill, at = True, at + 2
            continue
        if pattern[at] == '"':
            end = pattern.find('"', at + 1)
            if end < 0:
                raise refusal(node, "to_char() with an unterminated quoted text in its pattern")
            run.append(pattern[at + 1 : end].replace("%", "%%"))
            at, fill = end + 1, False
            continue
        match = _TOKEN.match(pattern, at)
        if match is None:
            char = pattern[at]
            if char.isalpha() or char == "\\":
                raise refusal(node, f"to_char() pattern part {pattern[at : at + 4]!r}")
            run.append("%%" if char == "%" else char)
            at += 1
            continue
        token = match.group(0)
        at = match.end()
        if token in _NUMERIC:
            run.append(_NUMERIC[token][1 if fill else 0])
        elif token in _MERIDIEM:
            _special(parts, flush, value, "%p", _MERIDIEM[token], 0)
        else:
            fmt, case, width = _NAMES[token]
            _special(parts, flush, value, fmt, case, 0 if fill else width)
        fill = False
    flush()
    return parts


def _special(
    parts: list[exp.Expr], flush: Callable[[], None], value: exp.Expr, fmt: str, case: str, width: int
) -> None:
    flush()
    piece: exp.Expr = call("strftime", value.copy(), exp.Literal.string(fmt))
    if case:
        piece = call(case, piece)
    if width:
        piece = call("rpad", piece, exp.Literal.number(width), exp.Literal.string(" "))
    parts.append(piece)


RULES: list[Rule] = [_to_char]
