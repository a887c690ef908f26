"""Literals PostgreSQL writes in forms sqlglot reads alike (a rule of :mod:`lakegate.gateway.dialect`).

``x'1F'`` and ``b'101'`` are bit strings, refused (the lake route has no bit type; DuckDB would make them a blob
and an integer). ``0x1F`` and ``0b101``, integers from PostgreSQL 16 on, are numbers already
(:func:`lakegate.gateway.parse.numbers`). A cast to ``interval`` with a field restriction
(``::interval year``, ``INTERVAL HOUR``) is refused too: PostgreSQL truncates the value to those fields, which
DuckDB's cast ignores (``'3 years 4 months'::interval year`` answered 40 months).
"""

from __future__ import annotations

from sqlglot import exp

from lakegate.gateway.dialect import Rule, refusal
from lakegate.gateway.pgtyping import Typer


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


RULES: list[Rule] = [_literal]
