"""``date_bin`` and ``OVERLAPS`` on the DuckDB route as PostgreSQL computes them (rules of
:mod:`lakegate.gateway.dialect`); ``justify_hours``/``justify_days``/``justify_interval`` keep their names and
call the macros of :mod:`lakegate.connectors.duckdb.pgdatetime`.

* ``date_bin(stride, x, origin)`` of a timestamp or a timestamptz: ``pg_date_bin`` (rounding toward minus
  infinity, infinities as they are, PostgreSQL's errors); DuckDB's ``time_bucket``, which sqlglot writes, bins
  otherwise. A timestamptz binned from an origin the statement writes as text is refused outside UTC (the text
  is read in the session's zone);
* ``make_interval`` (positional or named arguments): ``pg_make_interval`` (seconds rounded to microseconds half
  to even, as PostgreSQL's ``rint``);
* ``(a, b) OVERLAPS (c, d)``: ``pg_overlaps`` (each pair's lesser end first, PostgreSQL's NULL rules); the end
  may be an interval added to the start, except to a timestamptz outside UTC (calendar arithmetic in the
  session's zone) or to a time of day (which wraps around midnight).
"""

from __future__ import annotations

import re

from sqlglot import exp

from lakegate.gateway.dialect import Rule, call, cast, refusal
from lakegate.gateway.pgtype import PgType
from lakegate.gateway.pgtyping import Typer


def _date_bin(node: exp.Expr, types: Typer) -> exp.Expr | None:
    if not isinstance(node, exp.Anonymous) or node.name.lower() != "date_bin":
        return None
    if len(node.expressions) != 3:
        raise refusal(node, f"date_bin() with {len(node.expressions)} arguments")
    stride, value, origin = node.expressions
    typ, origin_type = types.of(value), types.of(origin)
    if typ is None or not typ.is_("timestamp", "timestamptz"):
        raise refusal(node, f"date_bin() of a {typ.typname if typ is not None else 'value of unknown type'}")
    zoned = typ.is_("timestamptz")
    if zoned and types.zone != "UTC" and not (origin_type is not None and origin_type.is_("timestamptz")):
        raise refusal(node, f"date_bin() of a timestamptz from an origin read in the time zone {types.zone}")
    target = "TIMESTAMPTZ" if zoned else "TIMESTAMP"
    return call("pg_date_bin", cast(stride.copy(), "INTERVAL"), value.copy(), cast(origin.copy(), target))


def _overlaps(node: exp.Expr, types: Typer) -> exp.Expr | None:
    if not isinstance(node, exp.Overlaps):
        return None
    ends: list[exp.Expr] = []
    for pair in (node.this, node.expression):
        items = pair.expressions if isinstance(pair, exp.Tuple) else []
        if len(items) != 2:
            raise refusal(node, "OVERLAPS of other than two pairs")
        start, end = items
        start_type, end_type = types.of(start), types.of(end)
        if end_type is not None and end_type.is_("interval"):
            if start_type is None or not start_type.is_("timestamp", "date", "timestamptz"):
                raise refusal(node, "OVERLAPS with an interval added to other than a date or timestamp")
            if start_type.is_("timestamptz") and types.zone != "UTC":
                raise refusal(
                    node, f"OVERLAPS with an interval added to a timestamptz in the time zone {types.zone}"
                )
            end = exp.Add(this=start.copy(), expression=end.copy())
        else:
            end = end.copy()
        ends += [start.copy(), end]
    return call("pg_overlaps", *ends)


_FIELDS = ("year", "month", "week", "day", "hour", "minute", "second")


def _make_interval(node: exp.Expr, types: Typer) -> exp.Expr | None:
    """make_interval(years, months, weeks, days, hours, mins, secs), positional or named: the fields
    PostgreSQL computes (sqlglot writes the arguments into an interval's text, which only literals survive)."""
    if not isinstance(node, exp.MakeInterval):
        return None
    values: list[exp.Expr] = []
    for name in _FIELDS:
        value = node.args.get(name)
        if isinstance(value, exp.Kwarg):
            value = value.expression
        values.append(value.copy() if value is not None else exp.Literal.number(0))
    return call("pg_make_interval", *values)


#: PostgreSQL's ISO form of a date (and time of day) before year 1: "0044-03-15 BC", "0044-03-15 12:00:00 BC"
_BC = re.compile(r"\s*(\d+-\d\d?-\d\d?)((?:[ T]\d\d?:\d\d(?::\d\d(?:\.\d+)?)?)?)\s+BC\s*", re.IGNORECASE)
_DATED = (exp.DType.DATE, exp.DType.TIMESTAMP)
_COMPARE = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.NullSafeEQ, exp.NullSafeNEQ)


def _bc_literal(node: exp.Expr, types: Typer) -> exp.Expr | None:
    """A date or timestamp literal before year 1 (``'0044-03-15 BC'``) in DuckDB's spelling (``'0044-03-15 (BC)'``):
    DuckDB read the PostgreSQL form as the year 44 AD."""
    if isinstance(node, exp.Cast) and node.to.this in _DATED:
        literals = [node.this]
    elif isinstance(node, _COMPARE):
        pairs = [(node.this, node.expression), (node.expression, node.this)]
        literals = [a for a, b in pairs if _dated(types.of(b))]
    elif isinstance(node, exp.In | exp.Between):
        literals = (
            [*node.expressions, *(node.args.get(k) for k in ("low", "high"))]
            if _dated(types.of(node.this))
            else []
        )
    else:
        return None
    for literal in literals:
        if isinstance(literal, exp.Literal) and literal.is_string and re.search(r"(?i)\bBC\b", literal.this):
            found = _BC.fullmatch(literal.this)
            if found is None:
                raise refusal(
                    node, f"the date {literal.this!r} (the lake route reads BC dates as 0044-03-15 BC)"
                )
            literal.replace(exp.Literal.string(f"{found.group(1)} (BC){found.group(2).replace('T', ' ')}"))
    return None


def _dated(typ: PgType | None) -> bool:
    return typ is not None and typ.is_("date", "timestamp")


def _make_timestamptz(node: exp.Expr, types: Typer) -> exp.Expr | None:
    """make_timestamptz(y, m, d, h, mi, s) reads the local time in the session's time zone (DuckDB: in UTC)."""
    if not (isinstance(node, exp.Anonymous) and node.name.lower() == "make_timestamptz"):
        return None
    if len(node.expressions) != 6 or types.zone == "UTC":
        return None
    return call("make_timestamptz", *node.expressions, exp.Literal.string(types.zone))


def _date_difference(node: exp.Expr, types: Typer) -> exp.Expr | None:
    """``date - date`` of an infinite date is PostgreSQL's error (22008); DuckDB subtracted its sentinels."""
    if not isinstance(node, exp.Sub):
        return None
    left, right = types.of(node.this), types.of(node.expression)
    if left is None or right is None or not left.is_("date", "unknown") or not right.is_("date", "unknown"):
        return None
    if left.is_("unknown") and right.is_("unknown"):
        return None
    values = [
        cast(v, "DATE") if t.is_("unknown") else v for v, t in ((node.this, left), (node.expression, right))
    ]
    return exp.Anonymous(this="pg_date_difference", expressions=values)  # 'text' - date is date - date


def _age_of_literals(node: exp.Expr, types: Typer) -> exp.Expr | None:
    """``age('...', '...')``: PostgreSQL reads string literals as timestamptz (its datetime category's preferred
    type; DuckDB could not choose); computed so only where the session zone is UTC (else refused by name)."""
    if not (isinstance(node, exp.Anonymous) and node.name.lower() == "age" and len(node.expressions) == 2):
        return None
    kinds = [types.of(arg) for arg in node.expressions]
    if not all(k is not None and k.is_("unknown") for k in kinds):
        return None  # the other argument's type decides
    if types.zone != "UTC":
        raise refusal(node, f"age() of text literals in the time zone {types.zone}")
    return call("age", *(cast(a, "TIMESTAMPTZ") for a in node.expressions))


RULES: list[Rule] = [
    _date_bin,
    _overlaps,
    _make_interval,
    _bc_literal,
    _make_timestamptz,
    _date_difference,
    _age_of_literals,
]
