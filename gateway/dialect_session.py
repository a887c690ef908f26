"""What drivers and BI tools ask of the session, answered on the DuckDB route as PostgreSQL's route answers it
(a rule of :mod:`lakegate.gateway.dialect`).

``current_setting('TimeZone')`` is the request's time zone (the one the statement computes in);
``current_schema()`` is ``public``, the schema a one-part table name means (:mod:`lakegate.gateway.catalog`);
DuckDB would answer its own (``main``, its ``TimeZone``). The other settings the guard lets a query read
(:data:`lakegate.gateway.functions.SHOWN_SETTINGS`) are the PostgreSQL source's: refused here with a 0A000
that says to ask ``SHOW`` or to put the call in a statement of its own (which PostgreSQL answers).
``pg_typeof(x)`` is the name PostgreSQL gives ``x``'s type (DuckDB's ``typeof`` named its own: ``decimal(20,6)``,
``varchar``); refused where the gateway cannot tell that type.
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


#: ``regtype``'s output (``format_type`` without a typmod) where it is not ``pg_type.typname``
_REGTYPE = {
    "int2": "smallint",
    "int4": "integer",
    "int8": "bigint",
    "float4": "real",
    "float8": "double precision",
    "varchar": "character varying",
    "bpchar": "character",
    "bool": "boolean",
    "timestamp": "timestamp without time zone",
    "timestamptz": "timestamp with time zone",
    "time": "time without time zone",
    "timetz": "time with time zone",
    "varbit": "bit varying",
}


def _value(node: exp.Expr, types: Typer) -> exp.Expr | None:
    if isinstance(node, exp.Anonymous) and node.name.lower() == "pg_typeof" and len(node.expressions) == 1:
        typ = types.of(node.expressions[0])
        if typ is None:
            raise refusal(node, f"{node.sql(dialect='postgres')} (the gateway cannot tell this value's type)")
        return exp.Literal.string(_REGTYPE.get(typ.name, typ.name) + "[]" * min(typ.dims, 1))
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
