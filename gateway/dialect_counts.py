"""Functions DuckDB has no counterpart of, written in its terms (a rule of :mod:`lakegate.gateway.dialect`).

* ``num_nulls(a, b, ...)`` / ``num_nonnulls(...)``: a sum of ``CASE WHEN x IS NULL`` terms, an ``integer``;
  ``VARIADIC array`` (which counts the array's elements) is refused by name.
* ``array_positions(a, x)``: the 1-based subscripts of the elements ``IS NOT DISTINCT FROM x`` (NULL finds the
  NULLs), as ``int[]``; NULL for a NULL array; a multi-dimensional array is refused as PostgreSQL refuses it
  (``pg_array_positions``, :mod:`lakegate.connectors.duckdb.pgmacros`).
* ``scale(x)`` of a numeric whose display scale the type fixes (a ``numeric(p, s)`` column, exact arithmetic on
  such): that scale, NULL for NULL; a value whose scale varies per row (an unconstrained numeric, a quotient)
  keeps DuckDB's refusal.
"""

from __future__ import annotations

from sqlglot import exp

from lakegate.gateway.dialect import Rule, call, cast, refusal
from lakegate.gateway.pgtyping import Typer


def _counts(node: exp.Expr, types: Typer) -> exp.Expr | None:
    if not isinstance(node, exp.Anonymous) or node.name.lower() not in ("num_nulls", "num_nonnulls"):
        return None
    name = node.name.lower()
    args = list(node.expressions)
    if not args or any(isinstance(a, exp.Variadic) for a in args):
        raise refusal(node, f"{name}(VARIADIC array) (the lake route counts its arguments, not an array's elements)")
    null_value, other = (1, 0) if name == "num_nulls" else (0, 1)
    terms = [
        exp.Case(
            ifs=[exp.If(this=exp.Is(this=a.copy(), expression=exp.Null()), true=exp.Literal.number(null_value))],
            default=exp.Literal.number(other),
        )
        for a in args
    ]
    total: exp.Expr = terms[0]
    for term in terms[1:]:
        total = exp.Add(this=total, expression=term)
    return cast(exp.Paren(this=total), "INTEGER")


def _positions(node: exp.Expr, types: Typer) -> exp.Expr | None:
    if not isinstance(node, exp.Anonymous) or node.name.lower() != "array_positions" or len(node.expressions) != 2:
        return None
    array, value = node.expressions
    typ = types.of(array)
    if typ is None or typ.dims != 1:
        raise refusal(node, "array_positions() of an array whose dimensions the lake route cannot tell (or of several)")
    return call("pg_array_positions", array, value)


def _scale(node: exp.Expr, types: Typer) -> exp.Expr | None:
    if not isinstance(node, exp.Anonymous) or node.name.lower() != "scale" or len(node.expressions) != 1:
        return None
    value = node.expressions[0]
    typ = types.of(value)
    if typ is None or not typ.numeric or typ.dims or typ.loose_scale or typ.held_text or typ.scale is None:
        return None
    known = exp.If(this=exp.Is(this=value, expression=exp.Null()), true=exp.Null())
    return cast(exp.Case(ifs=[known], default=exp.Literal.number(typ.scale)), "INTEGER")


RULES: list[Rule] = [_counts, _positions, _scale]
