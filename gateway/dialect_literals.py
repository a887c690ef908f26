"""Literals PostgreSQL writes in forms sqlglot reads alike (a rule of :mod:`lakegate.gateway.dialect`).

``x'1F'`` and ``b'101'`` are bit strings, refused (the lake route has no bit type; DuckDB would make them a blob
and an integer). ``0x1F`` and ``0b101``, integers from PostgreSQL 16 on, are numbers already
(:func:`lakegate.gateway.parse.numbers`). A cast to ``interval`` with a field restriction
(``::interval year``, ``INTERVAL HOUR``) is refused too: PostgreSQL truncates the value to those fields, which
DuckDB's cast ignores (``'3 years 4 months'::interval year`` answered 40 months).

A string literal in a set operation's branch is of unknown type in PostgreSQL and takes the type of the other
branch's column (``SELECT '12:00' UNION SELECT time '13:00'`` is a time; ``SELECT 1 UNION SELECT 'x'`` raises
22P02), where DuckDB makes the column VARCHAR: the literal is cast to that type, for the types whose literal
DuckDB reads as PostgreSQL does (:data:`_SET_TYPES`; others keep DuckDB's reading).
"""

from __future__ import annotations

from sqlglot import exp

from lakegate.gateway.dialect import Rule, cast, refusal
from lakegate.gateway.pgtyping import Typer

#: PostgreSQL type -> DuckDB's, for a literal cast in a set operation
_SET_TYPES = {
    "int2": "SMALLINT",
    "int4": "INTEGER",
    "int8": "BIGINT",
    "float4": "REAL",
    "float8": "DOUBLE",
    "bool": "BOOLEAN",
    "date": "DATE",
    "time": "TIME",
    "timestamp": "TIMESTAMP",
    "uuid": "UUID",
}


def _literal(node: exp.Expr, types: Typer) -> exp.Expr | None:
    if isinstance(node, exp.HexString | exp.BitString):
        prefix = "X" if isinstance(node, exp.HexString) else "B"
        raise refusal(node, f"the bit string literal {prefix}'{node.this}' (the lake route has no bit type)")
    if isinstance(node, exp.Cast) and isinstance(node.to, exp.DataType):
        kind = node.to.this  # INTERVAL YEAR: an Interval in place of the type's name
        unit = kind.args.get("unit") if isinstance(kind, exp.Interval) else None
        if unit is not None:
            raise refusal(
                node,
                f"a cast to interval {unit.sql(dialect='postgres')} (PostgreSQL keeps only those fields of the value)",
            )
    return None


def _set_literals(node: exp.Expr, types: Typer) -> exp.Expr | None:
    if not isinstance(node, exp.SetOperation):
        return None
    columns = types.projections(node)
    if columns is None:
        return None
    for branch in (node.this, node.expression):
        while isinstance(branch, exp.Subquery):
            branch = branch.this
        if not isinstance(branch, exp.Select) or branch.is_star or len(branch.expressions) != len(columns):
            continue
        for item, (_, typ) in zip(branch.expressions, columns, strict=True):
            value = item.this if isinstance(item, exp.Alias) else item
            target = _SET_TYPES.get(typ.name) if typ is not None and not typ.dims else None
            if target is not None and isinstance(value, exp.Literal) and value.is_string:
                typed = cast(value.copy(), target)
                types.note(typed, typ)
                value.replace(typed)
    return None


RULES: list[Rule] = [_literal, _set_literals]
