"""Arguments PostgreSQL evaluates only where it needs them (rules of :mod:`lakegate.gateway.dialect`).

An aggregate's arguments and ORDER BY keys are evaluated only for the rows its FILTER keeps: ``sum(100 / x)
FILTER (WHERE x <> 0)`` never divides by zero. DuckDB evaluates them for every row, so each argument that can
fail is computed as ``CASE WHEN <filter> THEN <argument> END`` (NULL, and then filtered out, elsewhere). A
volatile part of the condition (``random() < 0.5``) is left to the FILTER alone: tested twice it would be drawn
twice; the CASE tests the condition's other conjuncts, or is not written.

``first_value(e)``, ``last_value``, ``nth_value``, ``lag`` and ``lead`` evaluate ``e`` on the row they pick
(``WinGetFuncArgInFrame``): ``first_value(t::bytea)`` raises nothing for a row whose text is no bytea unless
that row is picked, and ``lead(e, n, d)`` evaluates ``d`` only past the partition's end. DuckDB evaluates ``e``
on every row first, so an error PostgreSQL never meets failed the whole query. The argument is computed from
the picked row's columns: ``f(x, y)`` becomes ``f(pick(x), pick(y))`` over the same window (one window, one
order: every pick is of the same row), under a test that a row was picked at all: ``lag(e, n, d)`` becomes
``CASE WHEN lag(TRUE, n, FALSE) THEN f(lag(x, n), ...) WHEN NOT lag(TRUE, n, FALSE) THEN d END`` (a NULL
offset gives NULL, as in PostgreSQL, not ``d``), ``first_value(e)`` ``CASE WHEN first_value(TRUE) THEN
f(first_value(x), ...) END`` (an empty frame picks none). Only arguments made of columns, literals and
row-local operators and functions are rewritten (no subquery, aggregate, window, lambda or volatile call); a
bare column needs nothing. A numeric default with more fraction digits than the value's decimal (which DuckDB
would round it to) takes the same CASE form, in a decimal that holds both; refused where the gateway cannot
tell the value's decimal (a rewritten ``n * 2`` is DuckDB's ``decimal(38, 6)``).

Written by hand: it is PostgreSQL's evaluation order.
"""

from __future__ import annotations

from sqlglot import exp

from lakegate.gateway import dialect_bounds, dialect_gaps, dialect_widths
from lakegate.gateway.dialect import Rule, refusal
from lakegate.gateway.pgtyping import Typer

_PICKS = (exp.FirstValue, exp.LastValue, exp.NthValue, exp.Lag, exp.Lead)
#: volatile for this module's purpose (a second evaluation differs) beyond :func:`dialect_bounds.volatile`'s,
#: whose list is of calls a size bound could depend on
_TIME_VARYING = frozenset({"clock_timestamp", "timeofday"})


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
    # default_outgrows: None when the default is no numeric literal of a numeric value, else whether DuckDB
    # would round it to the value's decimal
    widened = dialect_gaps.default_outgrows(pick, types) is True
    lazy = not _plain(value) and _row_local(value)
    if not widened and not (lazy and (default is None or _same_kind(value, default, types))):
        return None  # nothing to do, or DuckDB's cast of the default to the value's type stays with the call
    if widened and default is not None:
        _check_widened(node, value, default, types)

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
    if not isinstance(pick, exp.Lag | exp.Lead):  # an empty frame picks no row: NULL, never f(NULL, ...)
        return exp.Case(ifs=[exp.If(this=picked(exp.true()), true=rewritten)])
    # lag/lead: TRUE where a row is picked, FALSE past the partition's end (the default's rows), NULL where the
    # offset is NULL (PostgreSQL's answer there is NULL, not the default)
    # (a searched CASE: dialect_scale reads its branches' scales by their conditions)
    present = picked(exp.true(), exp.false())
    branches = [exp.If(this=present, true=rewritten)]
    if default is not None:
        branches.append(exp.If(this=exp.Not(this=present.copy()), true=default.copy()))
    return exp.Case(ifs=branches)


def _check_widened(node: exp.Window, value: exp.Expr, default: exp.Expr, types: Typer) -> None:
    """The CASE of a value and a default of more fraction digits is a decimal that holds both only where the
    gateway knows both shapes (a rewritten ``n * 2`` is DuckDB's decimal(38, 6): the default would be rounded)."""
    literal = default.this if isinstance(default, exp.Neg) else default
    name = node.this.key
    if dialect_widths.shape(value, types) is None or dialect_widths.shape(literal, types) is None:
        raise refusal(
            node,
            f"{name}() of a numeric whose decimal digits the gateway cannot tell, with a default of more "
            "fraction digits (DuckDB would round the default to the value's scale)",
        )
    dialect_widths.check(node, [value, literal], types, f"{name}() and its default")


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
        if _volatile(node):
            return False
    return True


def _volatile(node: exp.Expr) -> bool:
    return (
        dialect_bounds.volatile(node)
        or isinstance(node, exp.Anonymous)
        and node.name.lower() in _TIME_VARYING
    )


def _same_kind(value: exp.Expr, default: exp.Expr, types: Typer) -> bool:
    """The default has the value's PostgreSQL type, or is a string literal read as it: DuckDB's CASE then gives
    the branches the type lag/lead would."""
    value_type, default_type = types.of(value), types.of(default)
    if value_type is None or default_type is None:
        return False
    return default_type == value_type or default_type.is_("unknown")


def _lazy_filter(node: exp.Expr, types: Typer) -> exp.Expr | None:
    if not isinstance(node, exp.Filter) or not isinstance(node.expression, exp.Where):
        return None
    # a volatile condition is evaluated once, by the FILTER: the CASE tests only its other conjuncts (it then
    # evaluates an argument for a few more rows, which the FILTER drops; a row PostgreSQL might evaluate it for)
    kept = [c for c in _conjuncts(node.expression.this) if not any(_volatile(n) for n in c.walk())]
    if not kept:
        return None
    condition = exp.and_(*(c.copy() for c in kept))
    for value in _arguments(node.this):
        value.replace(exp.Case(ifs=[exp.If(this=condition.copy(), true=value.copy())]))
    return None


def _conjuncts(condition: exp.Expr) -> list[exp.Expr]:
    condition = condition.unnest()
    if isinstance(condition, exp.And):
        return _conjuncts(condition.this) + _conjuncts(condition.expression)
    return [condition]


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
