"""Interval literals on the lake route as PostgreSQL reads them.

sqlglot splits PostgreSQL's ``interval '1 mon'`` into a number and a unit word (``INTERVAL '1' MON``) and writes
it back that way for DuckDB, whose grammar knows only the SQL standard's unit keywords there: ``mon``, ``mons``,
``mins``, ``secs``, ``hrs``... (PostgreSQL's abbreviations) were a DuckDB syntax error (found by the differential
fuzzer). Such a literal goes back to one string, ``INTERVAL '1 mon'``, which DuckDB's interval parser reads as
PostgreSQL does. Only a plain number with a unit word is joined: a literal with a field restriction
(``interval '1 year 2 months' year``) keeps sqlglot's reading.

Two intervals compared (``=``, ``<>``, ``<``, ``BETWEEN`` ...) compare PostgreSQL's one span of each
(``pg_interval_span``: a month is 30 days): ``'1 mon -1 day' = '29 days'`` is true in PostgreSQL, and DuckDB, which
carries days into months first, said false; so are ``IN`` lists, sorts (``ORDER BY``, also of windows and
aggregates) and ``min``/``max``. (Grouping, DISTINCT and set operations of such intervals still follow DuckDB:
listed in ``tests/fuzz/open.sql``.)
"""

from __future__ import annotations

import re

from sqlglot import exp

from lakegate.gateway.dialect import Rule
from lakegate.gateway.pgtyping import Typer

_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?")


def _joined(node: exp.Expr, types: Typer) -> exp.Expr | None:
    if not isinstance(node, exp.Interval):
        return None
    unit, value = node.args.get("unit"), node.this
    if not isinstance(unit, exp.Var) or not isinstance(value, exp.Literal) or not value.is_string:
        return None
    if not _NUMBER.fullmatch(value.name.strip()):
        return None
    return exp.Interval(this=exp.Literal.string(f"{value.name.strip()} {unit.name.lower()}"))


_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.NullSafeEQ, exp.NullSafeNEQ)


def _span(value: exp.Expr, types: Typer) -> exp.Expr:
    typ = types.of(value)
    if typ is not None and typ.is_("unknown"):  # a string literal compared with an interval is one
        value = exp.Cast(this=value, to=exp.DataType.build("INTERVAL"))
    return exp.Anonymous(this="pg_interval_span", expressions=[value])


def _interval(value: exp.Expr | None, types: Typer, literal_ok: bool) -> bool:
    typ = types.of(value) if isinstance(value, exp.Expr) else None
    return typ is not None and (typ.is_("interval") or literal_ok and typ.is_("unknown"))


def _compared(node: exp.Expr, types: Typer) -> exp.Expr | None:
    """Intervals compared by PostgreSQL's span of each."""
    if isinstance(node, _COMPARISONS):
        left, right = node.this, node.expression
        one = _interval(left, types, False) and _interval(right, types, True)
        other = _interval(right, types, False) and _interval(left, types, True)
        if not (one or other):
            return None
        return type(node)(this=_span(left, types), expression=_span(right, types))
    if isinstance(node, exp.Between) and _interval(node.this, types, False):
        low, high = node.args.get("low"), node.args.get("high")
        if not (_interval(low, types, True) and _interval(high, types, True)):
            return None
        assert low is not None and high is not None
        spans = {"this": _span(node.this, types), "low": _span(low, types), "high": _span(high, types)}
        return exp.Between(**{**node.args, **spans})  # SYMMETRIC kept
    if isinstance(node, exp.In) and node.expressions and _interval(node.this, types, False):
        if not all(_interval(e, types, True) for e in node.expressions):
            return None
        listed = [_span(e, types) for e in node.expressions]
        return exp.In(**{**node.args, "this": _span(node.this, types), "expressions": listed})
    return None


def _ordered(node: exp.Expr, types: Typer) -> exp.Expr | None:
    """Intervals sorted, and their min/max, by PostgreSQL's span (DuckDB put '29 days 01:00' before
    '1 mon -1 day'); of two equal spans PostgreSQL's min/max keep either, as the rows come."""
    within = node.parent.parent if node.parent is not None else None
    if (
        isinstance(node, exp.Ordered)
        and _interval(node.this, types, False)
        and not isinstance(within, exp.WithinGroup)  # percentile_*: the value itself is the answer
    ):
        return exp.Ordered(**{**node.args, "this": _span(node.this, types)})
    if isinstance(node, exp.Min | exp.Max) and not node.expressions and _interval(node.this, types, False):
        pick = "arg_min" if isinstance(node, exp.Min) else "arg_max"
        return exp.Anonymous(this=pick, expressions=[node.this, _span(node.this.copy(), types)])
    return None


RULES: list[Rule] = [_joined, _compared, _ordered]
