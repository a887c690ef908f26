"""Float functions on the lake route computed with PostgreSQL's own formulas, to the last bit.

PostgreSQL's ``degrees(x)`` is ``x / RADIANS_PER_DEGREE`` and ``radians(x)`` is ``x * RADIANS_PER_DEGREE``
(float.c, with ``RADIANS_PER_DEGREE = 0.0174532925199432957692``); DuckDB's multiply by ``180 / pi`` and
``pi / 180``, which rounds differently in the last digit (``degrees(1e300)``: 5.729577951308232e+301 in
PostgreSQL), found by the differential fuzzer.
"""

from __future__ import annotations

from sqlglot import exp

from lakegate.gateway.dialect import Rule
from lakegate.gateway.pgtyping import Typer

_RADIANS_PER_DEGREE = "0.0174532925199432957692"


def _per_degree() -> exp.Expr:
    return exp.Cast(this=exp.Literal.number(_RADIANS_PER_DEGREE), to=exp.DataType.build("DOUBLE"))


def _angles(node: exp.Expr, types: Typer) -> exp.Expr | None:
    if isinstance(node, exp.Degrees):
        return exp.Div(
            this=exp.Cast(this=node.this, to=exp.DataType.build("DOUBLE")), expression=_per_degree()
        )
    if isinstance(node, exp.Radians):
        return exp.Mul(
            this=exp.Cast(this=node.this, to=exp.DataType.build("DOUBLE")), expression=_per_degree()
        )
    return None


RULES: list[Rule] = [_angles]
