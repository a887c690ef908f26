"""Values of one result type made of decimals DuckDB cannot hold in one type (issue 28), as a rule of
:mod:`lakegate.gateway.dialect`: refused, since the answer would be silently wrong.

PostgreSQL's ``numeric`` has no precision limit, so ``greatest(numeric(38, 0), numeric(20, 6))``, a ``UNION`` of the
two, ``COALESCE``, ``CASE``, ``IN`` and array constructors keep every digit of both. DuckDB gives such values one
``DECIMAL(p, s)`` of at most 38 digits: when the integer digits of one operand and the fraction digits of another
need more, it keeps the integer digits and rounds the fractions away (``greatest(1::numeric(38,0),
1.5::numeric(20,6))`` answered 2). A comparison (``=``, ``<``) compares exactly and is left alone; ``IN (list)``
raised a numeric overflow.

Known shapes only: a column's ``numeric(p, s)``, an integer type, a number literal, a cast to
``decimal(p, s)``. An operand whose digits the gateway cannot tell (an expression, an unconstrained numeric) is
not judged.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

from sqlglot import exp

from lakegate.gateway.dialect import Rule, refusal
from lakegate.gateway.pgtyping import Typer

MAX_DIGITS = 38  #: DuckDB's widest decimal
_INTEGER_DIGITS = {"int2": 5, "int4": 10, "int8": 19}


def shape(node: exp.Expr, types: Typer) -> tuple[int, int] | None:
    """(precision, scale) of ``node`` as DuckDB types it, where the gateway knows it."""
    if isinstance(node, exp.Literal) and not node.is_string:
        try:
            value = Decimal(node.this)
        except InvalidOperation:
            return None
        if "e" in node.this.lower() or not value.is_finite():
            return None
        sign, digits, exponent = value.as_tuple()
        scale = max(0, -int(exponent))
        return max(len(digits), scale, 1), scale
    if isinstance(node, exp.Cast) and node.to.is_type(exp.DType.DECIMAL) and len(node.to.expressions) == 2:
        precision, scale = (int(e.this.name) for e in node.to.expressions)  # a rewrite's (or the user's) type
        return precision, scale
    typ = types.of(node)
    if typ is None or typ.dims:
        return None
    if typ.integer:
        return _INTEGER_DIGITS.get(typ.name, 19), 0
    if typ.numeric and not typ.loose_scale and typ.precision is not None and typ.scale is not None:
        return typ.precision, typ.scale
    return None


def check(node: exp.Expr, values: list[exp.Expr], types: Typer, what: str) -> None:
    operands = [v.unalias() for v in values]
    shapes = [s for s in (shape(v, types) for v in operands if not isinstance(v, exp.Null)) if s is not None]
    if len(shapes) < 2 or all(scale == 0 for _, scale in shapes):
        return
    whole = max(p - s for p, s in shapes)
    fraction = max(s for _, s in shapes)
    if whole + fraction > MAX_DIGITS:
        kinds = ", ".join(sorted({f"numeric({p}, {s})" for p, s in shapes}))
        raise refusal(
            node,
            f"{what} of {kinds}: their common type needs {whole + fraction} digits, more than DuckDB's "
            f"{MAX_DIGITS} (it would round the fractions away)",
        )


def _leaves(query: exp.Expr) -> list[exp.Select]:
    if isinstance(query, exp.SetOperation):
        return _leaves(query.left) + _leaves(query.right)
    if isinstance(query, exp.Subquery):
        return _leaves(query.this)
    return [query] if isinstance(query, exp.Select) else []


def _common_width(node: exp.Expr, types: Typer) -> exp.Expr | None:
    if isinstance(node, exp.Coalesce | exp.Greatest | exp.Least):
        check(node, [node.this, *node.expressions], types, node.key)
    elif isinstance(node, exp.Case):
        branches = [i.args["true"] for i in node.args.get("ifs") or []]
        default = node.args.get("default")
        check(node, branches + ([default] if isinstance(default, exp.Expr) else []), types, "CASE")
    elif isinstance(node, exp.Array):
        check(node, list(node.expressions), types, "ARRAY[...]")
    elif isinstance(node, exp.In):
        query = node.args.get("query")
        if query is not None:
            leaves = _leaves(query.this if isinstance(query, exp.Subquery) else query)
            items = [leaf.expressions[0] for leaf in leaves if leaf.expressions]
            check(node, [node.this, *items], types, "IN (SELECT ...)")
        else:  # DuckDB casts the operand to the list's common type: past 38 digits a numeric overflow
            check(node, [node.this, *node.expressions], types, "IN (...)")
    elif isinstance(node, exp.SetOperation):
        leaves = _leaves(node)
        width = min((len(leaf.expressions) for leaf in leaves), default=0)
        for i in range(width):
            check(node, [leaf.expressions[i] for leaf in leaves], types, node.key.upper())
    return None


RULES: list[Rule] = [_common_width]
