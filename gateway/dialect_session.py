"""What drivers and BI tools ask of the session, answered on the DuckDB route as PostgreSQL's route answers it
(a rule of :mod:`lakegate.gateway.dialect`).

``current_setting('TimeZone')`` is the request's time zone (the one the statement computes in);
``current_schema()`` is ``public``, the schema a one-part table name means (:mod:`lakegate.gateway.catalog`);
DuckDB would answer its own (``main``, its ``TimeZone``). The other settings the guard lets a query read
(:data:`lakegate.gateway.functions.SHOWN_SETTINGS`) are the PostgreSQL source's: refused here with a 0A000
that says to ask ``SHOW`` or to put the call in a statement of its own (which PostgreSQL answers).
"""

from __future__ import annotations

from sqlglot import exp

from lakegate.gateway.catalog import DEFAULT_SCHEMA
from lakegate.gateway.dialect import Rule, refusal
from lakegate.gateway.guard import function_name
from lakegate.gateway.pgtyping import Typer


def _session(node: exp.Expr, types: Typer) -> exp.Expr | None:
    value = _value(node, types)
    if value is None:
        return None
    parent = node.parent
    if isinstance(parent, exp.Dot) and parent.expression is node:  # pg_catalog.current_setting(...)
        parent.replace(value)
        return None
    return value


def _value(node: exp.Expr, types: Typer) -> exp.Expr | None:
    if isinstance(node, exp.CurrentSchema):
        return exp.Literal.string(DEFAULT_SCHEMA)
    if not isinstance(node, exp.Func) or function_name(node) != "current_setting":
        return None
    name = node.expressions[0] if node.expressions else None
    if isinstance(name, exp.Literal) and name.is_string and name.this.lower() == "timezone":
        return exp.Literal.string(types.zone)
    raise refusal(
        node,
        f"{node.sql(dialect='postgres')} (the PostgreSQL source's setting; ask SHOW, or call it in a statement "
        "that reads no lake table)",
    )


RULES: list[Rule] = [_session]
