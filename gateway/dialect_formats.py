"""``to_char(date or timestamp, pattern)`` on the DuckDB route (a rule of :mod:`lakegate.gateway.dialect`): the
common template patterns of PostgreSQL translated to DuckDB's ``strftime``; a pattern with anything else is
refused with a 400 that names the part.

Written by hand (sqlglot's own translation loses ``FM``, the padding of ``Month``/``Day`` and ``AM``, so the
gateway's parser keeps ``to_char`` as written, see :mod:`lakegate.gateway.pgdialect`). Supported: ``YYYY YY MM
DD DDD HH24 HH12 HH MI SS MS US AM PM am pm``, ``Mon MON mon Month MONTH month Dy DY dy Day DAY day`` (``Month``
and ``Day`` blank-padded to 9 as PostgreSQL pads them), ``Q IYYY IW IDDD ID D WW W J CC SSSS SSSSS`` (from DuckDB's
date parts, as formatting.c computes them), the ``FM`` prefix (no padding), double-quoted text and
punctuation. Of an infinite date or timestamp the result is NULL, as in PostgreSQL; a ``timestamptz`` is shown in
the session's time zone. ``to_char`` of an integer or a numeric with a plain number pattern (``9``, ``0``, ``,``,
``.``, ``FM``) is :mod:`lakegate.connectors.duckdb.pgnumformat`'s, of a float too (C's ``%.*f`` of the value
cut to the float's 15 or 6 significant digits, as ``float8_to_char``; NaN and the infinities are a run-time 400);
other number patterns are refused.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import sqlglot
from sqlglot import exp

from lakegate.connectors.duckdb.pgnumformat import PATTERN
from lakegate.gateway.dialect import Rule, call, cast, refusal
from lakegate.gateway.dialect_text import trimmed
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
#: numbers strftime has no code for: pattern -> (DuckDB expression of the date ``v``, zero-padded width), as
#: formatting.c's DCH_to_char computes them
_COMPUTED = {
    "Q": ("quarter(v)", 0),  # (month - 1) / 3 + 1
    "IYYY": ("isoyear(v)", 4),
    "IW": ("weekofyear(v)", 2),  # ISO week
    "IDDD": ("(weekofyear(v) - 1) * 7 + isodow(v)", 3),  # day of the ISO year (not ID followed by DD)
    "ID": ("isodow(v)", 0),  # Monday 1 .. Sunday 7
    "D": ("dayofweek(v) + 1", 0),  # Sunday 1 .. Saturday 7
    "WW": ("(dayofyear(v) - 1) // 7 + 1", 2),  # weeks from January 1st
    "W": ("(day(v) - 1) // 7 + 1", 0),  # weeks from the month's 1st
    "J": ("CAST(julian(CAST(v AS DATE)) AS BIGINT)", 0),  # Julian day
    "CC": ("century(v)", 2),
    "SSSSS": ("hour(v) * 3600 + minute(v) * 60 + second(v)", 0),  # seconds past midnight (not SS twice)
    "SSSS": ("hour(v) * 3600 + minute(v) * 60 + second(v)", 0),
}
_TOKEN = re.compile(
    "|".join(
        sorted((re.escape(t) for t in [*_NUMERIC, *_NAMES, *_MERIDIEM, *_COMPUTED]), key=len, reverse=True)
    )
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
        elif token in _COMPUTED:
            _computed(parts, flush, value, token, fill)
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


def _computed(
    parts: list[exp.Expr], flush: Callable[[], None], value: exp.Expr, token: str, fill: bool
) -> None:
    """A number PostgreSQL's to_char computes itself, zero-padded to its width unless FM (never cut)."""
    flush()
    template, width = _COMPUTED[token]
    number = sqlglot.parse_one(template, read="duckdb").transform(
        lambda n: value.copy() if isinstance(n, exp.Column) and n.name == "v" else n
    )
    if width and not fill:
        parts.append(call("printf", exp.Literal.string(f"%0{width}d"), number))
    else:
        parts.append(cast(number, "VARCHAR"))


#: to_date/to_timestamp patterns read with strptime: pattern -> format (strftime writes it back the same way)
_READ = {"YYYY": "%Y", "MM": "%m", "DD": "%d", "HH24": "%H", "MI": "%M", "SS": "%S", "MS": "%g", "US": "%f"}
_READ_TOKEN = re.compile("|".join(sorted(map(re.escape, _READ), key=len, reverse=True)))


def _to_date(node: exp.Expr, types: Typer) -> exp.Expr | None:
    """``to_date(text, pattern)`` / ``to_timestamp(text, pattern)`` with numeric fields and separators: the text
    read with strptime, and only where strftime writes the value back as exactly that text, which PostgreSQL
    reads the same way (other text — '2024-3-5', '2024-02-30', extra spaces — is a run-time 400 naming it)."""
    name = node.name.lower() if isinstance(node, exp.Anonymous) else ""
    if name not in ("to_date", "to_timestamp") or len(node.expressions) != 2:
        return None
    text, pattern = node.expressions
    if not (isinstance(pattern, exp.Literal) and pattern.is_string):
        raise refusal(node, f"{name}() with a pattern that is not a literal")
    fmt = _read_format(node, name, pattern.this)
    typ = types.of(text)
    if typ is None or not typ.string:
        raise refusal(node, f"{name}() of {typ.name if typ else 'this value'}")
    value = trimmed(text.copy(), typ)
    literal = exp.Literal.string(fmt)
    parsed = call("try_strptime", value.copy(), literal)
    exact = exp.EQ(this=call("strftime", parsed.copy(), literal.copy()), expression=value.copy())
    message = exp.DPipe(
        this=exp.Literal.string(f"{name}() of '"),
        expression=exp.DPipe(
            this=value.copy(),
            expression=exp.Literal.string(
                f"' with the pattern '{pattern.this}': the lake route reads only text written exactly as the "
                "pattern writes a value (zero-padded fields, a valid date); run it on a PostgreSQL source"
            ),
        ),
    )
    read: exp.Expr = (
        cast(parsed, "DATE") if name == "to_date" else call("timezone", exp.Literal.string(types.zone), parsed)
    )
    return exp.Case(
        ifs=[
            exp.If(this=exp.Is(this=value.copy(), expression=exp.Null()), true=exp.Null()),
            exp.If(this=call("coalesce", exact, exp.Boolean(this=False)), true=read),
        ],
        default=call("error", message),
    )


def _read_format(node: exp.Expr, name: str, pattern: str) -> str:
    out, at = [], 0
    while at < len(pattern):
        if pattern[at] == '"':
            end = pattern.find('"', at + 1)
            if end < 0:
                raise refusal(node, f"{name}() with an unterminated quoted text in its pattern")
            out.append(pattern[at + 1 : end].replace("%", "%%"))
            at = end + 1
            continue
        match = _READ_TOKEN.match(pattern, at)
        if match is not None:
            out.append(_READ[match.group(0)])
            at = match.end()
            continue
        char = pattern[at]
        if char.isalnum() or char == "\\":
            raise refusal(node, f"{name}() pattern part {pattern[at : at + 4]!r}")
        out.append("%%" if char == "%" else char)
        at += 1
    return "".join(out)


RULES: list[Rule] = [_to_char, _to_date]
