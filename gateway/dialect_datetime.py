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

from sqlglot import exp

from lakegate.gateway.dialect import Rule, call, cast, refusal
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


RULES: list[Rule] = [_date_bin, _overlaps, _make_interval]
