"""Arguments PostgreSQL evaluates only where it needs them (rules of :mod:`lakegate.gateway.dialect`).

An aggregate's arguments and ORDER BY keys are evaluated only for the rows its FILTER keeps: ``sum(100 / x)
FILTER (WHERE x <> 0)`` never divides by zero. DuckDB evaluates them for every row, so each argument that can
fail is computed as ``CASE WHEN <filter> THEN <argument> END`` (NULL, and then filtered out, elsewhere).

``first_value(e)``, ``last_value``, ``nth_value``, ``lag`` and ``lead`` evaluate ``e`` on the row they pick
(``WinGetFuncArgInFrame``): ``first_value(t::bytea)`` raises nothing for a row whose text is no bytea unless
that row is picked, and ``lead(e, n, d)`` evaluates ``d`` only past the partition's end. DuckDB evaluates ``e``
on every row first, so an error PostgreSQL never meets failed the whole query. The argument is computed from
the picked row's columns: ``f(x, y)`` becomes ``f(pick(x), pick(y))`` over the same window (one window, one
order: every pick is of the same row), under a test that a row was picked at all: ``lag(e, n, d)`` becomes
``CASE WHEN lag(TRUE, n, FALSE) THEN f(lag(x, n), ...) ELSE d END``, ``first_value(e)`` ``CASE WHEN
first_value(TRUE) THEN f(first_value(x), ...) END`` (an empty frame picks none). Only arguments made of
columns, literals and row-local operators and functions are rewritten (no subquery, aggregate, window, lambda
or volatile call); a bare column needs nothing. A numeric default with more fraction digits than the value's
decimal (which DuckDB would round it to) takes the same CASE form, in a decimal that holds both.

Written by hand: it is PostgreSQL's evaluation order.
"""

from __future__ import annotations

from sqlglot import exp

from lakegate.gateway import dialect_gaps, dialect_widths
from lakegate.gateway.dialect import Rule
from lakegate.gateway.pgtyping import Typer

_PICKS = (exp.FirstValue, exp.LastValue, exp.NthValue, exp.Lag, exp.Lead)
_VOLATILE = {"random", "clock_timestamp", "timeofday", "gen_random_uuid", "uuid", "setseed"}


def _lazy_pick(node: exp.Expr, types: Typer) -> exp.Expr | None:
    if not isinstance(node, exp.Window) or not isinstance(node.this, _PICKS):
        return None
    pick = node.this
    value = pick.this
    if not isinstance(value, exp.Expr):
        return None
    default = pick.args.get("default")
    if isinstance(default, exp.Null):
        default = None
    widened = bool(dialect_gaps.default_outgrows(pick, types))  # a numeric default the value's decimal rounds
    lazy = not _plain(value) and _row_local(value)
    if (
        not lazy
        and not widened
        or lazy
        and default is not None
        and not widened
        and not _same_kind(value, default, types)
    ):
        return None  # nothing to do, or DuckDB's cast of the default to the value's type stays with the call
    if widened and default is not None:
        dialect_widths.check(node, [value, default], types, f"{pick.key}() and its default")

    def picked(column: exp.Expr, default_value: exp.Expr | None = None) -> exp.Window:
        call = pick.copy()
        call.set("this", column)
        call.set("default", default_value)
        if default_value is not None and call.args.get("offset") is None:
            call.set("offset", exp.Literal.number(1))
        window = node.copy()
        window.set("this", call)
        return window

    if lazy:
        rewritten = value.copy()
        for column in list(rewritten.find_all(exp.Column)):
            column.replace(picked(column.copy()))
    else:
        rewritten = picked(value.copy())
    # no row picked (past the partition, an empty frame): NULL, or lag/lead's default, never f(NULL, ...)
    present = picked(exp.true(), exp.false() if isinstance(pick, exp.Lag | exp.Lead) else None)
    branch = exp.If(this=present, true=rewritten)
    return exp.Case(ifs=[branch], default=default.copy() if default is not None else None)


def _plain(value: exp.Expr) -> bool:
    """A value whose evaluation cannot fail: a column or a literal (or one in parentheses)."""
    while isinstance(value, exp.Paren):
        value = value.this
    return (
        isinstance(value, exp.Column | exp.Literal | exp.Null | exp.Boolean) or value.find(exp.Column) is None
    )


def _row_local(value: exp.Expr) -> bool:
    for node in value.walk():
        if isinstance(node, exp.Subquery | exp.Query | exp.Window | exp.AggFunc | exp.Star | exp.Lambda):
            return False
        if isinstance(node, exp.Column) and isinstance(node.this, exp.Star):
            return False
        if isinstance(node, exp.Func) and (node.name.lower() in _VOLATILE or node.key in _VOLATILE):
            return False
    return True


def _same_kind(value: exp.Expr, default: exp.Expr, types: Typer) -> bool:
    """The default has the value's PostgreSQL type, or is a string literal read as it: DuckDB's CASE then gives
    the branches the type lag/lead would."""
    if isinstance(default, exp.Null):
        return True
    value_type, default_type = types.of(value), types.of(default)
    if value_type is None or default_type is None:
        return False
    return default_type == value_type or default_type.is_("unknown")


def _lazy_filter(node: exp.Expr, types: Typer) -> exp.Expr | None:
    if not isinstance(node, exp.Filter) or not isinstance(node.expression, exp.Where):
        return None
    condition = node.expression.this
    for value in _arguments(node.this):
        value.replace(exp.Case(ifs=[exp.If(this=condition.copy(), true=value.copy())]))
    return None


def _arguments(aggregate: exp.Expr) -> list[exp.Expr]:
    """The arguments and ORDER BY keys of ``aggregate`` whose evaluation may fail."""
    out: list[exp.Expr] = []
    pending: list[exp.Expr] = [
        v
        for value in aggregate.args.values()
        for v in (value if isinstance(value, list) else [value])
        if isinstance(v, exp.Expr)
    ]
    while pending:
        value = pending.pop()
        if isinstance(value, exp.Distinct):
            pending += value.expressions
        elif isinstance(value, exp.Order):
            pending += [o.this for o in value.expressions] + ([value.this] if value.this is not None else [])
        elif isinstance(value, exp.Ordered):
            pending.append(value.this)
        elif not _plain(value) and _row_local(value):
            out.append(value)
    return out


RULES: list[Rule] = [_lazy_filter, _lazy_pick]
